#!/usr/bin/env bash
# tests/cli/readme_tables.sh FLASHSIM SOURCE_DIR — the measured tables in README.md and docs/results.md
# are the scripts' output today:
#  1. a ring results file's simulator column is this checkout's model (a copy resimulated equals it);
#  2. every table README.md or docs/results.md says is printed by a script appears there line for
#     line, so a re-recorded row or a changed model shows up here instead of in a stale page;
#  3. results/h200/bench.md, which both link, is table.py's rendering of h200/bench.json today.
set -euo pipefail
bin=$1 src=$2
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
r=$src/results
cp "$r/h200/ring.json" "$tmp/ring.json"
(cd "$src" && "$bin" bench --resimulate "$tmp/ring.json" --json "$tmp/ring.json" 2>/dev/null)
python3 - "$r/h200/ring.json" "$tmp/ring.json" <<'PY'
import json, sys
old, new = (json.load(open(p))["rows"] for p in sys.argv[1:3])
def differs(a, b, k):
    x, y = a.get("sim_ring", {}).get(k) or 0.0, b.get("sim_ring", {}).get(k) or 0.0
    return abs(x - y) > 1e-3 * max(abs(y), 1e-9)
bad = [i + 1 for i, (a, b) in enumerate(zip(old, new)) if any(differs(a, b, k) for k in ("forward_ms", "backward_ms"))]
if bad:
    sys.exit(f"results/h200/ring.json rows {bad}: the simulator's ring is not this model's; run "
             "`flashsim bench --resimulate results/h200/ring.json --json results/h200/ring.json` and paste `table.py --ring` into docs/results.md")
PY
check() {  # check PAGE NAME COMMAND...: the command's non-empty lines appear in PAGE, in order, as one block
  local page=$1 name=$2; shift 2
  (cd "$src" && "$@") > "$tmp/out.md"
  python3 - "$src/$page" "$tmp/out.md" "$name" <<'PY'
import sys
readme = open(sys.argv[1]).read().split("\n")
want = [l for l in open(sys.argv[2]).read().split("\n") if l.strip()]
if not want:
    sys.exit(f"{sys.argv[3]}: the script printed nothing")
starts = [i for i, l in enumerate(readme) if l == want[0]]
for i in starts:
    got = [l for l in readme[i:i + 3 * len(want)] if l.strip()][:len(want)]
    if got == want:
        sys.exit(0)
first = next((w for w in want if w not in readme), None)
sys.exit(f"{sys.argv[1]} does not hold `{sys.argv[3]}` as the script prints it today"
         + (f"; first line missing: {first[:160]}" if first else " (lines out of order)"))
PY
}
# README.md shows the head of the summary (the forward rows) with the command README gives for it
check README.md "table.py --summary | awk 'NR <= 7'" \
  bash -c 'python3 tools/results/table.py --summary results/h200/bench.json | awk "NR <= 7"'
check docs/results.md "table.py --summary" python3 tools/results/table.py --summary results/h200/bench.json
check docs/results.md "table.py --summary (H100)" python3 tools/results/table.py --summary results/h100/bench.json
check docs/results.md "table.py --ring" python3 tools/results/table.py --ring results/h200/ring.json
check docs/results.md "table.py --decode" python3 tools/results/table.py --decode results/h200/decode.json
check docs/results.md "table.py --decode-fixed" python3 tools/results/table.py --decode-fixed results/h200/decode.json
check docs/results.md "table.py --decode-trace" python3 tools/results/table.py --decode-trace results/h200/decode.json
check docs/results.md "table.py --ceilings" python3 tools/results/table.py --ceilings results/h200/ceilings.json
check docs/results.md "eager.py" python3 tools/results/eager.py results/h100/eager_authors.json
check docs/results.md "study.py" python3 tools/results/study.py results/h200/study.json
check docs/results.md "study.py --scale" python3 tools/results/study.py --scale results/h200/scale.json
(cd "$src" && python3 tools/results/table.py results/h200/bench.json) > "$tmp/h200.md"
cmp -s "$tmp/h200.md" "$r/h200/bench.md" || {
  echo "results/h200/bench.md (linked from README.md and docs/results.md) is not table.py's output today:" \
       "python3 tools/results/table.py results/h200/bench.json > results/h200/bench.md" >&2; exit 1; }
(cd "$src" && python3 tools/results/table.py results/h100/bench.json) > "$tmp/h100.md"
cmp -s "$tmp/h100.md" "$r/h100/bench.md" || {
  echo "results/h100/bench.md is not table.py's output today:" \
       "python3 tools/results/table.py results/h100/bench.json > results/h100/bench.md" >&2; exit 1; }
echo "the tables in README.md and docs/results.md are the scripts' output"
