#!/usr/bin/env bash
# scripts/deps.sh — install the Debian 12 packages flashsim needs, only those missing, and build.
# Sourced by run.sh and test.sh. Uses sudo when not root.
set -euo pipefail

FLASHSIM_PACKAGES=(
  cmake g++ make pkg-config git
  libeigen3-dev          # the simulator's matrices (Eigen 3.4)
  doctest-dev            # tests
  clang-format           # the C++/CUDA style (.clang-format), checked by a test (tests/check_format.sh)
  clang libclang-rt-14-dev   # the sanitizer build (debug preset): clang's ASan+UBSan compile about 3x faster than GCC's
  universal-ctags        # function lengths, checked by a test (tests/check_function_length.sh)
  nlohmann-json3-dev     # JSON output and the recorded GPU results
  libcli11-dev           # the CLI's argument parsing
  libtomlplusplus-dev    # lessons are TOML files (errors with line and column)
  libglfw3-dev libimgui-dev libgl-dev   # the desktop app (ImGui 1.86 with its GLFW/OpenGL3 backends)
  libstb-dev             # PNG screenshots
  fonts-dejavu-core      # the app's font
  xvfb xauth             # the app's tests and screenshots without a display
  pybind11-dev python3-dev   # the `flashsim` Python module (python/): the lab's tile machine and the simulator
  python3-numpy          # tiles and results as arrays; the lab's float64 checks
  python3-matplotlib     # the lab notebook's plots (lab/intro.ipynb)
  python3-nbformat python3-nbclient python3-ipykernel   # the notebook run headless as a test
)

flashsim_install_deps() {
  local missing=()
  for p in "${FLASHSIM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "flashsim: installing missing packages: ${missing[*]}" >&2
  local SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO="sudo"; else
      echo "flashsim: need root or sudo to install: ${missing[*]}" >&2; return 1; fi
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# flashsim_python_path: makes `import flashsim` work without setting a path, by a flashsim.pth in
# the user's site directory naming python/ (the package) and build/python/ (its C++ extension).
# Debian's python3 (the one python3-numpy serves); run from the repository root.
flashsim_python_path() {
  local py=/usr/bin/python3 site
  [ -x "$py" ] || py=python3
  site=$("$py" -m site --user-site 2>/dev/null) || return 0
  mkdir -p "$site" && printf '%s\n%s\n' "$PWD/python" "$PWD/build/python" >"$site/flashsim.pth"
}

# flashsim_build PRESET [quiet]: installs what is missing, then configures and builds a CMake preset
# (default: Release in build/; debug: ASan+UBSan in build-debug/). quiet: the build's progress goes
# to /dev/null. Extra configure arguments come from FLASHSIM_CMAKE_ARGS (test.sh and CI pass
# -DFLASHSIM_WERROR=ON). Leaves the job count in FLASHSIM_JOBS for ctest.
flashsim_build() {
  local preset=${1:-default}
  flashsim_install_deps
  FLASHSIM_JOBS=$(nproc 2>/dev/null || echo 2)
  cmake --preset "$preset" ${FLASHSIM_CMAKE_ARGS:-} >/dev/null
  flashsim_python_path
  if [ "${2:-}" = quiet ]; then
    cmake --build --preset "$preset" -j "$FLASHSIM_JOBS" >/dev/null
  else
    cmake --build --preset "$preset" -j "$FLASHSIM_JOBS"
  fi
}
