// openrnn-bench: the oneDNN (CPU) comparator. Built only when oneDNN was found (OPENRNN_BENCH_ONEDNN).
#pragma once

#include <memory>

#include "bench_common.h"
#include "bench_device.h"

namespace openrnn {
namespace bench {

// `cpu` times the calls (steady clock, median). oneDNN's threads are OpenMP's (omp_set_num_threads).
std::unique_ptr<Comparator> make_onednn_comparator(Device& cpu);

}  // namespace bench
}  // namespace openrnn
