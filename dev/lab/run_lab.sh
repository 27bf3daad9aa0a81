#!/usr/bin/env bash
# The lab's one GPU-machine script (run from the repository root there, after carrying the bundle): correctness
# (lab check, compute-sanitizer, lib_check, the test suite with PERSISTENT forced) in parallel, then the phase
# profile and the timing grid beside cuDNN alone on the GPU. Logs under $OUT; summary last.
# BUNDLE: the carried bundle folder (bin/lab_fwd, bin/lib_check, bin/openrnn_tests); VERSION: variant prefix
# checked and sanitized (v4_ = shipped); the bench times every compiled version (v3 and v4 side by side).
set -u
BUNDLE=${BUNDLE:-.bundle-lab}
tools/unpack-bundle.sh "$BUNDLE"  # libraries tools/make-bundle.sh gzip'd, if any
export LD_LIBRARY_PATH=$PWD/$BUNDLE/lib:${LD_LIBRARY_PATH:-}
X=$BUNDLE/bin/lab_fwd
OUT=${OUT:-/tmp/lab-out}
V=${VERSION:-v4_}
REPS=${REPS:-10}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
# ---- phase 1: correctness, four jobs at once (processes time-slice the GPU; nothing here is timed) ----
( timeout 170 "$X" check "$V" > "$OUT/check.csv" 2>&1; echo "check rc=$?" >> "$OUT/check.csv" ) &
( for tool in racecheck synccheck memcheck; do
    for vd in ${V}lstm_f32_H256_cl8_R128_kreg16_bc1:2 ${V}gru_bf16_H512_cl16_R96_kreg32_bc4:2 \
              ${V}lstm_f32_H1024_grid128_R32_kreg32_bc8:1 ${V}gru_f16_H256_grid32:2 ${V}rnn_relu_f32_H1024_cl16:1; do
      v=${vd%%:*}; d=${vd#*:}
      echo "== $tool $v D=$d"
      timeout 40 compute-sanitizer --tool $tool "$X" one "$v" 3 4 $d 1 2>&1 | tail -4
    done
  done > "$OUT/sanitizer.txt" 2>&1 ) &
( [ -x "$BUNDLE/bin/lib_check" ] && timeout 170 "$BUNDLE/bin/lib_check" > "$OUT/lib_check.txt" 2>&1 ) &
( [ -x "$BUNDLE/bin/openrnn_tests" ] && OPENRNN_TEST_ALGO=persistent timeout 170 "$BUNDLE/bin/openrnn_tests" \
    --gtest_filter='*cuda*:AlgoCoverage.*' > "$OUT/tests_persistent.txt" 2>&1;
  echo "tests rc=$?" >> "$OUT/tests_persistent.txt" ) &
wait
# ---- phase 2: alone on the GPU: phase profile, then the bench grid ----
{
  for v in v3_lstm_f32_H256_cl8_R128_kreg16_bc1 v4_lstm_f32_H256_cl8_R128_kreg16_bc1 \
           v3_lstm_f32_H512_cl16_R128_kreg16_bc1 v4_lstm_f32_H512_cl16_R128_kreg16_bc1 \
           v3_lstm_f32_H1024_grid128_R32_kreg32_bc1 v4_lstm_f32_H1024_grid128_R32_kreg32_bc1; do
    for b in 1 4; do timeout 20 "$X" prof "$v" $b 30; done
  done
} > "$OUT/prof.txt" 2>&1
timeout ${BENCH_S:-230} "$X" bench 100 "$REPS" all > "$OUT/bench.csv" 2>&1
echo "bench rc=$?" >> "$OUT/bench.csv"
echo "=== GPU"; cat "$OUT/gpu.txt"
echo "=== check"
grep -E "FAIL|LAUNCH" "$OUT/check.csv" | head -10
grep -c REFUSED "$OUT/check.csv" | sed 's/^/refused cases: /'
grep -E "CHECK SUMMARY|check rc" "$OUT/check.csv"
echo "=== sanitizer"
grep -E "^==|ERROR SUMMARY|RACECHECK SUMMARY|FAIL|refused|rror" "$OUT/sanitizer.txt" | grep -v "COMPUTE-SANITIZER" | head -40
echo "=== lib_check"; grep -E "FAIL|REFUSED|SUMMARY|us/step|query|AUTO" "$OUT/lib_check.txt" | head -40
echo "=== tests (PERSISTENT forced)"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|tests rc|algo persistent|refus" "$OUT/tests_persistent.txt" | head -30
echo "=== prof"; grep -E "^prof|refused" "$OUT/prof.txt"
echo "=== bench"
grep -E "FAIL|LAUNCH" "$OUT/bench.csv" | head -10
sed -n '/^SUMMARY/,$p' "$OUT/bench.csv"
