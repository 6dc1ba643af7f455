#!/usr/bin/env bash
# scripts/run.sh — install what is missing, build (Release, build/), start flashsim.
# With a display: the desktop app on the first lesson. Without one: the terminal walkthrough.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
flashsim_build default quiet

bin=build/bin
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$bin/flashsim-app" ]; then
  exec "$bin/flashsim-app" "$@"
fi

echo "(no display found: the terminal walkthrough follows; with a display, run.sh opens the app)"
echo
if "$bin/flashsim" lesson --list >/dev/null 2>&1; then
  first=$("$bin/flashsim" lesson --list | awk 'NF {print $1; exit}')
  "$bin/flashsim" lesson "$first" --all
else
  "$bin/flashsim" softmax
fi
echo
"$bin/flashsim" compare --seq 8192 --head-dim 128 --dtype fp16 --gpu H200
