// openrnn-bench: command-line options and the --help text.
#pragma once

#include <string>
#include <vector>

#include "bench_common.h"
#include "openrnn/openrnn.h"

namespace openrnn {
namespace bench {

struct Options {
  bool cuda = false;
  int ordinal = 0;
  std::vector<openrnn_cell> cells{OPENRNN_CELL_LSTM, OPENRNN_CELL_GRU};
  std::vector<int> batch{1, 8, 64};
  std::vector<int> hidden{128, 512};
  std::vector<int> input{0};  // 0 = I equals H
  int proj = 0;               // LSTM projection size P (openrnn's proj_size) of every problem; 0 = none
  std::vector<int> seq{100};
  std::vector<openrnn_data_type> dtypes{OPENRNN_DATA_FLOAT};
  std::vector<bool> training{false, true};
  std::vector<int> layers{1};
  std::vector<int> dirs{1};
  std::vector<openrnn_algo> algos{OPENRNN_ALGO_AUTO};
  openrnn_math_mode math = OPENRNN_MATH_DEFAULT;  // openrnn's math mode (--math)
  std::string compare;  // "cudnn", "onednn", "none"; empty = cudnn on CUDA, onednn on CPU
  std::vector<std::string> cudnn_algos;  // empty = all four
  Timing timing;
  int rounds = 1;   // timing rounds per problem, alternating openrnn and the comparator
  int threads = 0;  // 0 = leave the defaults
  double tol = 0;   // 0 = default_tolerance(dtype)
  uint64_t seed = 1234;
  std::string csv;
  std::string tag;
  bool reference = false;  // also check every engine against the float64 reference (small problems)
  bool strict = false;     // exit status 1 when any result is wrong (for ctest)
  bool isolate = false;    // each problem in a child process of its own (--isolate)
  bool help = false;
};

// Parses argv (sets help on --help); throws std::invalid_argument naming the bad option or value.
Options parse_options(int argc, char** argv);
const char* help_text();

}  // namespace bench
}  // namespace openrnn
