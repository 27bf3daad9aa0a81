// PERSISTENT v6 (small-batch) kernels for float storage (one file per type so they compile in parallel).
#include "persistent_kernels_v6.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
void add_kernels_v6_f32(std::vector<std::unique_ptr<Kernel>>& k) { add_kernels_v6<float>(k); }
}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
