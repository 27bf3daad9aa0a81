#include "nn.h"

#include <cmath>
#include <stdexcept>

namespace openrnn::app {

namespace {
void fill_uniform(Param& p, double bound, Rng& rng) {
  std::vector<float> h(p.size());
  for (float& v : h) v = static_cast<float>(rng.uniform(-bound, bound));
  p.value.upload(h.data());
}
}  // namespace

Linear::Linear(Ops& ops, const std::string& name, int in, int out, Rng& rng)
    : ops_(ops), in_(in), out_(out), p_(ops, static_cast<size_t>(out) * in + out) {
  p_.views.push_back({name + ".weight", 0, {out, in}});
  p_.views.push_back({name + ".bias", static_cast<size_t>(out) * in, {out}});
  fill_uniform(p_, 1.0 / std::sqrt(static_cast<double>(in)), rng);
}

void Linear::forward(const float* x, int N, float* y) {
  const float* W = p_.value.get();
  ops_.gemm(false, true, N, out_, in_, 1.0f, x, in_, W, in_, 0.0f, y, out_);
  ops_.add_row_vector(y, W + static_cast<size_t>(out_) * in_, N, out_);
}

void Linear::backward(const float* x, const float* dy, int N, float* dx) {
  float* dW = p_.grad.get();
  ops_.gemm(true, false, out_, in_, N, 1.0f, dy, out_, x, in_, 1.0f, dW, in_);
  ops_.col_sums_add(dy, N, out_, dW + static_cast<size_t>(out_) * in_);
  if (dx) ops_.gemm(false, false, N, in_, out_, 1.0f, dy, out_, p_.value.get(), in_, 0.0f, dx, in_);
}

Embedding::Embedding(Ops& ops, const std::string& name, int V, int C, Rng& rng)
    : ops_(ops), V_(V), C_(C), p_(ops, static_cast<size_t>(V) * C) {
  p_.views.push_back({name + ".weight", 0, {V, C}});
  std::vector<float> h(p_.size());
  for (float& v : h) v = static_cast<float>(rng.normal());
  p_.value.upload(h.data());
}

void Embedding::forward(const int32_t* ids, int N, float* out) { ops_.embedding_forward(ids, N, p_.value.get(), C_, out); }
void Embedding::backward(const int32_t* ids, int N, const float* dout) {
  ops_.embedding_backward(ids, N, dout, V_, C_, p_.grad.get());
}

openrnn_rnn_config lstm_config(int I, int H, int L, double dropout, uint64_t dropout_seed, openrnn_algo algo) {
  Config c;
  c.with_cell(OPENRNN_CELL_LSTM).with_sizes(I, H).with_layers(L).with_algo(algo).with_dropout(dropout, dropout_seed);
  return c;
}

Lstm::Lstm(Ops& ops, Handle& handle, const std::string& name, int I, int H, int L, double dropout,
           uint64_t dropout_seed, openrnn_algo algo, openrnn_layout layout, Rng& rng)
    : ops_(ops),
      handle_(handle),
      I_(I),
      H_(H),
      L_(L),
      layout_(layout),
      desc_(lstm_config(I, H, L, dropout, dropout_seed, algo)) {
  weight_bytes_ = desc_.weight_bytes(handle_);
  p_ = Param(ops, weight_bytes_ / sizeof(float));
  for (const openrnn_weight_param& w : desc_.weight_params()) {
    ParamView v{name + "." + w.name, w.offset, {}};
    v.shape = w.cols == 1 && (w.kind == OPENRNN_BIAS_IH || w.kind == OPENRNN_BIAS_HH)
                  ? std::vector<int64_t>{w.rows}
                  : std::vector<int64_t>{w.rows, w.cols};
    p_.views.push_back(v);
  }
  fill_uniform(p_, 1.0 / std::sqrt(static_cast<double>(H)), rng);
}

SeqDesc& Lstm::seq(int T, int B) {
  auto key = std::make_pair(T, B);
  auto it = seqs_.find(key);
  if (it == seqs_.end()) {
    it = seqs_.emplace(key, SeqDesc(OPENRNN_DATA_FLOAT, layout_, T, B, I_)).first;
    // Grow the shared buffers to the largest problem seen; sizes are queried for both modes.
    size_t ws = 0, rs = 0;
    for (openrnn_fwd_mode m : {OPENRNN_FWD_INFERENCE, OPENRNN_FWD_TRAINING}) {
      const TempSizes t = temp_space_sizes(handle_, desc_, m, it->second);
      ws = std::max(ws, t.workspace);
      rs = std::max(rs, t.reserve);
    }
    if (ws > workspace_.size()) workspace_ = DevArray<uint8_t>(ops_, ws);
    if (rs > reserve_.size()) reserve_ = DevArray<uint8_t>(ops_, rs);
  }
  return it->second;
}

std::string Lstm::algo_name(int T, int B) {
  const AlgoSupport s = query_algo(handle_, desc_, OPENRNN_FWD_TRAINING, seq(T, B), desc_.config().algo);
  if (!s.supported) return "unsupported (" + s.reason + ")";
  return s.chosen == OPENRNN_ALGO_PERSISTENT ? "persistent" : "standard";
}

void Lstm::forward(bool training, int T, int B, const float* x, float* y, const float* hx, float* hy,
                   const float* cx, float* cy) {
  SeqDesc& sd = seq(T, B);
  openrnn::forward(handle_, desc_, training ? OPENRNN_FWD_TRAINING : OPENRNN_FWD_INFERENCE, sd, x, y, hx, hy, cx, cy,
                   p_.value.get(), weight_bytes_, workspace_.get(), workspace_.size(),
                   training ? reserve_.get() : nullptr, training ? reserve_.size() : 0);
}

void Lstm::backward(int T, int B, const float* x, const float* dy, const float* dhy, const float* dcy, float* dx) {
  SeqDesc& sd = seq(T, B);
  openrnn::backward_data(handle_, desc_, sd, dy, dx, dhy, nullptr, dcy, nullptr, p_.value.get(), weight_bytes_,
                         workspace_.get(), workspace_.size(), reserve_.get(), reserve_.size());
  openrnn::backward_weights(handle_, desc_, OPENRNN_WGRAD_ADD, sd, x, p_.grad.get(), weight_bytes_, workspace_.get(),
                            workspace_.size(), reserve_.get(), reserve_.size());
}

}  // namespace openrnn::app
