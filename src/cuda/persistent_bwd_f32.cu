// PERSISTENT backward-data kernels for float storage (one file per type so they compile in parallel).
#include "persistent_bwd_kernels.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
void add_bwd_kernels_f32(std::vector<std::unique_ptr<BwdKernel>>& k) { add_bwd_kernels<float>(k); }
}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
