#!/usr/bin/env bash
# scripts/gpu_bwd_schedules.sh — every FLASHSIM_FLASH2H_BWD_SCHEDULE value of flash2h's backward,
# side by side on one GPU in one call: the bench (flash2h backward, SEQS x DIMS, causal and not)
# once per schedule, rows tagged with it (merged into bench.json after each part), then the
# flash2h GPU tests (doctest filter).
# Run from a folder holding this script and bin/ (flashsim-bench, test_cuda_gpu, libtomlplusplus.so.3):
#   BIN=bin bash gpu_bwd_schedules.sh
# Env: SCHEDULES (default "plain pipelined bulk bulk-pipelined bulk-keys"), SEQS, DIMS, REPEATS,
# TEST_TIMEOUT, BENCH_TIMEOUT, SMOKE (0: skip the smoke runs). Writes under $OUT: schedules.log, tests.log, bench.json.
set -u
OUT=${OUT:-/tmp/flashsim_out}
mkdir -p "$OUT"
BIN=${BIN:-bin}
SCHEDULES=${SCHEDULES:-"plain pipelined bulk bulk-pipelined bulk-keys"}
SEQS=${SEQS:-4096,8192}
DIMS=${DIMS:-64,128}
REPEATS=${REPEATS:-10}
exec > >(tee -a "$OUT/schedules.log") 2>&1
stamp() { echo "=== $(date -u +%H:%M:%S) $*"; }
export LD_LIBRARY_PATH="$PWD/$BIN:${LD_LIBRARY_PATH:-}"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:$LD_LIBRARY_PATH"
done
if ldd "$BIN/flashsim-bench" | grep -q "libcupti.so.13 => not found"; then
  c=$(find / -name "libcupti.so.13" -not -path "*/proc/*" 2>/dev/null | head -1)
  [ -n "$c" ] && export LD_LIBRARY_PATH="$(dirname "$c"):$LD_LIBRARY_PATH"
fi
if ! ldd "$BIN/flashsim-bench" | grep -q "libcublas.so.13 => /"; then
  pyl=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' 2>/dev/null)
  pyr=$(python3 -c 'import nvidia.cuda_runtime, os; print(os.path.join(os.path.dirname(nvidia.cuda_runtime.__file__), "lib"))' 2>/dev/null)
  export LD_LIBRARY_PATH="$pyl:$pyr:$LD_LIBRARY_PATH"
fi
stamp start
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
merge() {  # part_*.json (tagged with their schedule) into bench.json, now, so a cut run keeps them
  python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]; path = os.path.join(out, "bench.json")
doc = json.load(open(path)) if os.path.exists(path) else None
for p in sorted(glob.glob(os.path.join(out, "part_*.json")), key=lambda x: int(os.path.basename(x).split("_")[1])):
    sch = os.path.basename(p)[:-5].split("_", 2)[2]
    try: d = json.load(open(p))
    except Exception as e: print("skip", p, e); os.remove(p); continue
    for r in d["rows"]:
        r["flash2h_bwd_schedule"] = sch
        keys = [k for k in ("seq", "head_dim", "causal", "ms_median", "tflops", "ok") if k in r]
        print(sch, {k: r[k] for k in keys})
    if doc is None: doc = d
    else: doc["rows"] += d["rows"]
    os.remove(p)
if doc: json.dump(doc, open(path, "w"), indent=1)
PY
}
if [ "${SMOKE:-1}" = 1 ]; then
  stamp smoke
  for sch in $SCHEDULES; do
    for d in 64 128; do
      FLASHSIM_FLASH2H_BWD_SCHEDULE=$sch timeout 20 "$BIN/flashsim-bench" bench --variant flash2h --pass backward --seq 1000 \
        --head-dim $d --batch 2 --heads 2 --repeats 2 --warmup 1 > /dev/null 2>&1
      echo "smoke $sch d=$d rc=$?"
    done
  done
fi
stamp bench
rm -f "$OUT/bench.json" "$OUT"/part_*.json
k=0
for m in none causal; do
  flag=""; [ $m = causal ] && flag="--causal"
  for sch in $SCHEDULES; do
    k=$((k + 1))
    FLASHSIM_FLASH2H_BWD_SCHEDULE=$sch timeout "${BENCH_TIMEOUT:-40}" "$BIN/flashsim-bench" bench --variant flash2h \
      --pass backward --seq "$SEQS" --head-dim "$DIMS" --repeats "$REPEATS" $flag --json "$OUT/part_${k}_${sch}.json" > /dev/null
    echo "bench part $k ($sch $m) rc=$?"
    merge
  done
done
stamp tests
timeout "${TEST_TIMEOUT:-250}" "$BIN/test_cuda_gpu" -tc='*flash2h*' > "$OUT/tests.log" 2>&1
echo "test_cuda_gpu rc=$?" | tee -a "$OUT/tests.log"
grep -E "^\[doctest\] (test cases|assertions)|ERROR|CHECK\(|schedule :=" "$OUT/tests.log" | head -40
stamp done
