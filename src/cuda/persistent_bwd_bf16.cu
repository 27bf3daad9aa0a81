// PERSISTENT backward-data kernels for __nv_bfloat16 storage (one file per type so they compile in parallel).
#include "persistent_bwd_kernels.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
void add_bwd_kernels_bf16(std::vector<std::unique_ptr<BwdKernel>>& k) { add_bwd_kernels<__nv_bfloat16>(k); }
}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
