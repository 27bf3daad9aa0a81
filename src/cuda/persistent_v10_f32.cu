// PERSISTENT v10 (H = 1024, multicast state) kernels for float32 storage: the FFMA product (one file per type so
// they compile in parallel).
#include "persistent_kernels_v10.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
void add_kernels_v10_f32(std::vector<std::unique_ptr<Kernel>>& k) { add_kernels_v10_f32_set(k); }
}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
