#!/usr/bin/env bash
# tests/cli/predicted_band.sh FLASHSIM SOURCE_DIR — the kernel model against every recorded grid row of
# each card (results/h200/bench.json, results/h100/bench.json, each with its card's measured ceilings):
# recompute the predictions of a copy of the file (flashsim bench --resimulate), then
#  1. every row the model is certain of lies within ±15% of its measured time, or is a miss listed
#     in the card's known_misses.txt (predicted.py --check --known), every uncertain row printed with
#     the model's reason;
#  2. the predictions committed in the file are the ones this model gives (so the tables printed
#     from it, and the app's Measured view, which draws them, are the model's), within 0.1%.
set -euo pipefail
bin=$1 src=$2
command -v python3 >/dev/null || { echo "SKIP: python3 not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for card in h200 h100; do
mkdir -p "$tmp/$card"
cp "$src/results/$card/bench.json" "$tmp/$card/"
[ -f "$src/results/$card/counters_probe.json" ] && cp "$src/results/$card/counters_probe.json" "$tmp/$card/"
(cd "$src" && "$bin" bench --resimulate "$tmp/$card/bench.json" --json "$tmp/$card/bench.json" 2>/dev/null)
python3 "$src/tools/results/predicted.py" --check 0.15 --known "$src/results/$card/known_misses.txt" \
    "$tmp/$card/bench.json" >/dev/null
python3 - "$src/results/$card/bench.json" "$tmp/$card/bench.json" <<'PY'
import json, sys
old = [r for r in json.load(open(sys.argv[1]))["rows"] if "ms_median" in r]
new = [r for r in json.load(open(sys.argv[2]))["rows"] if "ms_median" in r]
stale = [(a, b) for a, b in zip(old, new)
         if a.get("predicted_ms") is None or abs(a["predicted_ms"] - b["predicted_ms"]) > 1e-3 * b["predicted_ms"]]
for a, b in stale[:5]:
    print(f"stale prediction: {a['variant']} {a['pass']} N={a['seq']} d={a['head_dim']}: recorded "
          f"{a.get('predicted_ms')}, model now {b['predicted_ms']:.4f} ms", file=sys.stderr)
if stale:
    print(f"{len(stale)} recorded prediction(s) differ from the model: run `flashsim bench --resimulate "
          f"{sys.argv[1]} --json {sys.argv[1]}` and commit it", file=sys.stderr)
    sys.exit(1)
print(f"{sys.argv[1]}: {len(new)} rows: recorded predictions agree with the model")
PY
done
# 3. each kernel profile (sim/kernel_model.cpp, plain data: sim/ cannot include cuda/) has the tiles,
#    threads and shared memory that the kernel's TileConfig recorded in its newest rows
python3 - "$bin" "$src/results/h200/bench.json" <<'PY'
import json, subprocess, sys
bin_, path = sys.argv[1], sys.argv[2]
rows = [r for r in json.load(open(path))["rows"] if "ms_median" in r and r["pass"] in ("forward", "backward")
        and "+" not in r["variant"] and "block order" not in r["tiles"].get("layout", "")]
newest = {}
for r in rows:
    k = (r["variant"], r["pass"], r["head_dim"])
    if k not in newest or r["run"]["date"] > newest[k]["run"]["date"]:
        newest[k] = r
bad = 0
for (v, p, d), r in sorted(newest.items()):
    out = subprocess.run([bin_, "simulate", "--kernel", v, "--pass", p, "--seq", "256", "--head-dim", str(d),
                          "--l2", "off", "--json"], capture_output=True, text=True, check=True)
    prof = json.loads(out.stdout)["kernel_model"][0]["profile"]
    t = r["tiles"]
    for field in ("block_rows", "block_cols", "threads", "smem_bytes"):
        if t.get(field, 0) and t[field] != prof[field]:
            print(f"profile {v} {p} d={d}: {field} {prof[field]}, the kernel recorded {t[field]} "
                  f"(run {r['run']['git_commit']})", file=sys.stderr)
            bad += 1
print(f"{len(newest)} kernel profiles checked against their recorded TileConfigs: {bad} mismatch(es)")
sys.exit(1 if bad else 0)
PY
# 4. flash2h forward's grid rule in its profile (the static order, under the causal mask up to a T_r)
#    is the one the kernel ran each recorded row with: its layout names a persistent grid's units
#    taken "in turn" exactly where the model walks the static order
python3 - "$bin" "$src/results/h200/bench.json" <<'PY'
import json, subprocess, sys
bin_, path = sys.argv[1], sys.argv[2]
rows = [r for r in json.load(open(path))["rows"] if r["variant"] == "flash2h" and r["pass"] == "forward"
        and "ms_median" in r]
bad, seen = 0, set()
for r in rows:
    key = (r["seq"], r["head_dim"], r["causal"])
    if key in seen:
        continue
    seen.add(key)
    args = [bin_, "simulate", "--kernel", "flash2h", "--pass", "forward", "--seq", str(r["seq"]), "--head-dim",
            str(r["head_dim"]), "--batch", "1", "--heads", "1", "--l2", "off", "--json"]
    if r["causal"]:
        args.append("--causal")
    model = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)["kernel_model"][0]["grid"]
    lay = r["tiles"].get("layout", "")  # the counter's units start in the static order's order: walked as it
    ran = "static" if ", in turn)" in lay or "the next from a counter)" in lay else "launch"
    if model != ran:
        print(f"flash2h forward N={r['seq']} d={r['head_dim']} causal={r['causal']}: the model's grid is {model}, "
              f"the kernel ran {ran} (run {r['run']['git_commit']})", file=sys.stderr)
        bad += 1
print(f"{len(seen)} flash2h forward shapes: the profile's grid rule against the recorded layouts, {bad} mismatch(es)")
sys.exit(1 if bad else 0)
PY
# 5. DRAM bytes: every row's counters within ±10% of the walk as the counters see it (the model's walk
#    of this copy, less its dirty lines left in L2 at the end, plus the counters probes' residue), but
#    the rows listed in results/h200/known_dram_misses.txt, each of which must still be outside
python3 - "$src/results/h200/known_dram_misses.txt" "$tmp/h200/bench.json" <<'PY'
import json, sys
known = set()
for ln in open(sys.argv[1]):
    if ln.strip() and not ln.startswith("#"):
        known.add(ln.split(":")[0].strip())
checked, bad = 0, 0
for r in json.load(open(sys.argv[2]))["rows"]:
    x = r.get("dram_over_counters_view")
    if x is None:
        continue
    checked += 1
    key = (f"{r['variant']} {r['pass']} {r['seq']} {r['head_dim']} {'causal' if r['causal'] else 'none'}"
           + (f" {r['mode']}" if r.get("mode") else ""))
    if (abs(x - 1) > 0.10) != (key in known):
        bad += 1
        print(f"DRAM {key}: counters / the counters' view of the walk {x:.3f}, "
              f"{'listed as a miss but inside' if key in known else 'outside ±10% and not listed'}", file=sys.stderr)
if checked == 0:
    print("no row has the counters' view of the walk: is h200/counters_probe.json beside h200/bench.json?", file=sys.stderr)
    sys.exit(1)
print(f"{checked} rows: DRAM counters against the counters' view of the walk, {bad} unexpected")
sys.exit(1 if bad else 0)
PY
