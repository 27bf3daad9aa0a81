// PERSISTENT kernels for float storage (one file per type so they compile in parallel).
#include "persistent_kernels.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
void add_kernels_f32(std::vector<std::unique_ptr<Kernel>>& k) { add_kernels<float>(k); }
}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
