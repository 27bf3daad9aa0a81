#include "bench_options.h"

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace openrnn {
namespace bench {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  if (out.empty()) throw std::invalid_argument("empty list");
  return out;
}

int to_int(const std::string& s, int lo, int hi) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || v < lo || v > hi)
    throw std::invalid_argument("'" + s + "' is not an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
  return int(v);
}

std::vector<int> int_list(const std::string& s, int lo, int hi) {
  std::vector<int> v;
  for (const auto& e : split(s)) v.push_back(to_int(e, lo, hi));
  return v;
}

openrnn_cell parse_cell(const std::string& s) {
  if (s == "lstm") return OPENRNN_CELL_LSTM;
  if (s == "gru") return OPENRNN_CELL_GRU;
  if (s == "gru_reset_before") return OPENRNN_CELL_GRU_RESET_BEFORE;
  if (s == "rnn_tanh") return OPENRNN_CELL_RNN_TANH;
  if (s == "rnn_relu") return OPENRNN_CELL_RNN_RELU;
  throw std::invalid_argument("unknown cell '" + s + "' (lstm, gru, gru_reset_before, rnn_tanh, rnn_relu)");
}

openrnn_data_type parse_dtype(const std::string& s) {
  if (s == "float32" || s == "f32" || s == "float") return OPENRNN_DATA_FLOAT;
  if (s == "float16" || s == "f16" || s == "half") return OPENRNN_DATA_HALF;
  if (s == "bfloat16" || s == "bf16") return OPENRNN_DATA_BFLOAT16;
  if (s == "float64" || s == "f64" || s == "double") return OPENRNN_DATA_DOUBLE;
  throw std::invalid_argument("unknown dtype '" + s + "' (float32, float16, bfloat16, float64)");
}

}  // namespace

const char* help_text() {
  return R"(openrnn-bench: openrnn against cuDNN (GPU) or oneDNN (CPU), side by side in one process.

usage: openrnn-bench [options]

Grid (comma-separated lists; every combination is one problem):
  --device cpu|cuda        where openrnn runs (default cpu); --ordinal N picks the CUDA device (default 0)
  --cell LIST              lstm, gru (linear-before-reset), gru_reset_before, rnn_tanh, rnn_relu  [lstm,gru]
  --batch LIST             B  [1,8,64]
  --hidden LIST            H  [128,512]
  --input LIST             I of layer 0; 0 means I = H  [0]
  --proj P                 LSTM projection size (openrnn's proj_size), one value for the whole grid; 0 = none.
                           h' = W_hr (o * tanh(c')): y, hx, hy are P wide, cx, cy H wide. P > 0 needs --cell lstm
                           and P < every H. Not a CSV column: a '#' line records it  [0]
  --seq LIST               T  [100]
  --dtype LIST             float32, float16, bfloat16, float64  [float32]
  --mode LIST              inference, training  [inference,training]
  --layers LIST            L  [1]
  --bidirectional LIST     0 and/or 1 (D = 1 or 2)  [0]
  --algo auto|standard|persistent|all
                           openrnn algorithm(s); all = standard and persistent  [auto]
  --math default|tf32|reduced_state
                           openrnn's math mode (openrnn.h): tf32 lets float32 GEMMs use TF32; reduced_state lets
                           float16/bfloat16 feed h rounded to 16 bits to the recurrent product, as cuDNN does.
                           The comparators keep their own settings (cuDNN: see below)  [default]
Comparator:
  --compare cudnn|onednn|none
                           default: cudnn with --device cuda, onednn with --device cpu
  --cudnn-algos LIST       standard, persist_static, persist_static_small_h, persist_dynamic  [all four]
  --tol X                  largest relative difference that counts as agreement
                           [float64 1e-10, float32 1e-4, float16 1e-2, bfloat16 5e-2]
Timing:
  --warmup N               untimed calls before timing  [3]
  --reps N                 timed calls; the median is reported  [20]
  --clock wall|process     CPU: steady clock (wall time, default), or the process's CPU time
                           (CLOCK_PROCESS_CPUTIME_ID): for single-threaded runs (--threads 1) on a machine other
                           processes are loading, where wall time counts the time they hold the core
  --rounds N               time each problem N times, alternating openrnn and the comparator, and keep each
                           engine's smallest median (for machines shared with other work)  [1]
  --no-flush               GPU: do not flush L2 between repeats
  --graph                  GPU: after the warm-up, capture one call of each engine into a CUDA graph and time its
                           replays (no host issue cost inside the timed region); an engine whose call cannot be
                           captured gets an error row
  --threads N              CPU: threads for openrnn (openrnn_set_num_threads) and oneDNN (omp_set_num_threads);
                           default: each library's own default (the number of cores)
Other:
  --reference              also compare openrnn and every comparator algorithm with a plain float64 reference
                           ('#' lines); when openrnn has no result, comparators are checked against it instead.
                           Plain loops: for small problems only
  --strict                 exit with status 1 if any result is wrong: a disagreement, an error, or (with
                           --reference) an engine over the tolerance. Refusals and unsupported cases are not wrong
  --isolate                run each problem of the grid in a process of its own (forked before this process
                           touches the GPU), one after another, and print their rows as one table. On the GPU, rows
                           in one process are not independent: once a process has run 8 kernels on streams other
                           than its first (cuDNN's RNN does, on its internal streams), every kernel it launches
                           afterwards takes ~0.35 us longer (H200), which costs openrnn's two-kernel cuBLAS steps
                           ~0.7 us per step and cuDNN's rows nothing measurable (bench/README.md)
  --seed N                 seed of the random weights and inputs  [1234]
  --csv FILE               also write the CSV (with the '#' configuration lines) to FILE
  --tag TEXT               recorded in the configuration (e.g. the commit: --tag $(git rev-parse --short HEAD))
  --help                   this text

What is timed. One call of a problem: inference = openrnn_forward(INFERENCE); training = openrnn_forward(TRAINING)
+ openrnn_backward_data + openrnn_backward_weights(SET), the same three steps cuDNN's training numbers cover
(cudnnRNNForward(TRAINING) + cudnnRNNBackwardData_v8 + cudnnRNNBackwardWeights_v8) and oneDNN's (forward_training
+ backward). Weight conversion and reordering into a comparator's layout happen once, outside timing; buffers that a
comparator accumulates into (cuDNN's dweights, oneDNN's diff weights) are zeroed before each call, outside timing.
CPU: std::chrono::steady_clock around each call. CUDA: events recorded on the stream around each call; before each
call, outside the events, a buffer twice the L2 size is overwritten (unless --no-flush). Every engine makes --warmup
untimed calls, then --reps timed calls; the median is reported as microseconds per step = median / (T * L).
GFLOP/s counts the matrix products only: 2*T*B*G*H*(I_l + H) per layer and direction for a forward, three times that
for training (G = 4 LSTM, 3 GRU, 1 RNN). With --proj: (I_l + P) instead of (I_l + H), plus 2*T*B*P*H for W_hr.

Agreement first. All engines get the same weights and inputs (drawn once, rounded to the dtype). Before any timing
openrnn's outputs are taken from NaN-poisoned buffers (an unwritten element fails the row), and each comparator's
outputs (y, hy, cy; for training also dx, dhx, dcx and every weight gradient) are compared with openrnn's:
max over tensors of ||theirs - ours|| / ||ours||. A comparator above --tol is marked DISAGREES and not timed.

Comparators. CPU: oneDNN's RNN primitives, lstm and lbr_gru (linear-before-reset = PyTorch's GRU), float32 (and
bfloat16 where the CPU supports it), weights in the primitive's preferred layout; L > 1 needs I = D*H (D*P with
--proj, which uses oneDNN's LSTM with projection).
GPU: cuDNN's RNN API called directly, double bias, padded IO, every algorithm that accepts the problem:
CUDNN_RNN_ALGO_STANDARD, PERSIST_STATIC, PERSIST_STATIC_SMALL_H and PERSIST_DYNAMIC (built with
cudnnBuildRNNDynamic for the batch size); one row per algorithm and a "best:" row. float32 is strict
(CUDNN_FMA_MATH, no TF32); float16/bfloat16 use CUDNN_TENSOR_OP_MATH with float32 precision. With --proj, projSize
= P and W_hr is cuDNN's linear layer 8; cuDNN documents the projection for STANDARD only: a persistent algorithm
that refuses it gets a "refused" row.

Output. '#' lines: the configuration (device, library versions, threads, --proj, tag, load). Then CSV with the columns
cell,dtype,mode,B,H,I,T,layers,dirs,algo,us_per_step,gflops,comparator,comparator_algo,comparator_us_per_step,
ratio,max_rel_diff,status
ratio = comparator_us_per_step / us_per_step (> 1: openrnn faster). '#' summary lines at the end: the geometric
mean of the ratio per openrnn algorithm against the comparator's best algorithm.
)";
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      o.help = true;
      return o;
    }
    if (a == "--strict") {
      o.strict = true;
      continue;
    }
    if (a == "--reference") {
      o.reference = true;
      continue;
    }
    if (a == "--isolate") {
      o.isolate = true;
      continue;
    }
    if (a == "--graph") {
      o.timing.graph = true;
      continue;
    }
    if (a == "--no-flush") {
      o.timing.flush_l2 = false;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value (see --help)");
    const std::string v = argv[++i];
    try {
      if (a == "--device") {
        if (v != "cpu" && v != "cuda") throw std::invalid_argument("'" + v + "' (cpu or cuda)");
        o.cuda = v == "cuda";
      } else if (a == "--ordinal") {
        o.ordinal = to_int(v, 0, 1023);
      } else if (a == "--cell") {
        o.cells.clear();
        for (const auto& e : split(v)) o.cells.push_back(parse_cell(e));
      } else if (a == "--batch") {
        o.batch = int_list(v, 1, 1 << 20);
      } else if (a == "--hidden") {
        o.hidden = int_list(v, 1, 1 << 16);
      } else if (a == "--input") {
        o.input = int_list(v, 0, 1 << 16);
      } else if (a == "--proj") {
        char* end = nullptr;
        if (!v.empty() && std::strtol(v.c_str(), &end, 10) < 0 && !*end)
          throw std::invalid_argument("'" + v + "': P must be >= 0 (0 = no projection)");
        o.proj = to_int(v, 0, 1 << 16);
      } else if (a == "--seq") {
        o.seq = int_list(v, 1, 1 << 20);
      } else if (a == "--dtype") {
        o.dtypes.clear();
        for (const auto& e : split(v)) o.dtypes.push_back(parse_dtype(e));
      } else if (a == "--mode") {
        o.training.clear();
        for (const auto& e : split(v)) {
          if (e != "inference" && e != "training") throw std::invalid_argument("'" + e + "' (inference, training)");
          o.training.push_back(e == "training");
        }
      } else if (a == "--layers") {
        o.layers = int_list(v, 1, 64);
      } else if (a == "--bidirectional") {
        o.dirs.clear();
        for (int b : int_list(v, 0, 1)) o.dirs.push_back(b + 1);
      } else if (a == "--algo") {
        if (v == "auto") o.algos = {OPENRNN_ALGO_AUTO};
        else if (v == "standard") o.algos = {OPENRNN_ALGO_STANDARD};
        else if (v == "persistent") o.algos = {OPENRNN_ALGO_PERSISTENT};
        else if (v == "all") o.algos = {OPENRNN_ALGO_STANDARD, OPENRNN_ALGO_PERSISTENT};
        else throw std::invalid_argument("'" + v + "' (auto, standard, persistent, all)");
      } else if (a == "--math") {
        if (v == "default") o.math = OPENRNN_MATH_DEFAULT;
        else if (v == "tf32") o.math = OPENRNN_MATH_ALLOW_TF32;
        else if (v == "reduced_state") o.math = OPENRNN_MATH_ALLOW_REDUCED_STATE;
        else throw std::invalid_argument("'" + v + "' (default, tf32, reduced_state)");
      } else if (a == "--compare") {
        if (v != "cudnn" && v != "onednn" && v != "none")
          throw std::invalid_argument("'" + v + "' (cudnn, onednn, none)");
        o.compare = v;
      } else if (a == "--cudnn-algos") {
        o.cudnn_algos = split(v);
      } else if (a == "--tol") {
        o.tol = std::strtod(v.c_str(), nullptr);
        if (!(o.tol > 0)) throw std::invalid_argument("'" + v + "' (a positive number)");
      } else if (a == "--warmup") {
        o.timing.warmup = to_int(v, 0, 100000);
      } else if (a == "--reps") {
        o.timing.reps = to_int(v, 1, 100000);
      } else if (a == "--clock") {
        if (v != "wall" && v != "process") throw std::invalid_argument("'" + v + "' (wall, process)");
        o.timing.process_clock = v == "process";
      } else if (a == "--rounds") {
        o.rounds = to_int(v, 1, 1000);
      } else if (a == "--threads") {
        o.threads = to_int(v, 1, 1024);
      } else if (a == "--seed") {
        o.seed = std::strtoull(v.c_str(), nullptr, 10);
      } else if (a == "--csv") {
        o.csv = v;
      } else if (a == "--tag") {
        o.tag = v;
      } else {
        throw std::invalid_argument("unknown option (see --help)");
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(a + ": " + e.what());
    }
  }
  // --proj is checked against the whole grid here, after every option is read (--cell or --hidden may follow it).
  if (o.proj > 0) {
    for (openrnn_cell c : o.cells)
      if (c != OPENRNN_CELL_LSTM) {
        std::string name = cell_label(c);  // "GRU" -> "gru", as --cell spells it
        for (auto& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        throw std::invalid_argument("--proj: a projection is defined for LSTM only; use --cell lstm (--cell holds " +
                                    name + ")");
      }
    for (int h : o.hidden)
      if (o.proj >= h)
        throw std::invalid_argument("--proj: P = " + std::to_string(o.proj) + " must be below every hidden size (" +
                                    "--hidden holds " + std::to_string(h) + ")");
  }
  if (o.compare.empty()) o.compare = o.cuda ? "cudnn" : "onednn";
  if (o.compare == "cudnn" && !o.cuda) throw std::invalid_argument("--compare cudnn needs --device cuda");
  if (o.compare == "onednn" && o.cuda) throw std::invalid_argument("--compare onednn needs --device cpu");
  return o;
}

}  // namespace bench
}  // namespace openrnn
