#!/usr/bin/env bash
# scripts/snapshot.sh DIR — the simulator's answers on a fixed set of configurations, as JSON with
# the walk's own run time (l2.seconds and the like) removed, one file a configuration. Taken before
# and after a change that must not change behaviour: `diff -r before/ after/` prints nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/snapshot.sh DIR}
bin=${FLASHSIM_BIN:-build/bin/flashsim}
mkdir -p "$out"
i=0
while IFS= read -r args; do
  [ -z "$args" ] && continue
  i=$((i + 1))
  # shellcheck disable=SC2086
  $bin $args | python3 -c '
import json, sys
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in ("seconds", "run_seconds", "wall_seconds")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
print(json.dumps(strip(json.load(sys.stdin)), indent=1, sort_keys=True))' > "$out/$(printf %02d $i).json"
  echo "$args" > "$out/$(printf %02d $i).args"
done <<'LIST'
simulate --algo flash2 --seq 8192 --head-dim 128 --json
simulate --algo flash1 --seq 8192 --head-dim 128 --json
simulate --algo standard --seq 8192 --head-dim 128 --json
simulate --algo flash2 --seq 4096 --head-dim 64 --causal --pass both --json
simulate --algo flash1 --seq 1000 --head-dim 64 --pass backward --json --check
simulate --algo standard --seq 1000 --head-dim 64 --pass both --causal --json --check
simulate --algo flash2 --seq 333 --head-dim 96 --window 50 --pad-left 7 --pass both --json --check
simulate --algo flash2 --seq 40000 --head-dim 128 --json
simulate --algo standard --seq 65536 --head-dim 128 --json --l2 off
simulate --algo flash2 --seq 2048 --head-dim 128 --gpu A100-40GB --sram 49152 --json
simulate --algo flash1 --seq 4096 --head-dim 128 --batch 4 --heads 8 --dtype bf16 --ceilings measured --json
simulate --algo flash2 --seq 8192 --head-dim 128 --block-rows 64 --block-cols 64 --pass backward --json
softmax --json
scenario gpt2-medium --json
sweep --algo flash2 --param block-rows --values 16,32,64,128 --seq 8192 --head-dim 128 --json
LIST
echo "$i configurations in $out"
