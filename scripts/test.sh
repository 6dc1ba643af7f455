#!/usr/bin/env bash
# scripts/test.sh — install what is missing, build (Release, build/), run every test with ctest.
# GPU tests skip (and say why) when no CUDA device is present. Ends with ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
# warnings are errors in the test builds (not in run.sh's, where another compiler version's new
# warning should not stop a learner)
FLASHSIM_CMAKE_ARGS="-DFLASHSIM_WERROR=ON ${FLASHSIM_CMAKE_ARGS:-}" flashsim_build default
ctest --preset default -j "$FLASHSIM_JOBS"
