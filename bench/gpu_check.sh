#!/usr/bin/env bash
# Runs openrnn-bench on the GPU machine from a bundle made here (bench/make_gpu_bundle.sh), in two parts:
#   1. check: tiny problems, every dtype, LSTM/GRU, 1-2 layers, uni/bidirectional, inference/training, all four
#      cuDNN algorithms, with --reference: cuDNN and openrnn are each compared with the float64 reference, and
#      with each other, before anything is timed;
#   2. grid: LSTM/GRU, B 1,16,64, H 256,512, T 100, float32/bfloat16, inference/training, openrnn's algorithms
#      against every cuDNN algorithm, timed (CUDA events, L2 flushed, median of 20).
# Usage on the GPU machine, from the repository root:  bash bench/gpu_check.sh [BUNDLE_DIR]   (logs under $OUT)
set -u
bundle=${1:-.bundle-bench}
tools/unpack-bundle.sh "$bundle"  # libraries tools/make-bundle.sh gzip'd, if any
out=${OUT:-/tmp/openrnn-bench-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$bundle/lib:${LD_LIBRARY_PATH:-}
export NVIDIA_TF32_OVERRIDE=0  # strict float32 everywhere: no library may slip into TF32
bin=$bundle/bin/openrnn-bench
tag=$(cat "$bundle/TAG" 2>/dev/null || echo unknown)

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv > "$out/nvidia-smi.txt" 2>&1
echo "== libraries the bench resolved"; ldd "$bin" | grep -E "cudnn|cublas|cudart|openrnn|not found"

echo "== 1. check (tiny, with the float64 reference)"
"$bin" --device cuda --cell lstm,gru --batch 4 --hidden 32 --seq 10 --dtype float32,float64,float16,bfloat16 \
  --mode inference,training --layers 1,2 --bidirectional 0,1 --algo all --reps 3 --warmup 1 --reference \
  --tag "$tag" --csv "$out/check.csv" > "$out/check.out" 2>&1
echo "exit $?"

echo "== 2. grid (timed)"
"$bin" --device cuda --cell lstm,gru --batch 1,16,64 --hidden 256,512 --seq 100 --dtype float32,bfloat16 \
  --mode inference,training --algo all --reps 20 --warmup 3 --tag "$tag" --csv "$out/grid.csv" \
  > "$out/grid.out" 2>&1
echo "exit $?"

# ---- summary (last, so that it is in the tail the device tool returns) ----
echo "================ summary"
head -8 "$out/check.out" | grep '^#'
echo "-- check: status by comparator algorithm (rows of openrnn algo standard)"
awk -F, '!/^#/ && $1 != "cell" && $10 !~ /persistent/ {s=$18; sub(/:.*/, "", s); c[$14 " " s]++} END {for (k in c) print "  " k ": " c[k]}' \
  "$out/check.csv" | sort
echo "-- check: worst reference difference per engine and dtype"
grep '^# reference check' "$out/check.out" | sed -E 's/^# reference check: [A-Z]+ ([a-z0-9]+) .*: ([A-Za-z]+( [a-z:]+)?) ([0-9.e+-]+|NA|nan) .*/\1 \2 \4/' |
  awk '{k=$1" "$2; v=$NF+0; if (!(k in m) || v>m[k]) m[k]=v} END {for (k in m) printf "  %-28s %.3g\n", k, m[k]}' | sort
echo "-- check: rows that are not ok (first 12)"
grep -v '^#' "$out/check.csv" | awk -F, 'NR>1 && $18 != "ok" && $18 !~ /^openrnn not supported/' | cut -c1-220 | head -12
echo "-- grid: openrnn vs cuDNN best (us/step)"
awk -F, '!/^#/ && $14 ~ /^best:/ {printf "  %s %s %s B=%s H=%s %s ours %s cudnn %s (%s) ratio %s\n", $1,$2,$3,$4,$5,$10,$11,$15,$14,$16}' \
  "$out/grid.csv" | head -60
grep '^# geomean' "$out/grid.csv"
echo "-- grid: rows with errors or disagreement"
grep -v '^#' "$out/grid.csv" | awk -F, 'NR>1 && ($18 ~ /DISAGREE|error/)' | cut -c1-200 | head -10
