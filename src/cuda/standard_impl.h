// STANDARD algorithm entry points per storage type (standard_forward.cu, standard_backward.cu, standard_wgrad.cu).
#pragma once

#include "backend.h"
#include "cuda_backend.h"
#include "standard_plan.h"

namespace openrnn {
namespace cuda {

// Pointer to a region of a carve-up, or null when the region is absent.
template <typename P>
inline P* region(void* base, size_t off) {
  return off == kAbsent ? nullptr : reinterpret_cast<P*>(static_cast<char*>(base) + off);
}
template <typename P>
inline const P* region(const void* base, size_t off) {
  return off == kAbsent ? nullptr : reinterpret_cast<const P*>(static_cast<const char*>(base) + off);
}

template <typename T>
void std_forward(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const StdLayout& s,
                 const ForwardArgs& a);
template <typename T>
void std_backward_data(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                       const StdLayout& s, const BackwardDataArgs& a);
// backward_weights from the STANDARD reserve layout (any storage type; dispatches on rnn's data type). Reusable by
// another algorithm whose forward(TRAINING) + backward_data leave the reserve in this layout.
void run_wgrad(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const StdLayout& s,
               const BackwardWeightsArgs& a);

}  // namespace cuda
}  // namespace openrnn
