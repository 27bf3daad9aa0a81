// openrnn-bench: runs openrnn itself, through the public C API only, on a CPU or CUDA handle.
#pragma once

#include <string>
#include <vector>

#include "bench_common.h"
#include "bench_device.h"
#include "openrnn/openrnn.h"

namespace openrnn {
namespace bench {

struct OursResult {
  std::string algo;           // "standard", "persistent", or "auto:standard" (AUTO and what it chose)
  std::string status = "ok";  // "ok", "not supported: <openrnn_query_algo's reason>", "error: ..."
  double us_per_step = NAN;
  Outputs out;                // from one untimed call on NaN-poisoned outputs
};

const char* algo_label(openrnn_algo a);

// For each algorithm: query it, run once for the outputs (every output poisoned with NaN first: an unwritten
// element shows as NaN), then time it. Training times forward(TRAINING) + backward_data + backward_weights(SET).
std::vector<OursResult> run_openrnn(openrnn_handle_t handle, Device& dev, const Problem& p, const ProblemData& d,
                                    const std::vector<openrnn_algo>& algos, const Timing& timing);

}  // namespace bench
}  // namespace openrnn
