#!/usr/bin/env bash
# scripts/test.sh — install what is missing, build (Release, build/), run every test with ctest.
# GPU tests skip (and say why) when no CUDA device is present. Ends with ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
flashsim_install_deps

jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs"
ctest --preset default -j "$jobs"
