// The lab uses the library's device-side building blocks unchanged (src/cuda/persistent_common.cuh).
#pragma once

#include "../../src/cuda/cuda_common.cuh"  // cp.async helpers
#include "../../src/cuda/persistent_common.cuh"

namespace lab {
using namespace openrnn::cuda;
using namespace openrnn::cuda::persist;
}  // namespace lab
