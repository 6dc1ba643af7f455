#!/usr/bin/env bash
# tests/cli/readme_tables.sh FLASHSIM SOURCE_DIR — README's measured tables are the scripts' output today:
#  1. a ring results file's simulator column is this checkout's model (a copy resimulated equals it);
#  2. every table README.md says is printed by a script appears in README.md line for line, so a
#     re-recorded row or a changed model shows up here instead of in a stale README;
#  3. cuda/results/h200.md, which README.md links, is table.py's rendering of h200.json today.
set -euo pipefail
bin=$1 src=$2
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
r=$src/cuda/results
cp "$r/h200_ring.json" "$tmp/"
(cd "$src" && "$bin" bench --resimulate "$tmp/h200_ring.json" --json "$tmp/h200_ring.json" 2>/dev/null)
python3 - "$r/h200_ring.json" "$tmp/h200_ring.json" <<'PY'
import json, sys
old, new = (json.load(open(p))["rows"] for p in sys.argv[1:3])
def differs(a, b, k):
    x, y = a.get("sim_ring", {}).get(k) or 0.0, b.get("sim_ring", {}).get(k) or 0.0
    return abs(x - y) > 1e-3 * max(abs(y), 1e-9)
bad = [i + 1 for i, (a, b) in enumerate(zip(old, new)) if any(differs(a, b, k) for k in ("forward_ms", "backward_ms"))]
if bad:
    sys.exit(f"cuda/results/h200_ring.json rows {bad}: the simulator's ring is not this model's; run "
             "`flashsim bench --resimulate cuda/results/h200_ring.json --json cuda/results/h200_ring.json` and paste `table.py --ring` into README.md")
PY
check() {  # check NAME COMMAND...: the command's non-empty lines appear in README.md, in order, as one block
  local name=$1; shift
  (cd "$src" && "$@") > "$tmp/out.md"
  python3 - "$src/README.md" "$tmp/out.md" "$name" <<'PY'
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
sys.exit(f"README.md does not hold `{sys.argv[3]}` as the script prints it today"
         + (f"; first line missing: {first[:160]}" if first else " (lines out of order)"))
PY
}
check "table.py --summary" python3 cuda/results/table.py --summary cuda/results/h200.json
check "table.py --ring" python3 cuda/results/table.py --ring cuda/results/h200_ring.json
check "table.py --decode" python3 cuda/results/table.py --decode cuda/results/h200_decode.json
check "table.py --decode-fixed" python3 cuda/results/table.py --decode-fixed cuda/results/h200_decode.json
check "table.py --decode-trace" python3 cuda/results/table.py --decode-trace cuda/results/h200_decode.json
check "table.py --ceilings" python3 cuda/results/table.py --ceilings cuda/results/h200_ceilings.json
check "eager.py" python3 cuda/results/eager.py cuda/results/h100_eager_authors.json
check "study.py" python3 cuda/results/study.py cuda/results/h200_study.json
check "study.py --scale" python3 cuda/results/study.py --scale cuda/results/h200_scale.json
(cd "$src" && python3 cuda/results/table.py cuda/results/h200.json) > "$tmp/h200.md"
cmp -s "$tmp/h200.md" "$r/h200.md" || {
  echo "cuda/results/h200.md (linked from README.md) is not table.py's output today:" \
       "python3 cuda/results/table.py cuda/results/h200.json > cuda/results/h200.md" >&2; exit 1; }
echo "README's tables are the scripts' output"
