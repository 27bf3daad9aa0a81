#!/usr/bin/env bash
# Builds the GPU bundle here and packs it for the GPU machine (no building there).
#
# usage: tools/make-bundle.sh [--data mnist,tinyshakespeare,...] [--jobs N] [--no-build] [--no-cli]
#   configures and builds build-gpu/ (-DOPENRNN_CUDA=ON -DOPENRNN_BENCH_ONEDNN=OFF, Release), then copies
#   openrnn_tests, openrnn-bench and the openrnn CLI (those that were built) and libopenrnn.so with the shared
#   libraries the GPU image lacks (/work/shared/tools/device-bundle) into .bundle/ at the repository root.
#   libopenblas.so.0 (the GPU machine has its own) and any libdnnl are removed. --data copies the named folders of
#   $OPENRNN_DATA_SRC (default /work/shared/data) into .bundle/data/ (optional; mnist is 12 MB). --no-cli leaves the
#   openrnn CLI out (it links the library statically: ~30 MB, which with the shared library passes the limit below).
# On the GPU machine:  bash tools/gpu-suite.sh   (it finds .bundle/ by itself), or by hand:
#   tools/unpack-bundle.sh; LD_LIBRARY_PATH=$PWD/.bundle/lib:$LD_LIBRARY_PATH .bundle/bin/openrnn_tests
# The bundle must stay well under the 64 MiB a device call carries: the script fails above 56 MiB.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-gpu
out=$root/.bundle
jobs=2
data=""
do_build=1
cli=1
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --no-cli) cli=0; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "make-bundle: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bundler=${DEVICE_BUNDLE:-/work/shared/tools/device-bundle}
[ -x "$bundler" ] || { echo "make-bundle: $bundler not found or not executable" >&2; exit 1; }

if [ $do_build = 1 ]; then
  cmake -S "$root" -B "$build" -DOPENRNN_CUDA=ON -DOPENRNN_BENCH_ONEDNN=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
  # Build what exists; the bench and the CLI are optional parts of the bundle.
  targets="openrnn openrnn_tests"
  known=$(make -s -C "$build" help)
  for t in openrnn-bench openrnn-cli; do
    if grep -qx "\.\.\. $t" <<<"$known"; then targets="$targets $t"; fi
  done
  echo "make-bundle: building $targets in $build (-j$jobs)"
  make -C "$build" -j"$jobs" $targets
fi

files=()
lib=$(ls "$build"/src/libopenrnn.so.* 2>/dev/null | head -1 || true)
[ -n "$lib" ] || { echo "make-bundle: $build/src/libopenrnn.so.* missing" >&2; exit 1; }
[ -x "$build/tests/openrnn_tests" ] || { echo "make-bundle: $build/tests/openrnn_tests missing" >&2; exit 1; }
files+=("$build/tests/openrnn_tests" "$lib")
[ -x "$build/bench/openrnn-bench" ] && files+=("$build/bench/openrnn-bench")
[ $cli = 1 ] && [ -x "$build/apps/openrnn" ] && files+=("$build/apps/openrnn")

rm -rf "$out"
"$bundler" "$out" "${files[@]}"
# The library's soname (libopenrnn.so.0) is what the executables ask for.
soname=$(objdump -p "$lib" | awk '/SONAME/{print $2}')
[ -n "$soname" ] && [ ! -e "$out/lib/$soname" ] && cp -L "$lib" "$out/lib/$soname"
rm -f "$out"/lib/libopenblas.so* "$out"/lib/libdnnl*

if [ -n "$data" ]; then
  src=${OPENRNN_DATA_SRC:-/work/shared/data}
  mkdir -p "$out/data"
  IFS=',' read -ra sets <<<"$data"
  for d in "${sets[@]}"; do
    [ -d "$src/$d" ] || { echo "make-bundle: no data set $src/$d" >&2; exit 1; }
    cp -r "$src/$d" "$out/data/"
  done
fi

# The shared library's kernels (sm_90a, with line info) outgrew the device call's limit on their own (~72 MB in
# session 33): where the bundle is over 40 MiB, the libraries over 16 MiB travel gzip'd (-1: ~27 MB), and
# tools/unpack-bundle.sh (which tools/gpu-suite.sh calls) restores them on the GPU machine.
if [ "$(du -sk "$out" | awk '{print $1}')" -gt $((40 * 1024)) ]; then
  for f in "$out"/lib/*; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $((16 * 1024 * 1024)) ] && gzip -1 "$f"
  done
fi

kib=$(du -sk "$out" | awk '{print $1}')
echo "make-bundle: $out holds $(ls "$out/bin" | tr '\n' ' ')and $(ls "$out/lib" | wc -l) libraries, $((kib / 1024)) MiB"
if [ "$kib" -gt $((56 * 1024)) ]; then
  echo "make-bundle: the bundle is over 56 MiB; drop data sets or binaries" >&2
  exit 1
fi
