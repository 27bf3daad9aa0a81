#!/usr/bin/env bash
# Builds the GPU bundle here and packs it for the GPU machine (no building there).
#
# usage: tools/make-bundle.sh [--data mnist,tinyshakespeare,...] [--jobs N] [--no-build] [--no-cli] [--baseline]
#   configures and builds build-gpu/ (-DOPENRNN_CUDA=ON -DOPENRNN_BENCH_ONEDNN=OFF, Release), then copies
#   openrnn_tests, openrnn-bench and the openrnn CLI (those that were built) and libopenrnn.so with the shared
#   libraries the GPU image lacks (/work/shared/tools/device-bundle) into .bundle/ at the repository root.
#   libopenblas.so.0 (the GPU machine has its own) and any libdnnl are removed. --data copies the named folders of
#   $OPENRNN_DATA_SRC (default /work/shared/data) into .bundle/data/ (optional; mnist is 12 MB). --no-cli leaves the
#   openrnn CLI out (it links the library statically: ~30 MB, which with the shared library passes the limit below).
#   --baseline keeps the library of the bundle being replaced as .bundle/baseline/libopenrnn.so.0 (with its
#   BUILD_INFO), so that one device call can time two builds in alternating processes:
#     LD_LIBRARY_PATH=$PWD/.bundle/baseline:$PWD/.bundle/lib .bundle/bin/openrnn-bench ...   (the baseline)
#     LD_LIBRARY_PATH=$PWD/.bundle/lib .bundle/bin/openrnn-bench ...                          (this build)
#   A runtime switch between two versions of a kernel changes its register allocation (session 37: 48-88 bytes of
#   spills in five v10 instantiations), so an A/B of kernel code is best made between two builds.
#   .bundle/BUILD_INFO records the commit and whether the tree had uncommitted changes.
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
baseline=0
while [ $# -gt 0 ]; do
  case $1 in
    --data) data=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --no-cli) cli=0; shift ;;
    --baseline) baseline=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
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

# --baseline: the library of the bundle about to be replaced (plain, .gz or .xz), kept aside with its BUILD_INFO.
keep=""
if [ $baseline = 1 ]; then
  keep=$(mktemp -d)
  if [ -f "$out/lib/libopenrnn.so.0" ]; then cp "$out/lib/libopenrnn.so.0" "$keep/"
  elif [ -f "$out/lib/libopenrnn.so.0.xz" ]; then xz -dc "$out/lib/libopenrnn.so.0.xz" > "$keep/libopenrnn.so.0"
  elif [ -f "$out/lib/libopenrnn.so.0.gz" ]; then gzip -dc "$out/lib/libopenrnn.so.0.gz" > "$keep/libopenrnn.so.0"
  else echo "make-bundle: --baseline: no earlier bundle library in $out/lib" >&2; exit 1; fi
  if [ -f "$out/BUILD_INFO" ]; then cp "$out/BUILD_INFO" "$keep/"; else echo "unknown (built before BUILD_INFO)" > "$keep/BUILD_INFO"; fi
fi
rm -rf "$out"
"$bundler" "$out" "${files[@]}"
# What the library was built from: the commit, uncommitted changes under src/ and include/, and with --no-build
# that the build folder was taken as it stood (its sources may differ from the tree's).
info=$(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
(cd "$root" && git diff --quiet HEAD -- src include 2>/dev/null) || info="$info +uncommitted changes in src/include"
[ $do_build = 1 ] || info="$info (--no-build: build-gpu/ as last built)"
echo "$info, packed $(date -u +%FT%TZ)" > "$out/BUILD_INFO"
if [ -n "$keep" ]; then
  mkdir -p "$out/baseline"
  mv "$keep/libopenrnn.so.0" "$keep/BUILD_INFO" "$out/baseline/"
  rmdir "$keep"
fi
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
# session 33): where the bundle is over 40 MiB, the libraries over 16 MiB travel compressed, and
# tools/unpack-bundle.sh (which tools/gpu-suite.sh calls) restores them on the GPU machine. xz -1 where this machine
# has xz (session 37: 72 MB -> 17.8 MB in ~3 s on 8 threads, against gzip -1's 27 MB), gzip -1 otherwise.
if [ "$(du -sk "$out" | awk '{print $1}')" -gt $((40 * 1024)) ]; then
  for f in "$out"/lib/* "$out"/baseline/*; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $((16 * 1024 * 1024)) ] || continue
    if command -v xz >/dev/null 2>&1; then xz -1 -T0 "$f"; else gzip -1 "$f"; fi
  done
fi

kib=$(du -sk "$out" | awk '{print $1}')
echo "make-bundle: $out holds $(ls "$out/bin" | tr '\n' ' ')and $(ls "$out/lib" | wc -l) libraries, $((kib / 1024)) MiB"
if [ "$kib" -gt $((56 * 1024)) ]; then
  echo "make-bundle: the bundle is over 56 MiB; drop data sets or binaries" >&2
  exit 1
fi
