// STANDARD algorithm: support query, buffer sizes (standard_plan.h) and dispatch on the storage type.
#include <algorithm>
#include <climits>
#include <string>

#include "cuda_backend.h"
#include "cuda_common.cuh"
#include "dtype.h"
#include "standard_impl.h"
#include "standard_plan.h"

namespace openrnn {
namespace cuda {

StdDims std_dims(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x) {
  const auto& c = rnn.cfg;
  StdDims d{};
  d.T = x.T;
  d.B = x.B;
  d.I = c.input_size;
  d.H = c.hidden_size;
  d.Hout = rnn.Hout;
  d.P = c.proj_size;
  d.G = rnn.G;
  d.GH = rnn.G * c.hidden_size;
  d.L = c.num_layers;
  d.D = rnn.D;
  d.cell = c.cell;
  d.proj = c.proj_size > 0;
  d.lstm = c.cell == OPENRNN_CELL_LSTM;
  d.gru_lbr = c.cell == OPENRNN_CELL_GRU;
  d.gru_rb = c.cell == OPENRNN_CELL_GRU_RESET_BEFORE;
  d.rnn = c.cell == OPENRNN_CELL_RNN_TANH || c.cell == OPENRNN_CELL_RNN_RELU;
  d.es = dtype_size(c.data_type);
  d.ss = c.data_type == OPENRNN_DATA_DOUBLE ? 8 : 4;
  d.split = d.es == 2 ? 2 : 1;
  return d;
}

namespace {
struct Carver {
  size_t off;
  size_t take(size_t bytes) {
    const size_t o = off;
    off = align_up(off + bytes);
    return o;
  }
};
}  // namespace

StdLayout make_std_layout(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, bool training) {
  StdLayout s;
  const StdDims d = std_dims(rnn, x);
  s.d = d;
  s.training = training;
  s.dropout = training && rnn.cfg.dropout > 0.0 && d.L > 1;
  s.slots = training ? d.T + 1 : 2;
  const size_t TB = static_cast<size_t>(d.T) * d.B, B = static_cast<size_t>(d.B);
  const size_t W = static_cast<size_t>(d.D) * d.Hout, GH = static_cast<size_t>(d.GH), H = static_cast<size_t>(d.H);
  const size_t Hout = static_cast<size_t>(d.Hout);
  const size_t hs = static_cast<size_t>(d.hs_ld()), us = static_cast<size_t>(d.us_ld());
  const bool lens = !x.all_full;

  if (training) {
    Carver r{0};
    s.rsv.resize(static_cast<size_t>(d.L * d.D));
    s.rsv_y.assign(static_cast<size_t>(d.L), kAbsent);
    s.rsv_x.assign(static_cast<size_t>(d.L), kAbsent);
    for (int l = 0; l < d.L; ++l) {
      for (int dir = 0; dir < d.D; ++dir) {
        StdReserveDir& q = s.rsv[static_cast<size_t>(l * d.D + dir)];
        q.acts = r.take(TB * GH * d.ss);
        q.hs = r.take((TB + B) * hs * d.es);
        if (d.lstm) q.cs = r.take((TB + B) * H * d.ss);
        if (d.proj) q.htil = r.take(TB * us * d.es);
        if (d.gru_lbr) q.hn = r.take(TB * H * d.ss);
        if (d.gru_rb) q.rh = r.take(TB * us * d.es);
        q.dG = r.take(TB * GH * d.es);
        if (d.gru_lbr) q.dGh = r.take(TB * GH * d.es);
        if (d.proj) q.dhtot = r.take(TB * static_cast<size_t>(d.P) * d.es);
      }
      if (l < d.L - 1) s.rsv_y[static_cast<size_t>(l)] = r.take(TB * W * d.es);
      if (l >= 1 && s.dropout) s.rsv_x[static_cast<size_t>(l)] = r.take(TB * W * d.es);
    }
    s.reserve_bytes = r.off;
  }

  // forward
  {
    Carver f{cublas_workspace_bytes()};
    if (lens) s.f_lens = f.take(B * sizeof(int32_t));
    for (int dir = 0; dir < d.D; ++dir) {
      s.f_gx[dir] = f.take(TB * GH * d.ss);
      // Two product parts (16-bit split state: [2B, GH], M doubled; float32 K split: [B, 2, GH]); float64: one.
      s.f_gh[dir] = f.take(static_cast<size_t>(d.ss == 8 ? 1 : 2) * B * GH * d.ss);
      if (d.gru_rb) s.f_ghn[dir] = f.take(B * H * d.ss);
      if (d.proj) s.f_hp[dir] = f.take(B * static_cast<size_t>(d.P) * d.ss);
      if (d.split == 2 && (d.gru_rb || d.proj))  // K-doubled operand (standard_forward.cu)
        s.f_w2[dir] = f.take((GH * 2 * Hout + (d.proj ? static_cast<size_t>(d.P) * 2 * H : 0)) * d.es);
      if (!training) {
        if (d.gru_rb) s.f_acts[dir] = f.take(B * GH * d.ss);
        s.f_hs[dir] = f.take(2 * B * hs * d.es);
        if (d.lstm) s.f_cs[dir] = f.take(2 * B * H * d.ss);
        if (d.proj) s.f_htil[dir] = f.take(B * us * d.es);
        if (d.gru_rb) s.f_rh[dir] = f.take(B * us * d.es);
      }
    }
    if (!training && d.L > 1) {
      s.f_y[0] = f.take(TB * W * d.es);
      if (d.L > 2) s.f_y[1] = f.take(TB * W * d.es);
    }
    s.fwd_bytes = f.off;
  }
  s.workspace_bytes = s.fwd_bytes;
  if (!training) return s;

  // backward_data
  {
    Carver b{cublas_workspace_bytes()};
    if (lens) s.b_lens = b.take(B * sizeof(int32_t));
    for (int dir = 0; dir < d.D; ++dir) {
      s.b_dh[dir][0] = b.take(B * Hout * d.ss);
      s.b_dh[dir][1] = b.take(B * Hout * d.ss);
      if (d.lstm) {
        s.b_dc[dir][0] = b.take(B * H * d.ss);
        s.b_dc[dir][1] = b.take(B * H * d.ss);
      }
      if (d.proj) s.b_dhtil[dir] = b.take(B * H * d.ss);
      if (d.gru_rb) s.b_drh[dir] = b.take(B * H * d.ss);
      if (rnn.cfg.data_type != OPENRNN_DATA_DOUBLE && !d.proj && !d.gru_rb) s.b_wt[dir] = b.take(GH * Hout * d.es);
    }
    const size_t maxw = std::max(static_cast<size_t>(d.I), W);
    s.b_dx[0] = b.take(TB * maxw * d.es);
    if (d.L > 1) s.b_dx[1] = b.take(TB * maxw * d.es);
    s.bwd_bytes = b.off;
  }
  // backward_weights
  {
    Carver w{cublas_workspace_bytes()};
    if (lens) s.w_lens = w.take(B * sizeof(int32_t));
    if (lens || x.layout != OPENRNN_LAYOUT_SEQ_MAJOR) s.w_x = w.take(TB * static_cast<size_t>(d.I) * d.es);
    s.w_ones = w.take(TB * d.es);
    s.wg_bytes = w.off;
  }
  // A training workspace also covers forward(INFERENCE) of the same problem (callers size one buffer for both).
  const size_t inference_ws = make_std_layout(rnn, x, false).workspace_bytes;
  s.workspace_bytes = std::max(std::max(s.fwd_bytes, inference_ws), std::max(s.bwd_bytes, s.wg_bytes));
  return s;
}

namespace {

class StandardAlgo final : public CudaAlgo {
 public:
  openrnn_algo id() const override { return OPENRNN_ALGO_STANDARD; }

  AlgoQuery supports(const Context&, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                     openrnn_fwd_mode) const override {
    AlgoQuery q;
    q.chosen = OPENRNN_ALGO_STANDARD;
    // cuBLAS takes int dimensions: every GEMM's rows (T*B) and columns (G*H, layer widths) must fit.
    const long long TB = static_cast<long long>(x.T) * x.B;
    const long long GH = static_cast<long long>(rnn.G) * rnn.cfg.hidden_size;
    const long long W = std::max<long long>(rnn.cfg.input_size, static_cast<long long>(rnn.D) * rnn.Hout);
    if (TB * std::max<long long>(GH, W) > INT_MAX) {
      q.supported = false;
      q.reason = "STANDARD: T*B*max(G*H, layer width) = " + std::to_string(TB * std::max(GH, W)) +
                 " exceeds the 32-bit element index of its kernels";
      return q;
    }
    q.supported = true;
    return q;
  }

  TempSizes sizes(const Context&, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                  openrnn_fwd_mode mode) const override {
    const StdLayout s = make_std_layout(rnn, x, mode == OPENRNN_FWD_TRAINING);
    return TempSizes{s.workspace_bytes, s.reserve_bytes};
  }

  void forward(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
               const ForwardArgs& a) override {
    const StdLayout s = make_std_layout(rnn, x, a.mode == OPENRNN_FWD_TRAINING);
    switch (rnn.cfg.data_type) {
      case OPENRNN_DATA_FLOAT: return std_forward<float>(ctx, rnn, x, s, a);
      case OPENRNN_DATA_DOUBLE: return std_forward<double>(ctx, rnn, x, s, a);
      case OPENRNN_DATA_HALF: return std_forward<__half>(ctx, rnn, x, s, a);
      case OPENRNN_DATA_BFLOAT16: return std_forward<__nv_bfloat16>(ctx, rnn, x, s, a);
    }
  }

  void backward_data(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                     const BackwardDataArgs& a) override {
    const StdLayout s = make_std_layout(rnn, x, true);
    switch (rnn.cfg.data_type) {
      case OPENRNN_DATA_FLOAT: return std_backward_data<float>(ctx, rnn, x, s, a);
      case OPENRNN_DATA_DOUBLE: return std_backward_data<double>(ctx, rnn, x, s, a);
      case OPENRNN_DATA_HALF: return std_backward_data<__half>(ctx, rnn, x, s, a);
      case OPENRNN_DATA_BFLOAT16: return std_backward_data<__nv_bfloat16>(ctx, rnn, x, s, a);
    }
  }

  void backward_weights(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                        const BackwardWeightsArgs& a) override {
    const StdLayout s = make_std_layout(rnn, x, true);
    run_wgrad(ctx, rnn, x, s, a);
  }
};

}  // namespace

std::unique_ptr<CudaAlgo> make_standard_algo() { return std::make_unique<StandardAlgo>(); }

}  // namespace cuda
}  // namespace openrnn
