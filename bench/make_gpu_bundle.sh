#!/usr/bin/env bash
# Bundles the CUDA build of openrnn-bench (cuDNN comparator, no oneDNN) for the GPU machine:
#   cmake -S . -B build-bench/gpu -DOPENRNN_CUDA=ON -DOPENRNN_BENCH_ONEDNN=OFF -DOPENRNN_BUILD_TESTS=OFF \
#         -DOPENRNN_BUILD_APPS=OFF && make -C build-bench/gpu -j2 openrnn-bench
#   bench/make_gpu_bundle.sh [BUILD_DIR]       -> .bundle-bench/ (ignored by git; pass it to the device tool's carry)
# Then, there:  bash bench/gpu_check.sh .bundle-bench
# libcudnn, libcudart and cuBLAS are never bundled (the GPU machine has its own, same sonames); neither is OpenBLAS
# (36 MB, present there) nor oneDNN (the CUDA build does not link it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench/gpu}
bundle=$root/.bundle-bench
rm -rf "$bundle"
/work/shared/tools/device-bundle "$bundle" "$build/bench/openrnn-bench"
rm -f "$bundle/lib/libopenblas.so.0"
if ls "$bundle/lib" | grep -Eq 'dnnl|cudnn'; then echo "bundle holds oneDNN or cuDNN: refusing" >&2; exit 1; fi
(cd "$root" && git rev-parse --short HEAD) > "$bundle/TAG"
ls -la "$bundle/bin" "$bundle/lib"
