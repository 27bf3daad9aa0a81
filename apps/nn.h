// Layers of the small training stack: a parameter type, Linear, Embedding, and the LSTM (through the public C API,
// via openrnn.hpp). Shapes follow PyTorch (Linear weight [out, in], Embedding weight [V, C]) and so do the tensor
// names written to checkpoints ("head.weight", "embed.weight", "rnn.weight_ih_l0", ...), so a checkpoint loads into
// the equivalent torch modules with load_state_dict.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "openrnn/openrnn.hpp"
#include "ops.h"
#include "rng.h"

namespace openrnn::app {

// One named tensor inside a parameter's flat storage.
struct ParamView {
  std::string name;            // checkpoint name, e.g. "rnn.weight_ih_l0"
  size_t offset = 0;           // elements from the start of the storage
  std::vector<int64_t> shape;  // [rows, cols] or [rows]
  size_t numel() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
};

// A trainable flat float32 array with its gradient and the optimiser's state (allocated by the optimiser).
struct Param {
  std::vector<ParamView> views;
  DevArray<float> value, grad;
  DevArray<float> state1, state2;  // momentum / square_avg / exp_avg, exp_avg_sq
  Param() = default;
  Param(Ops& ops, size_t n) : value(ops, n), grad(ops, n) {}
  size_t size() const { return value.size(); }
};

// y [N, out] = x [N, in] W^T + b. Init: PyTorch's kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)) for W and
// the same bound for b.
class Linear {
 public:
  Linear(Ops& ops, const std::string& name, int in, int out, Rng& rng);
  void forward(const float* x, int N, float* y);
  // Accumulates dW, db; writes dx [N, in] when not null.
  void backward(const float* x, const float* dy, int N, float* dx);
  Param& param() { return p_; }
  int in() const { return in_; }
  int out() const { return out_; }

 private:
  Ops& ops_;
  int in_, out_;
  Param p_;  // [out*in weight | out bias]
};

// out [N, C] = E[ids]. Init: N(0, 1) like torch.nn.Embedding.
class Embedding {
 public:
  Embedding(Ops& ops, const std::string& name, int V, int C, Rng& rng);
  void forward(const int32_t* ids, int N, float* out);
  void backward(const int32_t* ids, int N, const float* dout);  // accumulates into the gradient
  Param& param() { return p_; }
  int vocab() const { return V_; }
  int dim() const { return C_; }

 private:
  Ops& ops_;
  int V_, C_;
  Param p_;
};

// An LSTM stack run by the openrnn library on the Ops' device. Layout: sequence-major [T, B, I] or batch-major
// [B, T, I]; states [L, B, H]. Weights: PyTorch's U(-1/sqrt(H), 1/sqrt(H)) for every tensor. Dropout between layers
// (cfg.dropout) uses the descriptor's Philox key `dropout_seed` and the offset the caller sets per step.
class Lstm {
 public:
  Lstm(Ops& ops, Handle& handle, const std::string& name, int I, int H, int L, double dropout, uint64_t dropout_seed,
       openrnn_algo algo, openrnn_layout layout, Rng& rng);

  // x [T, B, I] (or [B, T, I]) -> y [.., H]; hx/cx [L, B, H] may be null (zeros); hy/cy may be null.
  // training: keeps the activations in the reserve for backward().
  void forward(bool training, int T, int B, const float* x, float* y, const float* hx, float* hy, const float* cx,
               float* cy);
  // After forward(training) with the same T, B: dy [like y], dhy/dcy may be null; writes dx [like x] (not null);
  // dweights are SET (first) or ADDed.
  void backward(int T, int B, const float* x, const float* dy, const float* dhy, const float* dcy, float* dx);
  void set_dropout_offset(uint64_t off) { desc_.set_dropout_offset(off); }
  Param& param() { return p_; }
  int hidden() const { return H_; }
  int layers() const { return L_; }
  std::string algo_name(int T, int B);  // the algorithm AUTO chose (for the log)

 private:
  SeqDesc& seq(int T, int B);
  Ops& ops_;
  Handle& handle_;
  int I_, H_, L_;
  openrnn_layout layout_;
  RnnDesc desc_;
  Param p_;
  size_t weight_bytes_ = 0;
  std::map<std::pair<int, int>, SeqDesc> seqs_;
  DevArray<uint8_t> workspace_, reserve_;
};

openrnn_rnn_config lstm_config(int I, int H, int L, double dropout, uint64_t dropout_seed, openrnn_algo algo);

}  // namespace openrnn::app
