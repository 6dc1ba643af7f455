#!/usr/bin/env bash
# scripts/bench_sim.sh — how fast the simulator answers (a benchmark, not a test).
# Prints the median wall time of several runs of each command. Build first (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FLASHSIM_BIN:-build/bin/flashsim}
runs=${RUNS:-5}

median_ms() {  # median wall time in ms of $runs runs of "$@"
  local times=()
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null
    t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

printf '%-78s %10s\n' "command" "median ms"
while IFS= read -r args; do
  [ -z "$args" ] && continue
  # shellcheck disable=SC2086
  printf '%-78s %10s\n' "flashsim $args" "$(median_ms $bin $args)"
done <<'LIST'
simulate --algo flash2 --seq 65536 --head-dim 128 --json --l2 off
simulate --algo flash1 --seq 65536 --head-dim 128 --json --l2 off
simulate --algo flash2 --seq 65536 --head-dim 128 --json
simulate --algo flash1 --seq 65536 --head-dim 128 --json
simulate --algo standard --seq 65536 --head-dim 128 --json
simulate --algo flash2 --seq 1048576 --head-dim 128 --json
simulate --algo flash1 --seq 1048576 --head-dim 128 --json
simulate --algo standard --seq 1048576 --head-dim 128 --json
simulate --algo flash2 --seq 4096 --head-dim 128 --numerics on --json
simulate --algo flash1 --seq 4096 --head-dim 128 --numerics on --json
simulate --algo standard --seq 4096 --head-dim 128 --numerics on --json
LIST
