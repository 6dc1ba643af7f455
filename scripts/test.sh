#!/usr/bin/env bash
# scripts/test.sh — install what is missing, build (Release, build/), run every test with ctest.
# GPU tests skip (and say why) when no CUDA device is present. Ends with ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
flashsim_build default
ctest --preset default -j "$FLASHSIM_JOBS"
