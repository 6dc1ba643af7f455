#!/usr/bin/env bash
# tools/offgrid/measure.sh — measure the off-grid shape set (tools/offgrid/choose.py's output) on this
# GPU with `flashsim bench`: one bench call a shape (its batch, heads, N, d and mask), every kernel
# of the set, both passes. The rows, each with the kernel model's prediction beside the measured
# median, go to one JSON file that also records the selection (seed, rule, shapes) it measured.
#
#   bash tools/offgrid/measure.sh SHAPES.json OUT.json   (BIN=build-cuda/bin, REPEATS=20)
# scripts/gpu_session.sh's stage `offgrid` runs it; tools/offgrid/check.py reads OUT.json.
set -u
SHAPES=${1:?usage: measure.sh SHAPES.json OUT.json}
OUTFILE=${2:?usage: measure.sh SHAPES.json OUT.json}
BIN=${BIN:-build-cuda/bin}
REPEATS=${REPEATS:-20}
[ -r "$SHAPES" ] || { echo "measure.sh: cannot read the shape set $SHAPES (make one with tools/offgrid/choose.py)"; exit 2; }
TMP=$(mktemp -d)
# one line a shape: batch heads seq head_dim causal(0/1); kernels and passes as the rule lists them
python3 - "$SHAPES" > "$TMP/lines" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["shapes"]:
    print(s["batch"], s["heads"], s["seq"], s["head_dim"], int(s["causal"]),
          ",".join(d["rule"]["kernels"]), ",".join(d["rule"]["passes"]))
PY
k=0
while read -r b h n dd c kernels passes; do
  flag=""; [ "$c" = 1 ] && flag="--causal"
  echo "--- offgrid shape $k: B=$b H=$h N=$n d=$dd causal=$c"
  timeout "${OFFGRID_TIMEOUT:-240}" "$BIN/flashsim-bench" bench --variant "$kernels" --seq "$n" --head-dim "$dd" \
    --batch "$b" --heads "$h" --pass "$passes" $flag --repeats "$REPEATS" --json "$TMP/shape_$k.json"
  echo "offgrid shape $k rc=$?"
  k=$((k + 1))
done < "$TMP/lines"
python3 - "$SHAPES" "$OUTFILE" "$TMP"/shape_*.json <<'PY'
import json, sys
sel = json.load(open(sys.argv[1]))
doc = None
for f in sys.argv[3:]:
    try:
        d = json.load(open(f))
    except Exception as e:
        print("offgrid: skip", f, e)
        continue
    if doc is None:
        doc = d
    else:
        doc["rows"] += d["rows"]
if doc is None:
    sys.exit("offgrid: no shape was measured")
doc["selection"] = sel
json.dump(doc, open(sys.argv[2], "w"), indent=1)
print(f"offgrid: {len(doc['rows'])} rows of {len(sel['shapes'])} shapes in {sys.argv[2]}")
PY
rm -rf "$TMP"
