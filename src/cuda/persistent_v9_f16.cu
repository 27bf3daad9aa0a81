// PERSISTENT v9 (tensor-core cluster) kernels for __half storage (one file per type so they compile in parallel).
#include "persistent_kernels_v9.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
void add_kernels_v9_f16(std::vector<std::unique_ptr<Kernel>>& k) { add_kernels_v9<__half>(k); }
}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
