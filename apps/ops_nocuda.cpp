// Built instead of cuda/ops_cuda.cu when OPENRNN_CUDA is OFF.
#include <stdexcept>

#include "ops.h"

namespace openrnn::app {
std::unique_ptr<Ops> make_cuda_ops(int) {
  throw std::runtime_error("--device cuda: this openrnn was built without CUDA (configure with -DOPENRNN_CUDA=ON)");
}
}  // namespace openrnn::app
