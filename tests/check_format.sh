#!/usr/bin/env bash
# tests/check_format.sh — every C++ and CUDA file the repository tracks is as clang-format (the
# repository's .clang-format) writes it. Prints the files that differ and how to fix them; exit 1 then.
# Exit 77 (a skip) when clang-format is not installed.
set -uo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format not found: skipped (apt-get install clang-format)"; exit 77; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' 2>/dev/null || find sim report cuda lessons cli viz tests python lab -name '*.[ch]pp' -o -name '*.cu' -o -name '*.cuh')
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "format: ${#bad[@]} of ${#files[@]} files differ from what clang-format writes:"
  printf '  %s\n' "${bad[@]}"
  echo "fix: clang-format -i ${bad[*]}"
  exit 1
fi
echo "format: ${#files[@]} files, each as clang-format writes it ($(clang-format --version | head -1))"
