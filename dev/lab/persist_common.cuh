// The lab uses the library's device-side building blocks unchanged (src/cuda/persistent_common.cuh).
#pragma once

#include "../../src/cuda/persistent_common.cuh"

namespace lab {
using namespace openrnn::cuda::persist;
}  // namespace lab
