#!/usr/bin/env bash
# End-to-end tests of the `openrnn` CLI on tiny generated data (CPU backend, no network).
# usage: cli_tests.sh TEST OPENRNN_BINARY WORKDIR      exit 0 pass, 1 fail, 77 skipped
set -uo pipefail
test_name=$1
bin=$(realpath "$2")
work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
# One thread: on a shared, oversubscribed CI machine the tests are faster and no less deterministic that way.
export OPENRNN_NUM_THREADS=${OPENRNN_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

fail() { echo "FAIL: $*" >&2; exit 1; }
# Metrics records without the wall-clock fields (everything from "seconds" on is timing).
strip_timing() { sed -E 's/,"seconds":.*$/}/' "$1"; }

# A deterministic text of ~24 KB (a small vocabulary of words from a linear congruential generator).
make_text() {
  awk 'BEGIN { split("the of and to in is was he for it with as his on be at by had not are but from", w, " ");
               s = 12345; line = "";
               for (i = 0; i < 4500; i++) { s = (s * 1103515245 + 12345) % 2147483648; line = line w[1 + s % 23] " ";
                 if (length(line) > 60) { print line; line = "" } } print line }' > "$1"
}

# A tiny MNIST-shaped data set in DIR/mnist: N_TRAIN/N_TEST random 28x28 images, labels = (first pixel) mod 10,
# so there is something to learn.
be32() { printf "\\x$(printf %02x $(( ($1 >> 24) & 255 )))\\x$(printf %02x $(( ($1 >> 16) & 255 )))\\x$(printf %02x $(( ($1 >> 8) & 255 )))\\x$(printf %02x $(( $1 & 255 )))"; }
make_idx_set() {  # DIR PREFIX N
  local dir=$1 prefix=$2 n=$3
  head -c $(( n * 784 )) /dev/urandom > "$dir/pix.raw"
  { printf '\x00\x00\x08\x03'; be32 "$n"; be32 28; be32 28; cat "$dir/pix.raw"; } | gzip -c > "$dir/$prefix-images-idx3-ubyte.gz"
  { printf '\x00\x00\x08\x01'; be32 "$n";
    od -An -v -tu1 -w784 "$dir/pix.raw" | awk '{ printf "%d\n", $1 % 10 }' | while read -r l; do printf "\\x0$l"; done
  } | gzip -c > "$dir/$prefix-labels-idx1-ubyte.gz"
  rm -f "$dir/pix.raw"
}
make_mnist() {
  mkdir -p "$1/mnist"
  make_idx_set "$1/mnist" train 320
  make_idx_set "$1/mnist" t10k 64
}

CHAR_OPTS=(--layers 2 --hidden 24 --embed 8 --seq-len 12 --batch 4 --dropout 0.2 --lr 0.01 --every 5 --seed 7)

case "$test_name" in
resume_kill9)
  # A run killed with SIGKILL after a checkpoint and resumed must give exactly the loss curve of an uninterrupted run.
  make_text text.txt
  "$bin" char train text.txt "${CHAR_OPTS[@]}" --steps 30 --save a.safetensors --metrics a.jsonl > a.log || fail "run A"
  "$bin" char train text.txt "${CHAR_OPTS[@]}" --steps 30 --save b.safetensors --metrics b.jsonl --kill-at-step 17 > b.log
  rc=$?
  [ $rc -eq 137 ] || fail "run B should have died of SIGKILL (exit 137), got $rc"
  grep -q '^step=15 ' b.log || fail "run B did not reach its checkpoint at step 15"
  "$bin" char train text.txt --steps 30 --resume b.safetensors --save b.safetensors --metrics b.jsonl > b2.log ||
    fail "resume"
  grep -q 'resumed at step 15' b2.log || fail "resume did not start at step 15"
  diff <(strip_timing a.jsonl) <(strip_timing b.jsonl) || fail "char metrics differ after resume"
  [ "$(wc -l < a.jsonl)" -eq 6 ] || fail "expected 6 records"
  diff <(grep '^step=' a.log | sed 's/ chars_per_sec.*//' | tail -3) <(grep '^step=' b2.log | sed 's/ chars_per_sec.*//') ||
    fail "printed loss lines differ after resume"
  cmp <(tail -c +1 a.safetensors | od -c | head -0) /dev/null  # (both checkpoints exist)
  # The final checkpoints hold the same weights: compare everything but nothing timing-dependent is inside.
  cmp a.safetensors b.safetensors || fail "final checkpoints differ"

  # The same for `openrnn mnist`, killed in the middle of an epoch (10 batches per epoch, checkpoint every 4 steps).
  make_mnist data
  M_OPTS=(--data data --hidden 16 --batch 32 --epochs 3 --every 4 --seed 3)
  "$bin" mnist "${M_OPTS[@]}" --save ma.safetensors --metrics ma.jsonl > ma.log || fail "mnist run A"
  "$bin" mnist "${M_OPTS[@]}" --save mb.safetensors --metrics mb.jsonl --kill-at-step 14 > mb.log
  [ $? -eq 137 ] || fail "mnist run B should have died of SIGKILL"
  "$bin" mnist --data data --epochs 3 --every 4 --resume mb.safetensors --save mb.safetensors --metrics mb.jsonl \
    > mb2.log || fail "mnist resume"
  grep -q 'resumed at step 12' mb2.log || fail "mnist resume did not start at step 12"
  diff <(strip_timing ma.jsonl) <(strip_timing mb.jsonl) || fail "mnist metrics differ after resume"
  cmp ma.safetensors mb.safetensors || fail "final mnist checkpoints differ"
  ;;

corrupt_checkpoint)
  # Damaged checkpoints are refused with a clear message and exit status 1, and nothing on disk changes.
  make_text text.txt
  "$bin" char train text.txt "${CHAR_OPTS[@]}" --steps 5 --save good.safetensors --metrics m.jsonl > /dev/null ||
    fail "training"
  size=$(stat -c %s good.safetensors)
  head -c $(( size - 37 )) good.safetensors > truncated.safetensors
  head -c 100 good.safetensors > header_cut.safetensors
  : > empty.safetensors
  cp good.safetensors flipped.safetensors
  printf '\x7b\x7b' | dd of=flipped.safetensors bs=1 seek=8 conv=notrunc status=none   # break the JSON header
  cp good.safetensors biglen.safetensors
  printf '\xff\xff\xff\xff' | dd of=biglen.safetensors bs=1 seek=0 conv=notrunc status=none
  echo "not a checkpoint" > text.safetensors
  for f in truncated header_cut empty flipped biglen text; do
    before=$(sha256sum "$f.safetensors" m.jsonl)
    "$bin" char train text.txt --steps 10 --resume "$f.safetensors" --save "$f.safetensors" --metrics m.jsonl \
      > out.log 2> err.log
    rc=$?
    [ $rc -eq 1 ] || fail "$f: exit status $rc, expected 1"
    grep -q "error: .*$f.safetensors" err.log || fail "$f: message does not name the file: $(cat err.log)"
    [ "$before" = "$(sha256sum "$f.safetensors" m.jsonl)" ] || fail "$f: a file changed after a failed load"
    ls | grep -q '\.tmp\.' && fail "$f: temporary file left behind"
    "$bin" char sample --checkpoint "$f.safetensors" --length 5 > /dev/null 2>&1 && fail "$f: sample accepted it"
  done
  # A valid safetensors file that is not this kind of checkpoint (an MNIST one) is refused too.
  make_mnist data
  "$bin" mnist --data data --hidden 8 --batch 64 --epochs 1 --save mnist.safetensors > /dev/null || fail "mnist run"
  before=$(sha256sum mnist.safetensors)
  "$bin" char train text.txt --resume mnist.safetensors --save mnist.safetensors > /dev/null 2> err.log
  [ $? -eq 1 ] || fail "mnist checkpoint accepted by char train"
  grep -q "not from .openrnn char train" err.log || fail "unclear message: $(cat err.log)"
  [ "$before" = "$(sha256sum mnist.safetensors)" ] || fail "checkpoint changed"
  # Options that define the model cannot change on resume.
  "$bin" char train text.txt --resume good.safetensors --hidden 99 > /dev/null 2>&1
  [ $? -eq 2 ] || fail "--hidden with --resume should be a usage error"
  ;;

missing_data)
  mkdir empty
  "$bin" mnist --data empty > out.log 2> err.log
  [ $? -eq 1 ] || fail "exit status"
  for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    grep -q "empty/mnist/$f" err.log || fail "message does not name empty/mnist/$f: $(cat err.log)"
  done
  grep -q "openrnn data download --dir empty mnist" err.log || fail "message does not say how to download"
  OPENRNN_DATA=$PWD/empty "$bin" mnist --fashion 2> err.log
  grep -q "empty/fashion-mnist/train-images-idx3-ubyte.gz" err.log || fail "OPENRNN_DATA not used: $(cat err.log)"
  "$bin" char train --data empty 2> err.log
  [ $? -eq 1 ] || fail "char train without data"
  grep -q "empty/tinyshakespeare/input.txt" err.log || fail "char message does not name the file: $(cat err.log)"
  # A corrupt data file is named in the error.
  make_mnist data
  head -c 1000 data/mnist/train-images-idx3-ubyte.gz > x && mv x data/mnist/train-images-idx3-ubyte.gz
  "$bin" mnist --data data 2> err.log
  [ $? -eq 1 ] || fail "truncated gzip accepted"
  grep -q "train-images-idx3-ubyte.gz" err.log || fail "unclear message: $(cat err.log)"
  ;;

char_sample)
  make_text text.txt
  "$bin" char train text.txt "${CHAR_OPTS[@]}" --steps 40 --every 20 --save m.safetensors > train.log || fail "train"
  # The loss goes down on this repetitive text.
  first=$(grep -m1 '^step=20 ' train.log | sed -E 's/.* val_loss=([0-9.]+).*/\1/')
  last=$(grep '^step=40 ' train.log | sed -E 's/.* val_loss=([0-9.]+).*/\1/')
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a && b < 3.0) }' || fail "val_loss did not fall: $first -> $last"
  "$bin" char sample --checkpoint m.safetensors --prime "the " --length 80 --seed 5 > s1.txt || fail "sample"
  "$bin" char sample --checkpoint m.safetensors --prime "the " --length 80 --seed 5 > s2.txt || fail "sample 2"
  "$bin" char sample --checkpoint m.safetensors --prime "the " --length 80 --seed 5 --top-k 1 > g.txt || fail "greedy"
  cmp s1.txt s2.txt || fail "same seed, different text"
  [ "$(head -c 4 s1.txt)" = "the " ] || fail "prime not echoed"
  [ "$(wc -c < s1.txt)" -eq 85 ] || fail "length: $(wc -c < s1.txt) bytes"
  # Every sampled byte is in the training text's vocabulary.
  extra=$(tr -d 'a-z \n' < s1.txt | wc -c)
  [ "$extra" -eq 0 ] || fail "characters outside the vocabulary"
  "$bin" char sample --checkpoint m.safetensors --prime "XYZ" --length 5 > /dev/null 2> err.log
  [ $? -eq 1 ] && grep -q "not in the model's vocabulary" err.log || fail "unknown prime character accepted"
  ;;

plot)
  printf '%s\n' '{"epoch":1,"step":10,"loss":2.1,"acc":0.3,"val_acc":0.35,"lr":0.002,"seconds":1.5}' \
    '{"epoch":2,"step":20,"loss":1.2,"acc":0.6,"val_acc":0.62,"lr":0.0014,"seconds":1.4}' \
    '{"epoch":3,"step":30,"loss":0.7,"acc":0.8,"val_acc":0.79,"lr":0.00098,"seconds":1.4}' > m.jsonl
  "$bin" plot m.jsonl -o out.svg > /dev/null || fail "plot"
  grep -c '<polyline' out.svg | grep -qx 3 || fail "expected 3 curves (loss, acc, val_acc)"
  for label in '>loss<' '>acc<' '>val_acc<' '>step<'; do grep -q "$label" out.svg || fail "missing $label"; done
  if command -v xmllint > /dev/null; then xmllint --noout out.svg || fail "not well-formed XML"; fi
  echo '{"step":1,' >> m.jsonl
  "$bin" plot m.jsonl -o bad.svg 2> err.log && fail "malformed line accepted"
  grep -q "m.jsonl:4" err.log || fail "error does not name the line"
  [ ! -e bad.svg ] || fail "output written despite the error"
  ;;

data_offline)
  command -v curl > /dev/null || exit 77
  mkdir empty
  "$bin" data verify --dir empty mnist > out.log
  [ $? -eq 1 ] || fail "verify of an empty folder should fail"
  [ "$(grep -c '^missing' out.log)" -eq 4 ] || fail "verify should list 4 missing files"
  # A mirror serving a wrong file: the checksum rejects it and nothing is left under the real name.
  mkdir -p mirror/tinyshakespeare
  echo "not shakespeare" > mirror/tinyshakespeare/input.txt
  "$bin" data download --dir dl --mirror "file://$PWD/mirror" tinyshakespeare > out.log 2> err.log
  [ $? -eq 1 ] || fail "bad mirror file accepted"
  grep -q "expected 86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed" err.log || fail "$(cat err.log)"
  [ -z "$(ls -A dl/tinyshakespeare)" ] || fail "files left behind: $(ls dl/tinyshakespeare)"
  # An unreachable source names the file to put in place by hand.
  "$bin" data download --dir dl --mirror "file://$PWD/nowhere" tinyshakespeare > out.log 2> err.log
  [ $? -eq 1 ] || fail "missing source accepted"
  grep -q "Copy input.txt by hand to dl/tinyshakespeare/input.txt" err.log || fail "$(cat err.log)"
  if [ -n "${OPENRNN_DATA:-}" ]; then
    # With the real files as the mirror, every checksum verifies.
    "$bin" data download --dir dl --mirror "file://$OPENRNN_DATA" all > out.log || fail "download from local mirror"
    [ "$(grep -c '^ok' out.log)" -eq 9 ] || fail "expected 9 verified files"
    "$bin" data verify --dir dl > out.log || fail "verify"
    "$bin" data download --dir dl mnist | grep -q "already present" || fail "present files should not be fetched"
  fi
  ;;

mnist_real)
  [ -n "${OPENRNN_DATA:-}" ] || exit 77
  "$bin" mnist --limit 12800 --epochs 1 --hidden 64 --batch 64 --lr 0.005 --metrics m.jsonl > out.log || fail "run"
  line=$(grep '^epoch=1 ' out.log) || fail "no epoch line"
  for k in loss= acc= val_acc= seconds=; do echo "$line" | grep -q " $k" || fail "epoch line lacks $k: $line"; done
  acc=$(echo "$line" | sed -E 's/.* val_acc=([0-9.]+).*/\1/')
  awk -v a="$acc" 'BEGIN { exit !(a > 0.7) }' || fail "val_acc $acc after 200 steps"  # measured: 0.8433
  grep -q '"val_acc":' m.jsonl || fail "metrics record lacks val_acc"
  ;;

*)
  fail "unknown test $test_name"
  ;;
esac
echo "PASS: $test_name"
