#!/usr/bin/env bash
# scripts/gpu_build.sh — build here what scripts/gpu_session.sh runs on the lent GPU: the `cuda`
# preset (Release, CUDA kernels, no app) into build-cuda/, plus the one shared library the device
# image lacks (toml++, which the lessons in `flashsim` load) copied beside the binaries.
# Then: device run, carry ["build-cuda/bin"], command "bash scripts/gpu_session.sh" (see there).
# PRESET=cuda-dev adds ptxas's register-spill report for every kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
preset=${PRESET:-cuda}
flashsim_install_deps
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc 2>/dev/null || echo 2)"
cp -P /usr/lib/x86_64-linux-gnu/libtomlplusplus.so.3* build-cuda/bin/
echo "built: $(ls build-cuda/bin | tr '\n' ' ')"
