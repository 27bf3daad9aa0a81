#!/usr/bin/env bash
# One command: install dependencies, build everything (the CUDA code too when nvcc is present), run every test.
# Tests that need a GPU skip without one; tests that need real data read OPENRNN_DATA and skip when it is unset.
# Usage: tools/run-tests.sh [build-dir]        (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
"$root/tools/install-deps.sh"
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
jobs=$(nproc)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs"
cd "$build"
ctest --output-on-failure -j "$jobs" --timeout 900
