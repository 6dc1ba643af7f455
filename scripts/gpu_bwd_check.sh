#!/usr/bin/env bash
# scripts/gpu_bwd_check.sh — flash2h's backward (cuda/flash2h_bwd.cu) on the lent GPU in one call:
# a smoke run, the GPU tests, the bench (flash2h, flash2, standard; backward) with the SDPA
# anchors, then compute-sanitizer memcheck and racecheck of flash2h backward at N = 130.
# Run from a folder holding this script, scripts/anchor_sdpa.py's copy and bin/ (flashsim-bench,
# test_cuda_gpu, libtomlplusplus.so.3):  BIN=bin bash gpu_bwd_check.sh
# Env: STAGES (default "smoke tests bench anchor sanitize"), SEQS (flash2h, flash2, standard),
# SEQS_LONG (flash2h alone), SCHEDULES (flash2h's FLASHSIM_FLASH2H_BWD_SCHEDULE values timed
# beside the default, e.g. "plain pipelined"), DIMS, REPEATS, SAN_TIMEOUT.
# Writes under $OUT: bwd_session.log, tests.log, bench.json, sanitizer.log.
set -u
OUT=${OUT:-/tmp/flashsim_out}
mkdir -p "$OUT"
BIN=${BIN:-bin}
STAGES=${STAGES:-"smoke tests bench anchor sanitize"}
SEQS=${SEQS:-4096,8192,16384}
DIMS=${DIMS:-64,128}
REPEATS=${REPEATS:-10}
exec > >(tee -a "$OUT/bwd_session.log") 2>&1
has() { [[ " $STAGES " == *" $1 "* ]]; }
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
ok=1
if has smoke; then
  stamp smoke
  for d in 64 128; do
    timeout 30 "$BIN/flashsim-bench" bench --variant flash2h --pass backward --seq 1000 --head-dim $d --batch 2 --heads 2 --repeats 2 --warmup 1
    rc=$?; echo "smoke d=$d rc=$rc"; [ $rc = 124 ] && ok=0
  done
fi
if [ $ok = 0 ]; then echo "smoke run hung: skipping the rest"; exit 3; fi
if has tests; then
  stamp tests
  timeout "${TEST_TIMEOUT:-200}" "$BIN/test_cuda_gpu" ${TEST_ARGS:-} > "$OUT/tests.log" 2>&1
  echo "test_cuda_gpu rc=$?" | tee -a "$OUT/tests.log"
  grep -E "^\[doctest\] (test cases|assertions)|ERROR|CHECK\(" "$OUT/tests.log" | head -40
fi
if has bench; then
  # flash2h (default schedule) beside flash2 and standard at SEQS; flash2h alone at SEQS_LONG;
  # then flash2h in each of SCHEDULES and, at N = 8192, deterministic; rows tagged with both
  stamp bench
  rm -f "$OUT/bench.json" "$OUT"/part_*.json
  k=0
  part() {  # part TAG-SCHEDULE TAG-MODE ENV... -- BENCH-ARGS...
    local sch=$1 mode=$2; shift 2
    local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
    k=$((k + 1))
    env "${envs[@]}" timeout "${BENCH_TIMEOUT:-150}" "$BIN/flashsim-bench" bench --pass backward --repeats "$REPEATS" \
      --json "$OUT/part_${k}_${sch}_${mode}.json" "$@"
    echo "bench part $k ($sch $mode $*) rc=$?"
  }
  for m in none causal; do
    flag=""; [ $m = causal ] && flag="--causal"
    part default atomic X=1 -- --variant flash2h,flash2,standard --seq "$SEQS" --head-dim "$DIMS" $flag
    [ -n "${SEQS_LONG:-}" ] && part default atomic X=1 -- --variant flash2h --seq "$SEQS_LONG" --head-dim "$DIMS" $flag
    for sch in ${SCHEDULES:-}; do
      part "$sch" atomic FLASHSIM_FLASH2H_BWD_SCHEDULE=$sch -- --variant flash2h --seq "$SEQS${SEQS_LONG:+,$SEQS_LONG}" --head-dim "$DIMS" $flag
    done
  done
  for sch in default ${SCHEDULES:-}; do
    part "$sch" deterministic FLASHSIM_FLASH2H_BWD=deterministic FLASHSIM_FLASH2H_BWD_SCHEDULE=$sch -- --variant flash2h --seq 8192 --head-dim "$DIMS"
  done
  python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]; doc = None
for p in sorted(glob.glob(os.path.join(out, "part_*.json")), key=lambda x: int(os.path.basename(x).split("_")[1])):
    _, _, sch, mode = os.path.basename(p)[:-5].split("_")
    try: d = json.load(open(p))
    except Exception as e: print("skip", p, e); continue
    for r in d["rows"]:
        if r["variant"] == "flash2h":
            r["flash2h_bwd_schedule"] = sch
            r["flash2h_bwd_mode"] = mode
    if doc is None: doc = d
    else: doc["rows"] += d["rows"]
    os.remove(p)
if doc: json.dump(doc, open(os.path.join(out, "bench.json"), "w"), indent=1); print("bench rows:", len(doc["rows"]))
PY
fi
if has anchor && [ -f "$OUT/bench.json" ]; then
  stamp anchor
  PYTHONUNBUFFERED=1 timeout "${ANCHOR_TIMEOUT:-150}" python3 anchor_sdpa.py --bench "$OUT/bench.json" --out "$OUT/bench_anchored.json" --repeats "$REPEATS"
  echo "anchor rc=$?"
  [ -s "$OUT/bench_anchored.json" ] && mv "$OUT/bench_anchored.json" "$OUT/bench.json"
fi
if has sanitize; then
  stamp sanitize
  SAN="$OUT/sanitizer.log"; : > "$SAN"
  for tool in memcheck racecheck; do
   for sch in default ${SCHEDULES:-}; do
    for d in 64 128; do
      for m in none --causal; do
        [ "$m" = none ] && m=""
        echo "--- $tool flash2h backward schedule=$sch d=$d $m" >> "$SAN"
        FLASHSIM_FLASH2H_BWD_SCHEDULE=$sch timeout "${SAN_TIMEOUT:-45}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN/flashsim-bench" bench --variant flash2h \
          --pass backward --seq 130 --head-dim "$d" --batch 1 --heads 2 $m --repeats 1 --warmup 0 --no-check >> "$SAN" 2>&1
        echo "rc=$?" >> "$SAN"
      done
    done
   done
  done
  grep -c "^rc=0" "$SAN" | sed 's/^/sanitizer runs clean: /'
  grep -B1 "^rc=[^0]" "$SAN" | head -20
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$SAN" | sort | uniq -c
fi
stamp done
