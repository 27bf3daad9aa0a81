// PERSISTENT v10 (tensor-core, H = 1024, multicast state) kernels for __nv_bfloat16 storage (one file per type so they
// compile in parallel).
#include "persistent_kernels_v10.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
void add_kernels_v10_bf16(std::vector<std::unique_ptr<Kernel>>& k) { add_kernels_v10<__nv_bfloat16>(k); }
}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
