#!/usr/bin/env bash
# The GPU check of dev/lab/auto_rnn_rule.diff (session 40; apply the diff, build a bundle with tools/make-bundle.sh,
# carry .bundle and run this from the repository root on the GPU machine). AUTO's RNN rule (PERSISTENT at float32 H = 256 B <= 12, one direction): the new test,
# the trace, AUTO against PERSISTENT and STANDARD forced.
set -uo pipefail
OUT=${OUT:-/tmp/auto_rnn_rule_check}; mkdir -p "$OUT"
cd "$(dirname "$0")/../.."  # dev/lab -> the repository root
B=$PWD/.bundle; tools/unpack-bundle.sh >/dev/null
export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}
X=$B/bin/openrnn-bench; TST=$B/bin/openrnn_tests
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 60 $TST --gtest_filter='CudaStream.*' 2>&1 | grep -E '^\[  (PASSED|FAILED|  OK|SKIPPED) ' | tail -8
g="--device cuda --cell rnn_tanh,rnn_relu --batch 1,4,12,13 --hidden 256 --seq 100 --dtype float32 --mode inference,training --warmup 2 --reps 7 --graph --compare none --bidirectional 0,1"
OPENRNN_PERSIST_TRACE=1 timeout 30 $X $g --seq 5 --reps 1 --warmup 0 --algo auto 2>&1 | grep "PERSISTENT forward" | sort -u
timeout 90 $X $g --algo all --csv $OUT/rnn_all.csv > /dev/null 2>&1; echo bench rc $?
python3 - $OUT/rnn_all.csv <<'PY'
import csv,sys
R={}
for x in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#')):
    if x.get('cell') in (None,'cell'): continue
    R.setdefault((x['cell'],x['mode'][:5],x['dirs'],int(x['B'])),{})[x['algo']]=float(x['us_per_step'])
print('cell mode dirs B | auto persistent standard')
for k in sorted(R): print(*k,'|',' '.join('%s=%.3f'%(a,v) for a,v in sorted(R[k].items())))
PY
