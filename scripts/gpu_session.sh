#!/usr/bin/env bash
# scripts/gpu_session.sh — everything flashsim does on the lent GPU, in one script.
#
# Build here first with scripts/gpu_build.sh (the `cuda` preset into build-cuda/), then run from the
# repo root on the device machine with the binaries carried along:
#   device run, carry ["build-cuda/bin"], command:
#     FLASHSIM_GIT_COMMIT=<sha> STAGES="info tests sanitize bench ncu anchor" bash scripts/gpu_session.sh
# Stages (env STAGES, default all but det): info (nvidia-smi, versions), tests (GPU doctest suites),
# sanitize (compute-sanitizer memcheck + racecheck on small shapes of every kernel), ab (flash2
# tilings side by side), schedules (flash2h with and without its GEMM/softmax overlap), bwdsched
# (flash2h backward's schedules side by side, not causal and causal), bwdab
# (flash2 backward with B_c = 128 against B_c = 64 at DIMS, FLASHSIM_FLASH2_BWD_BC), bench
# (flashsim bench over SEQS x DIMS x {none, causal} x PASSES, where PASSES may hold step: the
# pairings VARIANTS_STEP over STEP_SEQS; DRAM/L2 bytes in process through
# CUPTI), det (flash2h's deterministic backward), ceilings (bench --ceilings), decode (bench
# --decode with its SDPA anchors), probe (bench --counters-probe), launch (bench --launch-probe:
# what a short call pays besides its work, with the SMs' carve-out left at most shared or default), fit (bench --fit), ncu (DRAM bytes of NCU_CONFIGS by Nsight Compute, set beside the in-process ones as a
# cross-check, or filling them where CUPTI could not read them), anchor (scripts/anchor_sdpa.py: SDPA flash / cuDNN / matmul),
# trust (attend --backend cuda on numpy files with --compare, a NaN file refused, bench --scale),
# study (bench --study: STUDY_SHAPES random shapes, at most STUDY_SECONDS), wg (flash2h forward
# at d = 64 with two and three consumer warpgroups side by side, SDPA anchors added), order (flash2h's
# causal grid order and the backward's ring depth side by side, SDPA anchors added), exp (flash2h
# forward's exponentials, FLASHSIM_FLASH2H_EXP, side by side, SDPA anchors added), grid (flash2h
# forward on one block a tile or its persistent grids, FLASHSIM_FLASH2H_GRID, side by side at GRIDS x
# GRID_SEQS x DIMS x GRID_MASKS (default none causal), SDPA anchors added), knob (any KNOB_VAR (or ENV: A=x+B=y) over KNOB_VALUES side by side in KNOB_ROUNDS rounds, SDPA
# anchors added), bwdflush (flash2h
# backward's dQ tiles by the consumers or by writer warps, FLASHSIM_FLASH2H_BWD_FLUSH, side by side,
# SDPA anchors added; d = 64's default, bulk-sum, runs with the writers only: the consumers there are
# refused, so compare at d = 64 with FLASHSIM_FLASH2H_BWD_SCHEDULE=bulk-keys), profile (Nsight Compute's full set and the SASS stall samples of one launch
# for each PROFILE_CONFIGS entry), ring (ring
# attention with the kernels: the ring tests under compute-sanitizer, bench --ring emulated on this
# GPU for RING_PS devices at RING_TOKENS tokens a device, causal, balanced (and contiguous at P = 4),
# then over NCCL at P = 2 and on every GPU the machine has (RING_NCCL_PS); all rows in ring.json),
# eager (scripts/eager_pytorch.py: Figure 2's standard attention as eager PyTorch, EAGER_PROGRAMS
# "authors hf", each kernel's time and, by ncu, its DRAM bytes; eager_<program>.json), offgrid
# (tools/offgrid/measure.sh: the off-grid shape set OFFGRID_SHAPES, default tools/offgrid/shapes.json,
# standard, flash2 and flash2h both passes; offgrid.json, checked by tools/offgrid/check.py), modes (the bench's
# GPU modes on this card: tests/cuda/test_bench_modes.cpp, bench fit, bench scale, a timed row with its
# knobs and this card's predictions; modes.log, modes_*.json), fp8 (flash2h's FP8 forward: its GPU
# and layout tests, memcheck and racecheck (both schedules), then fp8 beside bf16 at d = 128, N in
# FP8_SEQS, and fp8 with FLASHSIM_FLASH2H_FP8_OVERLAP=on in the same call; fp8.json, fp8_overlap.json,
# fp8_tests.log).
# sanitize runs SAN_TOOLS (memcheck racecheck synccheck) at N = SAN_SEQ (130) and memcheck at SAN_ODD_SEQS.
# CLOCKS=1 logs the SM clock, power and throttle reasons every 200 ms beside them (clocks.csv).
# tests runs every GPU test case, or those TEST_CASES names (doctest's -tc filter: comma-separated
# names, * wildcards), when device time is short.
# Writes under $OUT (at most 8 files come back): session.log, bench.json (merged, final),
# ncu.csv, sanitizer.log, tests.log, ab.json, schedules.json, bwd_ab.json. PACK=1: at the end,
# everything under $OUT goes into one results.tgz instead (nothing left out when a session writes
# more than 8 files, as a decode stage run several times with DECODE_OUT does).
set -u
OUT=${OUT:-/tmp/flashsim_out}
mkdir -p "$OUT"
BIN=${BIN:-build-cuda/bin}
STAGES=${STAGES:-"info tests sanitize ab schedules bwdab bench ncu anchor"}
SEQS=${SEQS:-1024,2048,4096,8192,16384}
DIMS=${DIMS:-64,128}
PASSES=${PASSES:-forward,backward}
VARIANTS=${VARIANTS:-standard,flash1,flash2,flash2h}
# a training step's pairings (FWD+BWD; a plain name pairs a variant with itself)
VARIANTS_STEP=${VARIANTS_STEP:-standard,flash2,flash2h+flash2,flash2h}
STEP_SEQS=${STEP_SEQS:-$SEQS}
MASKS=${MASKS:-"none causal"}
REPEATS=${REPEATS:-20}
# ncu configs: variant:pass:N:d:mask, space separated
NCU_CONFIGS=${NCU_CONFIGS:-"flash2h:forward:4096:128:none flash2:forward:4096:128:none standard:forward:4096:128:none flash1:forward:4096:128:none"}
export FLASHSIM_GIT_COMMIT=${FLASHSIM_GIT_COMMIT:-unknown}
LOG="$OUT/session.log"
exec > >(tee -a "$LOG") 2>&1
has() { [[ " $STAGES " == *" $1 "* ]]; }
# CLOCKS=1: the GPU's SM clock, power, temperature and throttle reasons every 200 ms for the whole
# session (clocks.csv; the stage and side-by-side stamps in session.log say what ran when)
if [ "${CLOCKS:-0}" = 1 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 200 > "$OUT/clocks.csv" 2>&1 &
  CLOCKS_PID=$!
  trap 'kill $CLOCKS_PID 2>/dev/null' EXIT
fi
stamp() { echo "=== $(date -u +%H:%M:%S) $*"; }
# merge_rows OUT PART: PART's bench rows appended to OUT's (OUT made from PART when it is not there
# yet), then PART removed; a PART a cut-short bench left unreadable is skipped, so OUT keeps every
# finished part
merge_rows() {
  python3 - "$1" "$2" <<'EOF'
import json, sys, os
out, part = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(part))
except Exception as e:
    print("skip", part, e); sys.exit(0)
doc = json.load(open(out)) if os.path.exists(out) else None
if doc is None: doc = d
else: doc["rows"] += d["rows"]
json.dump(doc, open(out, "w"), indent=1)
os.remove(part)
print(os.path.basename(out), "rows so far:", len(doc["rows"]))
EOF
}

# libraries the binaries need that the device image lacks travel beside them in $BIN
export LD_LIBRARY_PATH="$PWD/$BIN:${LD_LIBRARY_PATH:-}"
# the CUDA 13 runtime and cuBLAS the binaries were linked against
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
# CUPTI (in-process DRAM counters): wherever this machine keeps libcupti.so.13
if ldd "$BIN/flashsim-bench" | grep -q "libcupti.so.13 => not found"; then
  c=$(find / -name "libcupti.so.13" -not -path "*/proc/*" 2>/dev/null | head -1)
  [ -n "$c" ] && export LD_LIBRARY_PATH="$(dirname "$c"):$LD_LIBRARY_PATH"
fi
if ! ldd "$BIN/flashsim-bench" | grep -q "libcublas.so.13 => /"; then
  pyl=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' 2>/dev/null)
  pyr=$(python3 -c 'import nvidia.cuda_runtime, os; print(os.path.join(os.path.dirname(nvidia.cuda_runtime.__file__), "lib"))' 2>/dev/null)
  export LD_LIBRARY_PATH="$pyl:$pyr:${LD_LIBRARY_PATH:-}"
fi

if has info; then
  stamp info
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  nvcc --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
  ldd "$BIN/flashsim-bench" | grep -E "cublas|cudart|cupti"
fi

if has tests; then
  stamp tests
  { timeout 120 "$BIN/test_cuda_reference"; echo "test_cuda_reference rc=$?"; timeout "${TEST_TIMEOUT:-300}" "$BIN/test_cuda_gpu" ${TEST_CASES:+"-tc=$TEST_CASES"}; echo "test_cuda_gpu rc=$?";
    if [ -x "$BIN/test_live_run_gpu" ]; then FLASHSIM_SOURCE_DIR="$PWD" timeout 300 "$BIN/test_live_run_gpu"; echo "test_live_run_gpu rc=$?"; fi; } > "$OUT/tests.log" 2>&1
  if grep -q "test_cuda_gpu rc=1[0-9][0-9]" "$OUT/tests.log"; then  # crashed: where?
    cuda-gdb -batch -ex run -ex bt --args "$BIN/test_cuda_gpu" >> "$OUT/tests.log" 2>&1
  fi
  tail -n 12 "$OUT/tests.log"
  # the cases run and skipped on this card, by name (tests/cuda/gpu_cases.hpp)
  grep -E "^(GPU summary|  (skipped|not run|EMPTY) )" "$OUT/tests.log" || true
fi

if has sanitize; then
  stamp sanitize
  SAN="$OUT/sanitizer.log"; : > "$SAN"
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
    for v in ${SAN_VARIANTS:-flash2h flash2 flash1 standard}; do
      for p in ${SAN_PASSES:-forward backward}; do
        [ "$v" = flash1 ] && [ "$p" = backward ] && continue
        [ "$tool" != memcheck ] && [ "$v" = standard ] && continue   # cuBLAS: memcheck only
        for d in ${SAN_DIMS:-64 128}; do
          for m in ${SAN_MASKS:-none --causal}; do
            [ "$m" = none ] && m=""
            echo "--- $tool $v $p d=$d $m" >> "$SAN"
            timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN/flashsim-bench" bench --variant "$v" --pass "$p" \
              --seq "${SAN_SEQ:-130}" --head-dim "$d" --batch 1 --heads 2 $m --repeats 1 --warmup 0 --no-check >> "$SAN" 2>&1
            echo "rc=$?" >> "$SAN"
          done
        done
      done
    done
  done
  # odd sizes under memcheck: one token, and fewer tokens than a block
  for v in ${SAN_VARIANTS:-flash2h flash2 flash1 standard}; do
    for p in forward backward; do
      [ "$v" = flash1 ] && [ "$p" = backward ] && continue
      for n in ${SAN_ODD_SEQS:-1 77}; do
        for d in ${SAN_DIMS:-64 128}; do
          echo "--- memcheck $v $p d=$d N=$n" >> "$SAN"
          timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/flashsim-bench" bench --variant "$v" --pass "$p" \
            --seq "$n" --head-dim "$d" --batch 1 --heads 3 --causal --repeats 1 --warmup 0 --no-check >> "$SAN" 2>&1
          echo "rc=$?" >> "$SAN"
        done
      done
    done
  done
  # flash2h forward's persistent grid (SAN_GRID: static, the default's, or persistent, the counter's,
  # launched in clusters of two for its st.async tile word) with more units than SMs: every block runs several tiles, handing the Q_i buffer
  # and the K/V ring from tile to tile
  if [[ " ${SAN_VARIANTS:-flash2h} " == *" flash2h "* && "${SAN_PASSES:-forward}" == *forward* ]]; then
    for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
      for d in ${SAN_DIMS:-64 128}; do
        for m in none --causal; do
          [ "$m" = none ] && m=""
          echo "--- $tool flash2h forward grid=${SAN_GRID:-static} d=$d heads=200 N=260 $m" >> "$SAN"
          FLASHSIM_FLASH2H_GRID=${SAN_GRID:-static} timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 \
            "$BIN/flashsim-bench" bench --variant flash2h --pass forward --seq 260 --head-dim "$d" --batch 1 --heads 200 $m --repeats 1 --warmup 0 --no-check >> "$SAN" 2>&1
          echo "rc=$?" >> "$SAN"
        done
      done
    done
  fi
  if [ "${SAN_DECODE:-1}" = 1 ]; then  # the decode kernel and its merge, odd L, both d, several splits
    # splits 0: the rule's 4 splits, merged by each head's last block; 1: one block a head, the K/V
    # ring wrapping 16 tiles; merge=separate: the merge as a second kernel
    for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
      for d in 64 128; do
        for sp in 0 1 separate; do
          [ "$sp" = separate ] && [ "$tool" != memcheck ] && continue
          echo "--- $tool decode d=$d splits=$sp" >> "$SAN"
          FLASHSIM_DECODE_MERGE=$([ "$sp" = separate ] && echo separate || echo fused) \
            timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN/flashsim-bench" bench --decode --cache 1001 \
            --batch 2 -d "$d" --splits "$([ "$sp" = separate ] && echo 0 || echo "$sp")" --repeats 1 --warmup 0 --no-check >> "$SAN" 2>&1
          echo "rc=$?" >> "$SAN"
        done
      done
      # d = 64: 6 splits end mid-stage (128-key stages, the default), and the 64-key stages
      # (FLASHSIM_DECODE_STAGE_KEYS=64)
      for cfg in "64 6 128" "64 0 64" "64 1 64"; do
        read -r cd csp csk <<< "$cfg"
        echo "--- $tool decode d=$cd splits=$csp stage_keys=$csk" >> "$SAN"
        FLASHSIM_DECODE_STAGE_KEYS=$csk timeout 120 compute-sanitizer --tool "$tool" \
          --error-exitcode 9 "$BIN/flashsim-bench" bench --decode --cache 1001 --batch 2 -d "$cd" --splits "$csp" \
          --repeats 1 --warmup 0 --no-check >> "$SAN" 2>&1
        echo "rc=$?" >> "$SAN"
      done
      # the cluster merge (FLASHSIM_DECODE_MERGE=cluster): 7 splits of a head read each other's shared
      # memory, both d
      for d in 64 128; do
        echo "--- $tool decode d=$d splits=7 merge=cluster" >> "$SAN"
        FLASHSIM_DECODE_MERGE=cluster timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 \
          "$BIN/flashsim-bench" bench --decode --cache 1001 --batch 2 -d "$d" --splits 7 --repeats 1 --warmup 0 \
          --no-check >> "$SAN" 2>&1
        echo "rc=$?" >> "$SAN"
      done
    done
  fi
  grep -c "^rc=0" "$SAN" | sed 's/^/sanitizer runs clean: /'
  grep -B1 "^rc=[^0]" "$SAN" | head -20
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$SAN" | sort | uniq -c
fi

if has trust; then
  # the user's own tensors through the GPU (flashsim attend --backend cuda, which runs
  # flashsim-bench), compared with the simulator and float64; hostile files refused; the scale checks
  stamp trust
  T=/tmp/flashsim_attend; mkdir -p "$T"
  python3 - "$T" <<'PY'
import sys, numpy as np
t = sys.argv[1]; rng = np.random.default_rng(2026)
for name in ("q", "k", "v", "do"):
    np.save(f"{t}/{name}.npy", rng.standard_normal((2, 4, 1000, 128)).astype(np.float32))
    np.save(f"{t}/{name}16.npy", rng.standard_normal((1, 2, 333, 64)).astype(np.float16))
bad = rng.standard_normal((2, 4, 1000, 128)).astype(np.float32); bad[1, 2, 500, 7] = np.nan
np.save(f"{t}/nan.npy", bad)
PY
  for algo in standard flash1 flash2 flash2h; do
    echo "--- attend --backend cuda --algo $algo (float32 files as bf16), forward, --compare"
    "$BIN/flashsim" attend --backend cuda --algo "$algo" --dtype bf16 --q "$T/q.npy" --k "$T/k.npy" --v "$T/v.npy" --out "$T/o_$algo.npy" --compare; echo "rc=$?"
    [ "$algo" = flash1 ] && continue
    echo "--- attend --backend cuda --algo $algo (float16 files), backward, causal, --compare"
    "$BIN/flashsim" attend --backend cuda --algo "$algo" --pass backward --causal --q "$T/q16.npy" --k "$T/k16.npy" --v "$T/v16.npy" --do "$T/do16.npy" --out "$T/ob_$algo.npy" --compare; echo "rc=$?"
  done
  echo "--- hostile: NaN in K (must be refused, rc=1)"
  "$BIN/flashsim" attend --backend cuda --algo flash2h --dtype bf16 --q "$T/q.npy" --k "$T/nan.npy" --v "$T/v.npy" --out "$T/o_nan.npy"; echo "rc=$?"
  echo "--- scale"
  timeout "${SCALE_TIMEOUT:-400}" "$BIN/flashsim-bench" bench --scale --dtype bf16 --json "$OUT/scale.json"; echo "scale rc=$?"
fi

if has study; then
  # STUDY_PROCS processes share the shapes (index modulo STUDY_PROCS): the host's comparisons and
  # input generation run on several cores while the GPU is shared; their files are merged.
  stamp study
  P=${STUDY_PROCS:-6}
  pids=""
  for k in $(seq 0 $((P - 1))); do
    timeout "${STUDY_TIMEOUT:-500}" "$BIN/flashsim-bench" bench --study "${STUDY_SHAPES:-1000}" --study-slice "$k/$P" \
      --time-limit "${STUDY_SECONDS:-300}" --seed "${STUDY_SEED:-2026}" --json "/tmp/study_$k.json" > "/tmp/study_$k.log" 2>&1 &
    pids="$pids $!"
  done
  wait $pids  # (a bare wait would also wait for the tee that copies this script's output)
  grep -h "outside\|error\|time limit" /tmp/study_*.log | head -30
  python3 - "$OUT/study.json" /tmp/study_*.json <<'PY'
import json, sys
docs = [json.load(open(p)) for p in sys.argv[2:]]
out = dict(docs[0]); out["shapes"] = sorted((s for d in docs for s in d["shapes"]), key=lambda s: s["shape"])
json.dump(out, open(sys.argv[1], "w"), indent=1)
n = sum(len(e.get("entries", [])) for e in out["shapes"]); ok = sum(sum(1 for x in e.get("entries", []) if x["ok"]) for e in out["shapes"])
print(f"study: {len(out['shapes'])} shapes merged, {ok} of {n} comparisons inside the bar")
PY
fi

# side_by_side FILE VAR FIELD "VALUES" BENCH-ARGS...: the same `flashsim bench` once for each value
# of the environment variable VAR (same inputs, same call); the rows go to $OUT/FILE, each with
# FIELD set to its value.
side_by_side() {
  local file=$1 var=$2 field=$3 values=$4
  shift 4
  for v in $values; do
    # var ENV: each value is a list of assignments joined by '+' (A=x+B=y), set together
    local assign="$var=$v"; [ "$var" = ENV ] && assign=${v//+/ }
    echo "=== $(date -u +%H:%M:%S.%3N) $var=$v"
    env $assign timeout 100 "$BIN/flashsim-bench" bench "$@" --repeats "$REPEATS" --json "$OUT/sbs_$v.json" | sed "s/^/[$v] /"
  done
  python3 - "$OUT" "$file" "$field" "$var" $values <<'EOF2'
import json, sys, os
out, file, field, var, values = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
rows, meta = [], {}
for v in values:
    p = os.path.join(out, f"sbs_{v}.json")
    if not os.path.exists(p): continue
    doc = json.load(open(p))
    meta = meta or {k: x for k, x in doc.items() if k != "rows"}  # device, driver, date, commit
    for r in doc["rows"]:
        r[field] = v
        if field == "knob":
            r["knob_var"] = var  # the variable compared (ENV: each value names its own)
        rows.append(r)
    os.remove(p)
json.dump(dict(meta, rows=rows), open(os.path.join(out, file), "w"), indent=1)
EOF2
}

# $OUT/NAME_<tag>_<rest>.json (side_by_side's files of one stage) into $OUT/NAME.json: every row gets
# FIELD = <tag> without its first SKIP characters; then the SDPA anchors of the same shapes are added
merge_tagged() {
  python3 - "$OUT" "$1" "$2" "$3" <<'EOF2'
import json, sys, os, glob
out, name, field, skip = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows, meta = [], {}
for p in sorted(glob.glob(os.path.join(out, f"{name}_*_*.json"))):
    tag = os.path.basename(p)[len(name) + 1:].split("_")[0][skip:]
    doc = json.load(open(p))
    meta = meta or {k: x for k, x in doc.items() if k != "rows"}
    for r in doc["rows"]:
        r[field] = tag
        rows.append(r)
    os.remove(p)
json.dump(dict(meta, rows=rows), open(os.path.join(out, f"{name}.json"), "w"), indent=1)
print(f"{name} rows:", len(rows))
EOF2
  PYTHONUNBUFFERED=1 timeout "${ANCHOR_TIMEOUT:-200}" python3 scripts/anchor_sdpa.py --bench "$OUT/$1.json" \
    --out "$OUT/$1_anchored.json" --repeats "$REPEATS"
  [ -s "$OUT/$1_anchored.json" ] && mv "$OUT/$1_anchored.json" "$OUT/$1.json"
}

if has ab; then
  # flash2 forward tilings side by side; the fastest correct one at N = 8192 becomes the tiling
  # of the main bench for each d (recorded in every row's tiles)
  stamp ab
  side_by_side ab.json FLASHSIM_FLASH2_FWD tiling "default 16rows bc32" --variant flash2 --seq 4096,8192,16384 --head-dim 64,128
  python3 - "$OUT/ab.json" > "$OUT/ab_choice.sh" <<'EOF2'
import json, sys
path = sys.argv[1]
doc = json.load(open(path))
best = {}
for r in doc["rows"]:
    if r.get("ok") and r["seq"] == 8192 and "ms_median" in r:
        k = r["head_dim"]
        if k not in best or r["ms_median"] < best[k][1]: best[k] = (r["tiling"], r["ms_median"])
doc["chosen"] = {str(k): v[0] for k, v in best.items()}
json.dump(doc, open(path, "w"), indent=1)
for k, (tl, ms) in best.items():
    print(f"export FLASHSIM_FLASH2_FWD_D{k}={tl}")
EOF2
  . "$OUT/ab_choice.sh"; rm -f "$OUT/ab_choice.sh"
  echo "chosen flash2 tilings: d128=${FLASHSIM_FLASH2_FWD_D128:-default} d64=${FLASHSIM_FLASH2_FWD_D64:-default}"
fi

if has schedules; then
  # flash2h's two schedules on the same inputs: "overlapped" (S_{j+1} and P_j V_j in flight
  # together) against "plain" (S, softmax, P V one after another in each warpgroup)
  stamp schedules
  side_by_side schedules.json FLASHSIM_FLASH2H schedule "overlapped plain" --variant flash2h --seq 4096,8192,16384 --head-dim 64,128
fi

if has bwdab; then
  # flash2 backward: B_c = 128 keys a block against 64 (FLASHSIM_FLASH2_BWD_BC) at DIMS
  stamp bwdab
  side_by_side bwd_ab.json FLASHSIM_FLASH2_BWD_BC tiling "128 64" --variant flash2 --pass backward --seq 4096,8192,16384 --head-dim "$DIMS"
fi

if has bwdsched; then
  # flash2h backward's schedules (FLASHSIM_FLASH2H_BWD_SCHEDULE) side by side on the same inputs,
  # not causal and causal: the default is chosen from these (cuda/NOTES.md, v3); bulk-sum (d = 64's
  # default) is refused at d = 128, so name it with DIMS=64 (BWD_SCHEDULES="bulk-keys bulk-sum")
  stamp bwdsched
  for m in "" --causal; do
    side_by_side "bwd_schedules${m:+_causal}.json" FLASHSIM_FLASH2H_BWD_SCHEDULE schedule \
      "${BWD_SCHEDULES:-plain pipelined bulk bulk-pipelined bulk-keys}" --variant flash2h --pass backward \
      --seq "$SEQS" --head-dim "$DIMS" $m
  done
fi

if has ring; then
  # ring attention with the kernels (cuda/ring.cu): NCCL from PyTorch's wheel, multicast off
  stamp ring
  nl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(os.path.dirname(nvidia.nccl.__file__), "lib", "libnccl.so.2"))' 2>/dev/null)
  [ -n "$nl" ] && [ -f "$nl" ] && export FLASHSIM_NCCL_LIB="$nl"
  echo "FLASHSIM_NCCL_LIB=${FLASHSIM_NCCL_LIB:-unset}"
  export NCCL_NVLS_ENABLE=0
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/test_cuda_gpu" -tc="ring: kernel calls*" \
    > "$OUT/ring_sanitizer.log" 2>&1
  echo "ring memcheck rc=$? ($(grep -c "ERROR SUMMARY: 0 errors" "$OUT/ring_sanitizer.log") clean summaries)"
  tail -3 "$OUT/ring_sanitizer.log"
  RT=${RING_TOKENS:-8192}
  parts=()
  ring_row() {  # name P layout transport tokens-a-device
    local f="$OUT/ring_$1.json"
    timeout "${RING_TIMEOUT:-240}" "$BIN/flashsim-bench" bench --ring "$2" --ring-layout "$3" --ring-transport "$4" \
      --variant "${RING_KERNEL:-flash2h}" --seq $(( $2 * $5 )) -d 128 --batch 1 --heads 16 --causal --pass backward \
      --repeats "$REPEATS" --json "$f"
    echo "ring $1 rc=$?"
    [ -s "$f" ] && parts+=("$f")
  }
  for P in ${RING_PS:-1 2 4 8}; do ring_row "e$P" "$P" balanced emulated "$RT"; done
  ring_row c4 4 contiguous emulated "$RT"
  # over NCCL: P = 2 and every GPU the machine has (RING_NCCL_PS to choose), each beside one GPU
  G=$(nvidia-smi -L 2>/dev/null | wc -l)
  for P in ${RING_NCCL_PS:-2 $G}; do
    [ "$P" -ge 1 ] && [ "$P" -le "$G" ] && ring_row "nccl$P" "$P" balanced nccl "$RT"
  done
  python3 - "$OUT/ring.json" "${parts[@]}" <<'PY'
import json, sys
out, parts = sys.argv[1], sys.argv[2:]
docs = [json.load(open(p)) for p in parts]
if docs:
    doc = dict(docs[0]); doc["rows"] = [r for d in docs for r in d["rows"]]
    json.dump(doc, open(out, "w"), indent=1)
    print("ring.json:", len(doc["rows"]), "rows")
PY
  rm -f "${parts[@]}"
fi

if has wg; then
  # flash2h forward at d = 64: two consumer warpgroups against three (FLASHSIM_FLASH2H_WG) on the
  # same inputs, in each schedule, not causal and causal; the SDPA anchors of the same shapes are
  # added to every row (wg.json)
  stamp wg
  for sch in ${WG_SCHEDULES:-plain overlapped}; do
    for m in none causal; do
      flag=""; [ "$m" = causal ] && flag="--causal"
      FLASHSIM_FLASH2H=$sch side_by_side "wg_${sch}_${m}.json" FLASHSIM_FLASH2H_WG wg "2 3" --variant flash2h \
        --seq "${WG_SEQS:-4096,8192,16384}" --head-dim 64 $flag
    done
  done
  merge_tagged wg schedule 0
fi

if has order; then
  # flash2h: causal grids heaviest block first across heads (FLASHSIM_FLASH2H_ORDER) and the
  # deeper rings (FLASHSIM_FLASH2H_BWD_STAGES, FLASHSIM_FLASH2H_STAGES) side by side on the same
  # inputs: backward without a mask (ring depths), causal (depths x orders), forward (depths, and
  # orders when causal); the SDPA anchors of the same shapes added to every row (order.json)
  stamp order
  OS=${ORDER_SEQS:-4096,8192,16384}
  for st in ${ORDER_BWD_STAGES:-2 deep}; do
    FLASHSIM_FLASH2H_BWD_STAGES=$st side_by_side "order_b${st}_none.json" FLASHSIM_FLASH2H_ORDER order "heads" \
      --variant flash2h --pass backward --seq "$OS" --head-dim "$DIMS"
    FLASHSIM_FLASH2H_BWD_STAGES=$st side_by_side "order_b${st}_causal.json" FLASHSIM_FLASH2H_ORDER order \
      "${ORDER_ORDERS:-heads heavy}" --variant flash2h --pass backward --seq "$OS" --head-dim "$DIMS" --causal
  done
  for st in ${ORDER_FWD_STAGES:-2}; do
    FLASHSIM_FLASH2H_STAGES=$st side_by_side "order_f${st}_none.json" FLASHSIM_FLASH2H_ORDER order "heads" \
      --variant flash2h --pass forward --seq "$OS" --head-dim "$DIMS"
    FLASHSIM_FLASH2H_STAGES=$st side_by_side "order_f${st}_causal.json" FLASHSIM_FLASH2H_ORDER order \
      "${ORDER_ORDERS:-heads heavy}" --variant flash2h --pass forward --seq "$OS" --head-dim "$DIMS" --causal
  done
  merge_tagged order stages 1
fi

if has bwdflush; then
  # flash2h backward: dQ tiles added by the consumer warpgroups or by writer warps
  # (FLASHSIM_FLASH2H_BWD_FLUSH) side by side on the same inputs, not causal and causal, and the
  # training step at N = 8192; the SDPA anchors of the same shapes added to every row (bwdflush.json)
  stamp bwdflush
  for m in none causal; do
    flag=""; [ "$m" = causal ] && flag="--causal"
    side_by_side "bwdflush_${m}_b.json" FLASHSIM_FLASH2H_BWD_FLUSH flush "${FLUSH_VALUES:-consumers writers}" \
      --variant flash2h --pass backward --seq "${FLUSH_SEQS:-4096,8192,16384}" --head-dim "$DIMS" $flag
    side_by_side "bwdflush_${m}_s.json" FLASHSIM_FLASH2H_BWD_FLUSH flush "${FLUSH_VALUES:-consumers writers}" \
      --variant flash2h --pass step --seq 8192 --head-dim "$DIMS" $flag
  done
  merge_tagged bwdflush mask_tag 0
fi

if has exp; then
  # flash2h forward: the softmax's exponentials (FLASHSIM_FLASH2H_EXP: ieee = exp2f, ftz =
  # ex2.approx.ftz, poly = a quarter on the FMA units) side by side on the same inputs, not causal
  # and causal; the SDPA anchors of the same shapes added to every row (exp.json)
  stamp exp
  for m in none causal; do
    flag=""; [ "$m" = causal ] && flag="--causal"
    side_by_side "exp_${m}_f.json" FLASHSIM_FLASH2H_EXP exp "${EXP_MODES:-ieee ftz poly}" --variant flash2h \
      --seq "${EXP_SEQS:-4096,8192,16384}" --head-dim "$DIMS" $flag
  done
  merge_tagged exp mask_tag 0
fi

if has grid; then
  # flash2h forward: one thread block a tile against the persistent grid (FLASHSIM_FLASH2H_GRID)
  # side by side on the same inputs, not causal and causal; the SDPA anchors of the same shapes
  # added to every row (grid.json)
  stamp grid
  for m in ${GRID_MASKS:-none causal}; do
    flag=""; [ "$m" = causal ] && flag="--causal"
    side_by_side "grid_${m}_f.json" FLASHSIM_FLASH2H_GRID grid "${GRIDS:-tiles static persistent}" --variant flash2h \
      --seq "${GRID_SEQS:-1024,2048,4096,8192,16384}" --head-dim "$DIMS" $flag
  done
  merge_tagged grid mask_tag 0
fi

if has knob; then
  # any knob side by side on the same inputs: KNOB_VAR over KNOB_VALUES (KNOB_VAR=ENV: each value
  # A=x+B=y sets several variables at once) for KNOB_VARIANT, KNOB_PASS,
  # KNOB_SEQS x DIMS, in KNOB_ROUNDS rounds (A B A B: the rounds' spread shows the call's drift),
  # KNOB_MASKS (default: none causal); the SDPA anchors of the same shapes added to every row (knob.json; the
  # value in each row's knob field, its round and mask in mask_tag)
  stamp knob
  for m in ${KNOB_MASKS:-none causal}; do
    flag=""; [ "$m" = causal ] && flag="--causal"
    for r in $(seq 1 "${KNOB_ROUNDS:-2}"); do
      side_by_side "knob_${m}${r}_f.json" "${KNOB_VAR:?KNOB_VAR names the variable to compare}" knob "${KNOB_VALUES:?}" \
        --variant "${KNOB_VARIANT:-flash2h}" --pass "${KNOB_PASS:-forward}" --seq "${KNOB_SEQS:-4096,8192,16384}" \
        --head-dim "$DIMS" $flag
    done
  done
  merge_tagged knob mask_tag 0
fi

if has bench; then
  stamp bench
  rm -f "$OUT/bench.json"
  for m in $MASKS; do
    flag=""; [ "$m" = causal ] && flag="--causal"
    for p in ${PASSES//,/ }; do
      vs=$VARIANTS; [ "$p" = backward ] && vs=$(echo "$VARIANTS" | tr ',' '\n' | grep -v flash1 | paste -sd,)
      [ "$p" = step ] && vs=$VARIANTS_STEP
      f="$OUT/part_${m}_${p}.json"
      seqs=$SEQS; [ "$p" = step ] && seqs=$STEP_SEQS
      timeout "${BENCH_TIMEOUT:-170}" "$BIN/flashsim-bench" bench --variant "$vs" --seq "$seqs" --head-dim "$DIMS" --pass "$p" $flag \
        --repeats "$REPEATS" --json "$f"
      echo "bench $m $p rc=$?"
      # merge at once, so that bench.json holds every finished part even if a later one is cut short
      merge_rows "$OUT/bench.json" "$f"
    done
  done
fi

if has fp8; then
  # flash2h's FP8 (e4m3) forward (cuda/flash2h_fp8.cu): its GPU tests (tests/cuda/test_fp8.cpp) and its
  # CPU tests (the key order, the P-flip allowance), memcheck and racecheck on small shapes, then the forward in fp8 beside bf16 at
  # B*N = 16k, H*d = 2048, d = 128, N in FP8_SEQS, all rows in fp8.json (fp8 rows carry prep_ms: the
  # quantization and the V transpose, timed apart from the forward)
  stamp fp8
  { if [ -x "$BIN/test_cuda_reference" ]; then timeout 120 "$BIN/test_cuda_reference" -tc="fp8*"; echo "fp8 layout test rc=$?"; fi
    timeout 300 "$BIN/test_cuda_gpu" -tc="flash2h fp8*"; echo "fp8 gpu tests rc=$?"
    for tool in memcheck racecheck; do
      for n in 77 300; do
        for ov in off on; do
          echo "--- $tool flash2h fp8 forward N=$n FLASHSIM_FLASH2H_FP8_OVERLAP=$ov"
          FLASHSIM_FLASH2H_FP8_OVERLAP=$ov timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 \
            "$BIN/flashsim-bench" bench --variant flash2h --dtype fp8 --pass forward --seq "$n" --head-dim 128 \
            --batch 1 --heads 2 --repeats 1 --warmup 0 --no-check
          echo "rc=$?"
        done
      done
    done
  } > "$OUT/fp8_tests.log" 2>&1
  grep -E "rc=|test cases|assertions|SKIP|ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/fp8_tests.log" | head -30
  rm -f "$OUT/fp8.json"
  for dt in fp8 bf16; do
    f="$OUT/part_fp8_$dt.json"
    timeout "${BENCH_TIMEOUT:-170}" "$BIN/flashsim-bench" bench --variant flash2h --dtype "$dt" \
      --seq "${FP8_SEQS:-4096,8192,16384}" --head-dim 128 --pass forward --repeats "$REPEATS" --json "$f"
    echo "bench fp8 stage $dt rc=$?"
    merge_rows "$OUT/fp8.json" "$f"
  done
  # the deeper overlap (S_{j+1} issued before block j's softmax) in the same call, its own file (its rows
  # record the knob); the default's rows above are the baseline it is compared with
  rm -f "$OUT/fp8_overlap.json"
  FLASHSIM_FLASH2H_FP8_OVERLAP=on timeout "${BENCH_TIMEOUT:-170}" "$BIN/flashsim-bench" bench --variant flash2h \
    --dtype fp8 --seq "${FP8_SEQS:-4096,8192,16384}" --head-dim 128 --pass forward --repeats "$REPEATS" \
    --json "$OUT/fp8_overlap.json"
  echo "bench fp8 overlap rc=$?"
  python3 - "$OUT/fp8.json" "$OUT/fp8_overlap.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
by = {(r["dtype"], r["seq"]): r for r in rows}
try:
    ov = {r["seq"]: r for r in json.load(open(sys.argv[2]))["rows"]}
except Exception as e:  # not written, or cut short
    print("no overlap rows:", e)
    ov = {}
for n in sorted({r["seq"] for r in rows}):
    f, b = by.get(("fp8", n)), by.get(("bf16", n))
    tf = f.get("tflops") if f else None
    tb = b.get("tflops") if b else None
    ratio = round(tf / tb, 3) if tf and tb else None
    print(f"N={n}: fp8 {tf} TFLOP/s (prep_ms {f and f.get('prep_ms')}, rel_ref "
          f"{f and (f.get('vs_reference') or {}).get('rel_frobenius')}, ok {f and f.get('ok')}, error "
          f"{f and f.get('error')}), bf16 {tb} TFLOP/s, fp8/bf16 {ratio}")
    o = ov.get(n)
    if o:
        to = o.get("tflops")
        print(f"N={n}: fp8 FLASHSIM_FLASH2H_FP8_OVERLAP=on {to} TFLOP/s (ok {o.get('ok')}, knobs {o.get('knobs')}), "
              f"on/off {round(to / tf, 3) if to and tf else None}")
EOF
fi

if has offgrid; then
  # the off-grid shape set, chosen before measurement (tools/offgrid/choose.py: seed and rule in the
  # file): every kernel of the set, both passes, one bench call a shape; then the kernel model's share
  # within 15% (tools/offgrid/check.py). OFFGRID_SHAPES picks another set.
  stamp offgrid
  BIN="$BIN" REPEATS="$REPEATS" bash tools/offgrid/measure.sh "${OFFGRID_SHAPES:-tools/offgrid/shapes.json}" \
    "$OUT/offgrid.json"
  echo "offgrid rc=$?"
  python3 tools/offgrid/check.py "$OUT/offgrid.json" | tail -8
fi

if has det; then
  # flash2h's backward in its deterministic mode (dQ added in a fixed order): the bench rows, marked
  # "mode": "deterministic", merged into bench.json; the GPU tests check it is bit-identical run to run
  stamp det
  FLASHSIM_FLASH2H_BWD=deterministic timeout "${BENCH_TIMEOUT:-170}" "$BIN/flashsim-bench" bench --variant flash2h \
    --pass backward --seq "${DET_SEQS:-8192}" --head-dim "$DIMS" --repeats "$REPEATS" --json "$OUT/det.json"
  echo "det rc=$?"
  python3 - "$OUT/bench.json" "$OUT/det.json" <<'EOF'
import json, sys, os
out, part = sys.argv[1], sys.argv[2]
d = json.load(open(part))
for r in d["rows"]: r["mode"] = "deterministic"
doc = json.load(open(out)) if os.path.exists(out) else dict(d, rows=[])
doc["rows"] += d["rows"]
json.dump(doc, open(out, "w"), indent=1)
os.remove(part)
EOF
fi

if has profile; then
  # one launch of a kernel under Nsight Compute's full set, for each PROFILE_CONFIGS entry
  # (variant:pass:N:d:mask[:VAR=VALUE], the last one an environment setting for the run): the
  # details page (throughputs, occupancy, warp-state stalls), every raw metric (pipe utilisations
  # among them) and the source page (SASS with its stall samples per instruction) as CSV,
  # profile_<k>_details.csv / profile_<k>_raw.csv.gz / profile_<k>_sass.csv.gz;
  # the card's clocks are left alone (--clock-control none); PROFILE_DTYPE=fp8 with
  # PROFILE_KERNEL=fp8_fwd profiles the FP8 forward (not its preparation kernel)
  stamp profile
  k=0
  for c in ${PROFILE_CONFIGS:-flash2h:backward:8192:64:none}; do
    IFS=: read -r v p n d m e <<< "$c"
    flag=""; [ "$m" = causal ] && flag="--causal"
    k=$((k + 1))
    env ${e:-FLASHSIM_PROFILE_ENV=none} timeout "${PROFILE_TIMEOUT:-120}" ncu --clock-control none --set full \
        --import-source no --nvtx --nvtx-include "measure/" -k "regex:${PROFILE_KERNEL:-_kernel}" -c 1 \
        -o "$OUT/profile_$k" -f "$BIN/flashsim-bench" bench --variant "$v" --pass "$p" --seq "$n" --head-dim "$d" \
        --dtype "${PROFILE_DTYPE:-bf16}" $flag --nvtx --warmup 0 --repeats 0 --no-check > "$OUT/profile_$k.log" 2>&1
    echo "profile $k $c rc=$?"
    ncu -i "$OUT/profile_$k.ncu-rep" --page details --csv > "$OUT/profile_${k}_details.csv" 2>&1
    ncu -i "$OUT/profile_$k.ncu-rep" --page raw --csv --print-units base 2>&1 | gzip > "$OUT/profile_${k}_raw.csv.gz"
    ncu -i "$OUT/profile_$k.ncu-rep" --page source --csv --print-source sass 2> "$OUT/profile_${k}_sass.err" |
      gzip > "$OUT/profile_${k}_sass.csv.gz"
    rm -f "$OUT/profile_$k.ncu-rep"
    grep -E "Duration|Registers Per|Compute \(SM\) Throughput|L2 Cache Throughput|Issue Slots Busy|No Eligible" \
      "$OUT/profile_${k}_details.csv" | head -14
  done
fi

if has ncu; then
  stamp ncu
  : > "$OUT/ncu.csv"
  for c in $NCU_CONFIGS; do
    IFS=: read -r v p n d m <<< "$c"
    flag=""; [ "$m" = causal ] && flag="--causal"
    echo "#config $c" >> "$OUT/ncu.csv"
    timeout "${NCU_TIMEOUT:-40}" ncu --clock-control none --nvtx --nvtx-include "measure/" --print-units base --csv --page raw \
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum --log-file "$OUT/ncu_one.csv" \
        "$BIN/flashsim-bench" bench --variant "$v" --pass "$p" --seq "$n" --head-dim "$d" $flag --nvtx --warmup 0 --repeats 0 --no-check > /dev/null 2>&1
    echo "ncu $c rc=$?"
    cat "$OUT/ncu_one.csv" >> "$OUT/ncu.csv"
  done
  rm -f "$OUT/ncu_one.csv"
  python3 - "$OUT/ncu.csv" "$OUT/bench.json" <<'EOF'
import csv, io, json, sys, os
path, bench = sys.argv[1], sys.argv[2]
sums, cur, lines = {}, None, {}
for line in open(path):
    if line.startswith("#config "):
        cur = line.split()[1]; lines[cur] = []; continue
    if cur and line.startswith('"'):
        lines[cur].append(line)
for cfg, ls in lines.items():
    rows = list(csv.reader(io.StringIO("".join(ls))))
    if len(rows) < 3: print("ncu: no kernels for", cfg); continue
    hdr = rows[0]
    idx = {m: hdr.index(m) for m in ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum") if m in hdr}
    tot = {m: 0.0 for m in idx}
    for r in rows[2:]:
        for m, i in idx.items():
            tot[m] += float(r[i].replace(",", "") or 0)
    tot["kernels"] = len(rows) - 2
    sums[cfg] = tot
    print(f"ncu {cfg}: kernels {tot['kernels']}, DRAM read {tot.get('dram__bytes_read.sum',0)/1e6:.1f} MB, write {tot.get('dram__bytes_write.sum',0)/1e6:.1f} MB, L2 {tot.get('lts__t_bytes.sum',0)/1e6:.1f} MB")
doc = json.load(open(bench)) if os.path.exists(bench) else None
if doc:
    for r in doc["rows"]:
        cfg = f"{r['variant']}:{r['pass']}:{r['seq']}:{r['head_dim']}:{'causal' if r['causal'] else 'none'}"
        if cfg in sums:
            s = sums[cfg]
            ncu = {"dram_read_bytes": int(s.get("dram__bytes_read.sum", 0)), "dram_write_bytes": int(s.get("dram__bytes_write.sum", 0)),
                   "l2_bytes": int(s.get("lts__t_bytes.sum", 0))}
            note = "ncu --clock-control none, kernel replay, one run of the pass (NVTX range 'measure'), summed over %d kernels" % s["kernels"]
            if r.get("dram_read_bytes") is not None:  # read in process (CUPTI): keep, and set ncu's beside it
                for k, v in ncu.items(): r["ncu_" + k] = v
                r["ncu_note"] = note
                inproc = r["dram_read_bytes"] + r["dram_write_bytes"]
                r["counters_over_ncu"] = inproc / (ncu["dram_read_bytes"] + ncu["dram_write_bytes"]) if ncu["dram_read_bytes"] + ncu["dram_write_bytes"] else None
                print(f"cross-check {cfg}: DRAM in process {inproc/1e6:.1f} MB, ncu {(ncu['dram_read_bytes'] + ncu['dram_write_bytes'])/1e6:.1f} MB, ratio {r['counters_over_ncu']:.3f}")
            else:
                r.update(ncu)
                r["counters_note"] = note
            if r.get("sim_hbm_read_bytes") is not None:
                simt = r["sim_hbm_read_bytes"] + r["sim_hbm_write_bytes"]
                r["dram_over_sim"] = (r["dram_read_bytes"] + r["dram_write_bytes"]) / simt if simt else None
    json.dump(doc, open(bench, "w"), indent=1)
EOF
fi

if has probe; then
  # what the in-process DRAM counters see for known work after the bench's L2 flush (issue 12's
  # unexplained writes): a warp, reads of 64, 192 and 576 MiB, a 64 MiB write, two 192 MiB reads in
  # one range, a 192 MiB read with no flush before it, each beside the work's own bytes
  stamp probe
  timeout "${PROBE_TIMEOUT:-90}" "$BIN/flashsim-bench" bench --counters-probe --json "$OUT/counters_probe.json"
  echo "probe rc=$?"
fi

if has launch; then
  # an empty kernel with and without the most shared memory, a copy and the decode kernel at B = 1,
  # L = 32k, each after the decode rows' read flush, and after the flush plus a kernel that leaves the
  # SMs set to the most shared memory or to the default carve-out (issue 14's ~10 us a call)
  stamp launch
  timeout "${LAUNCH_TIMEOUT:-120}" "$BIN/flashsim-bench" bench --launch-probe --repeats "${LAUNCH_REPEATS:-40}" \
    --json "$OUT/launch_probe.json"
  echo "launch rc=$?"
fi

if has ceilings; then
  # the GPU's own ceilings (cuda/ceilings.cu): HBM copy, L2, shared memory, mma.sync, wgmma, exp, launch;
  # and standard's own cuBLAS calls and two-pass softmax alone at ragged N and their aligned neighbours
  # (cuda/ceilings_standard.cu, seconds), the points its model charges where N % 8 != 0
  stamp ceilings
  timeout "${CEILINGS_TIMEOUT:-90}" "$BIN/flashsim-bench" bench --ceilings --json "$OUT/ceilings.json"
  echo "ceilings rc=$?"
fi

if has decode; then
  # split-KV decoding (cuda/decode.cu) on the issue's four (B, L) rows, d = 128 and 64, with SDPA's
  # flash and cuDNN anchors and a device copy in the same call
  stamp decode
  # DECODE_TRACE=K: K traced calls a row besides (where the time goes; table.py --decode-trace)
  # DECODE_ARGS: more bench arguments (--batch B --cache L --splits S: one row instead of the four);
  # DECODE_OUT: the file's name under $OUT (decode.json)
  dj="$OUT/${DECODE_OUT:-decode.json}"
  # shellcheck disable=SC2086  # DECODE_ARGS is a list of arguments
  timeout "${DECODE_TIMEOUT:-120}" "$BIN/flashsim-bench" bench --decode -d "${DECODE_DIMS:-128,64}" --repeats "$REPEATS" \
    --trace "${DECODE_TRACE:-0}" ${DECODE_ARGS:-} --json "$dj"
  echo "decode rc=$?"
  PYTHONUNBUFFERED=1 timeout "${ANCHOR_TIMEOUT:-200}" python3 scripts/anchor_sdpa.py --bench "$dj" \
    --out "$OUT/decode_anchored.json" --repeats "$REPEATS"
  echo "decode anchor rc=$?"
  [ -s "$OUT/decode_anchored.json" ] && mv "$OUT/decode_anchored.json" "$dj"
fi

if has fit; then
  # the longest N each kernel's training step allocates (B = 1, H = 16, d = 128), beside the simulator's
  stamp fit
  timeout "${FIT_TIMEOUT:-90}" "$BIN/flashsim-bench" bench --fit --json "$OUT/fit.json"
  echo "fit rc=$?"
fi

if has modes; then
  # the bench's GPU modes on this card (tests/cuda/test_bench_modes.cpp): a forced failure leaves the
  # next case right; --fit and --scale sized from the free memory, a case that does not fit named;
  # a timed row predicted for this card's preset, with the knobs it ran with
  stamp modes
  { timeout 300 "$BIN/test_cuda_gpu" -tc="a failed case*,--fit finds*,the prediction preset*"; echo "modes tests rc=$?"
    timeout "${FIT_TIMEOUT:-90}" "$BIN/flashsim-bench" bench fit --json "$OUT/modes_fit.json"; echo "modes fit rc=$?"
    timeout "${SCALE_TIMEOUT:-900}" "$BIN/flashsim-bench" bench scale --json "$OUT/modes_scale.json"; echo "modes scale rc=$?"
    FLASHSIM_FLASH2H_BWD_POST=staged timeout 120 "$BIN/flashsim-bench" bench --variant flash2,flash2h --seq 4096 -d 128 \
      --repeats 5 --json "$OUT/modes_time.json"; echo "modes time rc=$?"
  } > "$OUT/modes.log" 2>&1
  tail -n 40 "$OUT/modes.log"
fi

if has eager; then
  # Figure 2's standard attention as eager PyTorch at the paper's shape (B 64, H 16, N 1024, d 64, fp16):
  # the step's time, each kernel's time (torch.profiler), then each kernel's DRAM bytes by ncu (one step)
  stamp eager
  for prog in ${EAGER_PROGRAMS:-authors hf}; do
    PYTHONUNBUFFERED=1 timeout "${EAGER_TIMEOUT:-120}" python3 scripts/eager_pytorch.py --program "$prog" \
      --out "$OUT/eager_$prog.json" --repeats "$REPEATS"
    echo "eager $prog rc=$?"
    timeout "${NCU_TIMEOUT:-120}" ncu --profile-from-start off --clock-control none --print-units base --csv --page raw \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum --log-file "$OUT/eager_${prog}_ncu.csv" \
      python3 scripts/eager_pytorch.py --program "$prog" --ncu-mark > /dev/null 2>&1
    echo "eager ncu $prog rc=$?"
    python3 scripts/eager_pytorch.py --merge-ncu "$OUT/eager_${prog}_ncu.csv" --out "$OUT/eager_$prog.json"
  done
fi

if has anchor; then
  stamp anchor
  if [ -f "$OUT/bench.json" ]; then
    PYTHONUNBUFFERED=1 timeout "${ANCHOR_TIMEOUT:-200}" python3 scripts/anchor_sdpa.py --bench "$OUT/bench.json" \
      --out "$OUT/bench_anchored.json" --repeats "$REPEATS"
    echo "anchor rc=$?"
    [ -s "$OUT/bench_anchored.json" ] && mv "$OUT/bench_anchored.json" "$OUT/bench.json"
  fi
fi
stamp done
ls -la "$OUT"
if [ "${PACK:-0}" = 1 ]; then
  # one file back: the session's own log is still being written, so it goes in last, as a copy
  tmp=$(mktemp -d)
  cp -a "$OUT"/. "$tmp"/ && tar czf "$OUT/results.tgz" -C "$tmp" . && find "$OUT" -mindepth 1 ! -name results.tgz -delete
  rm -rf "$tmp"
  echo "packed: $OUT/results.tgz"
fi
