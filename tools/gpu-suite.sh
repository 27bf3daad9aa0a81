#!/usr/bin/env bash
# The GPU suite, run ON the GPU machine from the bundle that tools/make-bundle.sh made (nothing is built there).
#
# usage: bash tools/gpu-suite.sh [options] [-- BENCH ARGS...]
#   --bundle DIR        bundle folder (default: .bundle at the repository root)
#   --filter F          gtest filter of the test step (default: everything)
#   --shards N          test processes in parallel, gtest sharding (default 8; they share the one GPU)
#   --test-timeout S    seconds per test step (default 420; Cases/CudaPersistent alone takes ~200 s on an H100)
#   --san-filter F      compute-sanitizer memcheck subset (default: every GPU-only CUDA test but Cases/CudaPersistent,
#                       and the harness's forward table on CUDA; the harness's backward table with its finite
#                       differences and its feature cases are left out for time: with the feature cases the step
#                       took over 180 s on an H100)
#   --race-filter F     racecheck + synccheck subset (kernels with shared memory or barriers; default: one
#                       LSTM and one GRU reduced-precision case (fused step kernel: shared memory + barriers))
#                       Each sanitizer step also runs the persistent kernels through openrnn-bench (training, T = 2,
#                       LSTM and GRU: float32 H = 256 B = 2, float16 H = 512 B = 3, bfloat16 H = 1024 B = 2, up to
#                       150 s each): the gtest cases of Cases/CudaPersistent run ~20 kernel environments each, too
#                       many for a sanitizer's time. racecheck hazards inside cuBLAS's own GEMM kernels (nvjet) are
#                       counted apart; a bench run that ends without a sanitizer summary counts as an error.
#   --san-algo A        OPENRNN_TEST_ALGO for the sanitizer steps (default auto; persistent forces the kernels)
#   --san-timeout S     seconds of the memcheck step (default 300); --race-timeout S: racecheck, synccheck (60 each)
#   --bench-timeout S   seconds per bench variant (default 120)
#   --also-env VAR=VAL  run the CUDA tests (filter *Cuda*:*cuda*) a second time with VAR=VAL set (e.g.
#                       OPENRNN_STD_FUSED=0 to cover the cuBLAS step path where the fused kernel would run);
#                       --also-filter F replaces that filter
#   --bench-variants "A=1 A=0"  run the bench once per environment assignment, rows marked by variant
#   --no-sanitizer, --no-bench, --no-tests, --no-persistent (skip the OPENRNN_TEST_ALGO=persistent pass),
#   --no-standard (skip the OPENRNN_TEST_ALGO=standard pass)
#   -- ARGS             openrnn-bench arguments (default: a small LSTM/GRU grid, standard algorithm vs cuDNN, each
#                       row in a process of its own: --isolate)
# Logs: one file per step under $OUT (or ./gpu-suite-out when OUT is unset); at most 8 files, the device tool's limit.
# The summary table (pass/fail/skip per step, sanitizer error counts, bench rows) is printed last.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle=$root/.bundle
filter="*"
shards=8
test_timeout=420
san_filter='*Cuda*:Table/Forward.*_cuda-*_cpu:Cases/CudaPersistent.*'
race_filter='Cases/CudaStandard.ReducedPrecisionMatchesFloat64/lstm_bidir_2layer_ragged_batchmajor_dropout:Cases/CudaStandard.ReducedPrecisionMatchesFloat64/gru_H17_no_hy'
san_timeout=300
race_timeout=60
bench_timeout=120
san_algo=auto
do_tests=1 do_san=1 do_bench=1 do_persistent=1 do_standard=1
also_env=""
also_filter='*Cuda*:*cuda*'
bench_variants=""
bench_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --bundle) bundle=$(cd "$2" && pwd); shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --test-timeout) test_timeout=$2; shift 2 ;;
    --san-filter) san_filter=$2; shift 2 ;;
    --race-filter) race_filter=$2; shift 2 ;;
    --san-timeout) san_timeout=$2; shift 2 ;;
    --race-timeout) race_timeout=$2; shift 2 ;;
    --bench-timeout) bench_timeout=$2; shift 2 ;;
    --also-env) also_env=$2; shift 2 ;;
    --also-filter) also_filter=$2; shift 2 ;;
    --bench-variants) bench_variants=$2; shift 2 ;;
    --no-sanitizer) do_san=0; shift ;;
    --no-bench) do_bench=0; shift ;;
    --no-tests) do_tests=0; shift ;;
    --no-persistent) do_persistent=0; shift ;;
    --no-standard) do_standard=0; shift ;;
    --san-algo) san_algo=$2; shift 2 ;;
    --) shift; bench_args=("$@"); break ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "gpu-suite: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
# --isolate: each row in a process of its own, so that no openrnn row is timed after cuDNN's calls (bench/README.md).
[ ${#bench_args[@]} -gt 0 ] || bench_args=(--isolate --cell lstm,gru --batch 16,64 --hidden 512,1024 --seq 100
                                           --dtype float32,float16 --mode inference,training --algo standard
                                           --warmup 2 --reps 10)
out=${OUT:-$root/gpu-suite-out}
mkdir -p "$out"
"$root/tools/unpack-bundle.sh" "$bundle"
export LD_LIBRARY_PATH=$bundle/lib:${LD_LIBRARY_PATH:-}
tests=$bundle/bin/openrnn_tests
bench=$bundle/bin/openrnn-bench
summary=()
status=0
row() { summary+=("$(printf '%-22s %s' "$1" "$2")"); }

# ---- device ----------------------------------------------------------------------------------------------------------
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv,noheader 2>&1
  nvidia-smi 2>&1 | head -20
  echo "bundle: $bundle"; ls -la "$bundle/bin" 2>&1
} >"$out/00-device.log" 2>&1
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "gpu: ${gpu:-nvidia-smi failed}"
row device "${gpu:-nvidia-smi failed}"

# ---- tests (sharded) -------------------------------------------------------------------------------------------------
# Sums gtest's final counts over a log: passed, failed, skipped.
count() {
  local p f s
  p=$(grep -h '^\[  PASSED  \] [0-9]* test' "$@" | awk '{s+=$4} END{print s+0}')
  f=$(grep -h '^\[  FAILED  \] [0-9]* test' "$@" | awk '{s+=$4} END{print s+0}')
  s=$(grep -h '^\[  SKIPPED \] [0-9]* test' "$@" | awk '{s+=$4} END{print s+0}')
  echo "$p $f $s"
}
run_tests() {  # name algo logfile [filter] [VAR=VAL]
  local name=$1 algo=$2 log=$out/$3 tmp
  local tfilter=${4:-$filter} extra=${5:-}
  tmp=$(mktemp -d)
  local start=$SECONDS
  for ((i = 0; i < shards; ++i)); do
    env $extra OPENRNN_TEST_ALGO=$algo GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i OPENRNN_NUM_THREADS=2 \
      timeout "$test_timeout" "$tests" --gtest_filter="$tfilter" --gtest_color=no >"$tmp/shard$i.log" 2>&1 &
  done
  local rcs=0
  for job in $(jobs -p); do wait "$job" || rcs=$((rcs + 1)); done
  cat "$tmp"/shard*.log >"$log"
  read -r p f s <<<"$(count "$tmp"/shard*.log)"
  local crashed=""
  # A shard that died (timeout, crash) prints no final PASSED line: report it.
  local done_shards
  done_shards=$(grep -l '^\[==========\] .* ran\.' "$tmp"/shard*.log | wc -l)
  [ "$done_shards" -lt "$shards" ] && crashed=" ($((shards - done_shards)) shard(s) did not finish)"
  echo "$name: passed $p, failed $f, skipped $s, $((SECONDS - start)) s$crashed"
  grep -h '^\[  FAILED  \] [A-Za-z]' "$tmp"/shard*.log | sort -u | head -40
  row "$name" "passed $p  failed $f  skipped $s  ($((SECONDS - start)) s)$crashed"
  { [ "$f" -gt 0 ] || [ -n "$crashed" ]; } && status=1
  rm -rf "$tmp"
}
if [ $do_tests = 1 ]; then
  if [ -x "$tests" ]; then
    [ $do_standard = 1 ] && run_tests "tests standard" standard 10-tests-standard.log
    if [ $do_persistent = 1 ] && [ -e "$root/src/cuda/persistent_algo.cuh" ]; then
      run_tests "tests persistent" persistent 11-tests-persistent.log
    fi
    if [ -n "$also_env" ]; then
      run_tests "cuda tests $also_env" standard 12-tests-env.log "$also_filter" "$also_env"
    fi
  else
    row tests "openrnn_tests missing from $bundle"
    status=1
  fi
fi

# ---- compute-sanitizer -----------------------------------------------------------------------------------------------
sanitize() {  # tool filter logfile timeout
  local tool=$1 f=$2 log=$out/$3 limit=$4 start=$SECONDS
  OPENRNN_TEST_ALGO=$san_algo timeout "$limit" compute-sanitizer --tool "$tool" --print-limit 50 \
    "$tests" --gtest_filter="$f" --gtest_color=no >"$log" 2>&1
  local rc=$?
  local errs
  # memcheck/synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: ... (N errors, M warnings)".
  errs=$(grep -h 'ERROR SUMMARY:' "$log" | tail -1 | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p')
  [ -n "$errs" ] || errs=$(grep -h 'RACECHECK SUMMARY:' "$log" | tail -1 | sed -n 's/.*(\([0-9]*\) error.*/\1/p')
  read -r p fl s <<<"$(count "$log")"
  local note=""
  [ $rc = 124 ] && note=" TIMED OUT"
  # The persistent kernels through the bench (appended to the same log).
  local berrs=0 blib=0 btimeout=0 shape r
  if [ -x "$bench" ] && [ -e "$root/src/cuda/persistent_algo.cuh" ]; then
    for shape in "float32 256 2" "float16 512 3" "bfloat16 1024 2"; do
      read -r dt hh bb <<<"$shape"
      echo "### bench under $tool: $dt H=$hh B=$bb" >>"$log"
      timeout 150 compute-sanitizer --tool "$tool" --print-limit 50 "$bench" --device cuda --seq 2 \
        --mode training --algo persistent --compare none --warmup 0 --reps 1 --cell lstm,gru --dtype "$dt" \
        --hidden "$hh" --batch "$bb" >"$log.b" 2>&1 || { r=$?; [ $r = 124 ] && btimeout=1; }
      cat "$log.b" >>"$log"
      grep -q 'ERROR SUMMARY:\|RACECHECK SUMMARY:' "$log.b" || berrs=$((berrs + 1))  # no summary: killed or crashed
      if [ "$tool" = racecheck ]; then
        berrs=$((berrs + $(grep 'Race reported' "$log.b" | grep -cv nvjet)))
        blib=$((blib + $(grep 'Race reported' "$log.b" | grep -c nvjet)))
      else
        berrs=$((berrs + $(grep -h 'ERROR SUMMARY:' "$log.b" | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' |
          awk '{s+=$1} END{print s+0}')))
      fi
    done
    rm -f "$log.b"
    [ $btimeout = 1 ] && note="$note (bench TIMED OUT)"
  fi
  local bnote="; persistent via bench: errors $berrs"
  [ "$blib" -gt 0 ] && bnote="$bnote (+$blib reports in cuBLAS's nvjet kernels)"
  echo "sanitizer $tool: errors ${errs:-?}, tests passed $p failed $fl skipped $s, rc $rc$note$bnote"
  row "sanitizer $tool" "errors ${errs:-?}  tests passed $p failed $fl  ($((SECONDS - start)) s)$note$bnote"
  { [ "${errs:-1}" != 0 ] || [ "$fl" -gt 0 ] || [ "$berrs" != 0 ] || [ -n "$note" ]; } && status=1
}
if [ $do_san = 1 ] && [ -x "$tests" ]; then
  if command -v compute-sanitizer >/dev/null; then
    sanitize memcheck "$san_filter" 20-memcheck.log "$san_timeout"
    sanitize racecheck "$race_filter" 21-racecheck.log "$race_timeout"
    sanitize synccheck "$race_filter" 22-synccheck.log "$race_timeout"
  else
    row sanitizer "compute-sanitizer not found"
  fi
fi

# ---- bench -----------------------------------------------------------------------------------------------------------
if [ $do_bench = 1 ]; then
  if [ -x "$bench" ]; then
    : >"$out/30-bench.log"
    for v in ${bench_variants:-default}; do
      start=$SECONDS
      echo "### variant $v" >>"$out/30-bench.log"
      if [ "$v" = default ]; then
        timeout "$bench_timeout" "$bench" --device cuda "${bench_args[@]}" >"$out/bench-$v.tmp" 2>&1
      else
        env "$v" timeout "$bench_timeout" "$bench" --device cuda "${bench_args[@]}" >"$out/bench-$v.tmp" 2>&1
      fi
      rc=$?
      nrows=$(grep -c '^[A-Za-z_]*,[a-z0-9]*,\(inference\|training\),' "$out/bench-$v.tmp")
      # Rows get a trailing ",variant=..." field so the variants stay apart in one log.
      awk -v v="$v" '/^[A-Za-z_]+,[a-z0-9]+,(inference|training),/{print $0 ",variant=" v; next} {print}' \
        "$out/bench-$v.tmp" >>"$out/30-bench.log"
      rm -f "$out/bench-$v.tmp"
      row "bench $v" "$nrows rows, rc $rc ($((SECONDS - start)) s)"
    done
  else
    row bench "openrnn-bench not in the bundle"
  fi
fi

# ---- summary (last) --------------------------------------------------------------------------------------------------
{
  echo "==================== gpu-suite summary ===================="
  for r in "${summary[@]}"; do echo "$r"; done
  if [ -s "$out/30-bench.log" ]; then
    echo "---- bench rows against cuDNN standard and cuDNN best (all algorithms: 30-bench.log)"
    grep -E '^[A-Za-z_]+,[a-z0-9]+,(inference|training),' "$out/30-bench.log" |
      awk -F, '$14 ~ /^(standard|best)/ || $13 == "none" {printf "%-5s %-8s %-9s B=%-4s H=%-5s %-10s %9s us | %-22s %9s us  x%-6s %s %s\n", $1,$2,$3,$4,$5,$10,$11,$14,$15,$16,$18,$NF}'
    grep '^# .*geomean\|^# .*geometric' "$out/30-bench.log"
  fi
  echo "overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
} | tee "$out/99-summary.txt"
exit $status
