#!/usr/bin/env bash
# scripts/run.sh — install what is missing, build (Release, build/), start flashsim.
# With a display: the desktop app on the first lesson. Without one: the terminal walkthrough.
# It says what it is doing at each stage; the build shows one progress line per file, with the
# compilers' own output kept in build/build.log (shown if the build fails).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh

say() { printf 'flashsim: %s\n' "$*" >&2; }

say "checking the Debian packages flashsim needs (scripts/deps.sh lists them and why)"
flashsim_install_deps
FLASHSIM_JOBS=$(nproc 2>/dev/null || echo 2)
if [ ! -x build/bin/flashsim ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    say "first build: about 5 minutes on 2 cores with the CUDA kernels (4 min 45 s measured on a fresh clone); later runs rebuild only what changed"
  else
    say "first build: a few minutes on 2 cores (no nvcc found: the CUDA kernels, about half of it, are left out); later runs rebuild only what changed"
  fi
fi
say "configuring (cmake --preset default)"
mkdir -p build
cmake --preset default >build/configure.log 2>&1 || { cat build/configure.log >&2; exit 1; }
say "building with $FLASHSIM_JOBS jobs (full compiler output in build/build.log)"
start=$(date +%s)
set +e
cmake --build --preset default -j "$FLASHSIM_JOBS" 2>&1 | tee build/build.log |
  grep --line-buffered -E '^\[ *[0-9]+%\] (Building|Linking)' |
  sed -u -E 's#^\[ *([0-9]+%)\] (Building|Linking) [A-Za-z+]+ (object|executable|static library) #  [\1] \2 #; s#CMakeFiles/[^/]*\.dir/##' >&2
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  say "the build failed; its last lines (all of it: build/build.log):"
  grep -E 'error|Error' build/build.log | head -20 >&2 || tail -30 build/build.log >&2
  exit "$rc"
fi
say "build done in $(( $(date +%s) - start )) s"
flashsim_python_path  # `import flashsim` from any directory (the lab: flashsim lab --list)

bin=build/bin
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$bin/flashsim-app" ]; then
  say "opening the app on the first lesson"
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
