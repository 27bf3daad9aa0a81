// openrnn-bench: the cuDNN (GPU) comparator. Built only with CUDA and cuDNN (OPENRNN_BENCH_CUDNN).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench_common.h"
#include "bench_device.h"

namespace openrnn {
namespace bench {

// Runs cuDNN on `gpu`'s stream (the stream openrnn uses too) and times with its events.
// algos: any of "standard", "persist_static", "persist_static_small_h", "persist_dynamic"; empty = all four.
std::unique_ptr<Comparator> make_cudnn_comparator(Device& gpu, const std::vector<std::string>& algos);

}  // namespace bench
}  // namespace openrnn
