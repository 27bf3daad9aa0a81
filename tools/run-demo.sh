#!/usr/bin/env bash
# One command: install dependencies, build, and run the main job: `openrnn mnist` (LSTM on MNIST rows) on the GPU
# when one is present, else on the CPU. Data: $OPENRNN_DATA, else downloaded into ~/.cache/openrnn.
# Usage: tools/run-demo.sh [extra `openrnn mnist` options]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
"$root/tools/install-deps.sh"
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)" --target openrnn-cli
device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then device=cuda; fi
data=${OPENRNN_DATA:-$HOME/.cache/openrnn}
if [ ! -f "$data/mnist/t10k-labels-idx1-ubyte.gz" ]; then
  "$build/apps/openrnn" data download --dir "$data" mnist
fi
exec "$build/apps/openrnn" mnist --device "$device" --data "$data" "$@"
