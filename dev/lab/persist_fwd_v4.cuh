// Lab version v4 is the kernel the library ships: src/cuda/persistent_fwd.cuh (header comment there).
#pragma once

#include "persist_common.cuh"
#include "../../src/cuda/persistent_fwd.cuh"

namespace lab {
using openrnn::cuda::persist::FwdConfigV4;
using openrnn::cuda::persist::persist_fwd_v4_kernel;
}  // namespace lab
