#!/usr/bin/env bash
# tests/check_function_length.sh: functions a reader cannot hold in mind (DESIGN.md, "Build").
# Lists the ten longest functions over the project's parts (ctags: each function's first and last
# line) and fails if a kernel (__global__) is past 300 lines or any other function past 200.
# FLASHSIM_LENGTH_WARN_ONLY=1 prints the offenders but exits 0 (while the long ones are being cut).
set -uo pipefail
cd "$(dirname "$0")/.."
command -v ctags >/dev/null || { echo "check_function_length: ctags not found; install universal-ctags" >&2; exit 2; }
KERNEL_MAX=300 HOST_MAX=200
files=$(git ls-files sim report cuda lessons cli viz python lab 2>/dev/null |
  grep -E '\.(c|cc|cpp|h|hpp|cu|cuh|py)$' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
[ -n "$files" ] || { echo "check_function_length: no source files found (run from a git checkout)" >&2; exit 2; }
# One row a function: lines, kind (kernel or function), file:line, name. A kernel is a function
# whose declaration (its name's line and the three before it: templates and attributes) says __global__.
globals=$(echo "$files" | xargs grep -n '__global__' 2>/dev/null | cut -d: -f1,2)
rows=$( {
  echo "$globals" | sed 's/^/G\t/'
  echo "$files" | xargs ctags --fields=+ne -o - --langmap=C++:+.cu.cuh --kinds-C++=f --kinds-C=f \
    --kinds-Python=fm 2>/dev/null
} | awk -F'\t' '
    $1 == "G" { g[$2] = 1; next }
    { l = 0; e = 0
      for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) l = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) }
      if (e == 0 || seen[$2 ":" l]++) next
      kind = "function"
      for (k = l - 3; k <= l; k++) if (($2 ":" k) in g) kind = "kernel"
      printf "%d\t%s\t%s:%s\t%s\n", e - l + 1, kind, $2, l, $1 }' | sort -t$'\t' -k1,1nr)
echo "The ten longest functions (limits: kernel $KERNEL_MAX lines, other $HOST_MAX):"
echo "$rows" | head -n 10 | awk -F'\t' '{ printf "  %5d  %-8s %s %s\n", $1, $2, $3, $4 }'
over=$(echo "$rows" | awk -F'\t' -v k="$KERNEL_MAX" -v h="$HOST_MAX" \
  '($2 == "kernel" && $1 > k) || ($2 != "kernel" && $1 > h) { printf "  %5d  %-8s %s %s\n", $1, $2, $3, $4 }')
if [ -z "$over" ]; then
  echo "check_function_length: every function within its limit"
  exit 0
fi
echo "Past the limit ($(echo "$over" | wc -l)):"
echo "$over"
if [ "${FLASHSIM_LENGTH_WARN_ONLY:-0}" = 1 ]; then
  echo "check_function_length: FLASHSIM_LENGTH_WARN_ONLY=1, reporting only"
  exit 0
fi
echo "check_function_length: cut these at their natural seams (DESIGN.md, \"Build\")" >&2
exit 1
