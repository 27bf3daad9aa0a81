#!/usr/bin/env bash
# The demos on the GPU machine, for the lead: checks the CLI's CUDA ops against its CPU ops, trains both demos with
# `--device cuda` and their defaults, samples text, and times the PyTorch twins (cuDNN and native). Logs go to OUT;
# a short summary is printed last.
#
# usage: apps/tests/gpu_demos.sh BUNDLE DATA OUT [quick]
#   BUNDLE  folder made by /work/shared/tools/device-bundle holding bin/openrnn and bin/openrnn_apps_tests
#   DATA    data folder (mnist/, tinyshakespeare/)
#   quick   shorter runs (mnist 3 epochs, char 1000 steps) when device time is short
set -uo pipefail
bundle=$(realpath "$1"); data=$(realpath "$2"); out=$3; mode=${4:-full}
mkdir -p "$out"
export LD_LIBRARY_PATH=$bundle/lib:${LD_LIBRARY_PATH:-}
bin=$bundle/bin/openrnn
here=$(cd "$(dirname "$0")/../.." && pwd)
epochs=10; steps=2000; pt_epochs=3; pt_steps=600
if [ "$mode" = quick ]; then epochs=3; steps=1000; pt_epochs=2; pt_steps=400; fi

OPENRNN_DATA=$data "$bundle/bin/openrnn_apps_tests" > "$out/apps_tests.log" 2>&1
echo "apps_tests exit=$?" > "$out/summary.txt"
tail -n 3 "$out/apps_tests.log" >> "$out/summary.txt"

/usr/bin/time -f "wall %e s" "$bin" mnist --device cuda --data "$data" --epochs $epochs --metrics "$out/mnist_cuda.jsonl" \
  > "$out/mnist_cuda.log" 2>&1
rc=$?; echo "openrnn mnist --device cuda --epochs $epochs exit=$rc" >> "$out/summary.txt"
[ $rc -eq 0 ] || grep -m2 'error' "$out/mnist_cuda.log" >> "$out/summary.txt"
grep -E '^epoch=|wall' "$out/mnist_cuda.log" | tail -n 3 >> "$out/summary.txt"

/usr/bin/time -f "wall %e s" "$bin" char train "$data/tinyshakespeare/input.txt" --device cuda --steps $steps \
  --metrics "$out/char_cuda.jsonl" --save "$out/char_cuda.safetensors" > "$out/char_cuda.log" 2>&1
rc=$?; echo "openrnn char train --device cuda --steps $steps exit=$rc" >> "$out/summary.txt"
[ $rc -eq 0 ] || grep -m2 'error' "$out/char_cuda.log" >> "$out/summary.txt"
grep '^step=' "$out/char_cuda.log" | sort -t= -k4 -g | head -n 1 | sed 's/^/best val_loss: /' >> "$out/summary.txt"
grep -E '^step=|wall' "$out/char_cuda.log" | tail -n 2 >> "$out/summary.txt"
"$bin" char sample --device cuda --checkpoint "$out/char_cuda.safetensors" --prime "ROMEO:" --length 300 \
  > "$out/sample.txt" 2>&1
echo "sample exit=$?" >> "$out/summary.txt"

if python3 -c "import torch" 2> /dev/null; then
  python3 "$here/bench/pytorch_demos.py" mnist --data "$data" --epochs $pt_epochs > "$out/pt_mnist_cudnn.log" 2>&1
  python3 "$here/bench/pytorch_demos.py" mnist --data "$data" --epochs $pt_epochs --no-cudnn > "$out/pt_mnist_native.log" 2>&1
  python3 "$here/bench/pytorch_demos.py" char --data "$data" --steps $pt_steps > "$out/pt_char_cudnn.log" 2>&1
  python3 "$here/bench/pytorch_demos.py" char --data "$data" --steps $pt_steps --no-cudnn > "$out/pt_char_native.log" 2>&1
  for f in pt_mnist_cudnn pt_mnist_native pt_char_cudnn pt_char_native; do
    echo "$f: $(grep -A5 '^summary:' "$out/$f.log" | tail -n +2 | tr -s ' ')" >> "$out/summary.txt"
  done
else
  echo "no torch: PyTorch comparison skipped" >> "$out/summary.txt"
fi
cat "$out/summary.txt"
