// The interface every backend (src/cpu/, src/cuda/) implements. src/api.cpp has validated every argument before a
// backend is called: pointers that must be non-null are, sizes match the descriptors, workspace/reserve are at
// least the sizes this backend reported, dtypes agree, the algorithm was accepted by query_algo. Backends throw
// openrnn::Error on failure (never exit, never let another exception type escape uncaught: api.cpp maps those to
// INTERNAL_ERROR).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "descriptor.h"
#include "openrnn/openrnn.h"

namespace openrnn {

struct TempSizes {
  size_t workspace = 0;
  size_t reserve = 0;
};

// Tensor pointers are host memory for the CPU backend, device memory for CUDA. Shapes: openrnn.h.
struct ForwardArgs {
  openrnn_fwd_mode mode;
  const void* x;
  void* y;
  const void* hx;  // may be null
  void* hy;        // may be null
  const void* cx;  // may be null (always null for non-LSTM)
  void* cy;        // may be null (always null for non-LSTM)
  const void* w;
  void* workspace;
  size_t workspace_bytes;
  void* reserve;  // null for inference
  size_t reserve_bytes;
};

struct BackwardDataArgs {
  const void* dy;
  void* dx;
  const void* dhy;  // may be null
  void* dhx;        // may be null
  const void* dcy;  // may be null
  void* dcx;        // may be null
  const void* w;
  void* workspace;
  size_t workspace_bytes;
  void* reserve;
  size_t reserve_bytes;
};

struct BackwardWeightsArgs {
  openrnn_wgrad_mode mode;
  const void* x;
  void* dw;
  void* workspace;
  size_t workspace_bytes;
  const void* reserve;
  size_t reserve_bytes;
};

struct AlgoQuery {
  bool supported = false;
  openrnn_algo chosen = OPENRNN_ALGO_STANDARD;  // what would run (AUTO resolved)
  std::string reason;                            // why not, when !supported
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Stream (CUDA) / threads (CPU). The default implementations reject the call with BAD_PARAM.
  virtual void set_stream(void* stream);
  virtual void* stream() const;
  virtual void set_num_threads(int n);
  virtual int num_threads() const;

  // Can `algo` (AUTO allowed) run this problem? Must not throw for a valid problem that is merely unsupported.
  virtual AlgoQuery query_algo(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, openrnn_fwd_mode mode,
                               openrnn_algo algo) const = 0;
  // Buffer sizes for the algorithm query_algo(rnn.cfg.algo) chooses.
  virtual TempSizes temp_sizes(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                               openrnn_fwd_mode mode) const = 0;

  virtual void forward(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const ForwardArgs& a) = 0;
  virtual void backward_data(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const BackwardDataArgs& a) = 0;
  virtual void backward_weights(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                                const BackwardWeightsArgs& a) = 0;
};

// Factories. make_cuda_backend throws Error(NO_DEVICE) when CUDA was not compiled in or the ordinal is absent.
std::unique_ptr<Backend> make_cpu_backend();
std::unique_ptr<Backend> make_cuda_backend(int ordinal);

}  // namespace openrnn
