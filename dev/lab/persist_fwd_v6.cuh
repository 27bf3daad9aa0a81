// Lab version v6 is the library's small-batch forward kernel: src/cuda/persistent_fwd_v6.cuh (header comment there).
#pragma once

#include "persist_common.cuh"
#include "../../src/cuda/persistent_fwd_v6.cuh"

namespace lab {
using openrnn::cuda::persist::FwdConfigV6;
using openrnn::cuda::persist::persist_fwd_v6_kernel;
}  // namespace lab
