// PERSISTENT backward-data kernels for __half storage (one file per type so they compile in parallel).
#include "persistent_bwd_kernels.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
void add_bwd_kernels_f16(std::vector<std::unique_ptr<BwdKernel>>& k) { add_bwd_kernels<__half>(k); }
}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
