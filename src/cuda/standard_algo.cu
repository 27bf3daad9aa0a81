// STANDARD algorithm: support query, buffer sizes (standard_plan.h) and dispatch on the storage type.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
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
  const bool hopper_cell = !d.proj && !d.gru_rb;  // the cells of wgmma_step_applies
  d.wpad = d.split == 2 && hopper_cell && d.Hout > 64 && d.Hout % 64 != 0 && d.Hout % 8 == 0 ? (d.Hout + 63) / 64 * 64
                                                                                              : 0;
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
// OPENRNN_STD_WAVEFRONT: -1 unset (the rule), 0 off, N > 0 chunks of N steps.
int wavefront_override() {
  static const int v = [] {
    const char* e = std::getenv("OPENRNN_STD_WAVEFRONT");
    if (!e || !*e) return -1;
    char* end = nullptr;
    const long n = std::strtol(e, &end, 10);
    return (*end == 0 && n >= 0 && n <= 1000000) ? static_cast<int>(n) : -1;
  }();
  return v;
}
}  // namespace

static_assert(kStdLanes == 1 + kAuxStreams, "the wavefront uses every stream of the context");

void std_wavefront(const StdDims& d, int* lanes, int* chunk) {
  *lanes = 0;
  *chunk = 0;
  // A bidirectional layer needs both halves of its input before its reverse direction can start: no wavefront.
  if (d.D != 1 || d.L < 2 || d.T < 2) return;
  const int o = wavefront_override();
  if (o == 0) return;
  // Measured rule (H100, 2026-11-21, T = 100, L = 2 and 4, wavefront vs layers one after another, per layer and
  // step; docs/performance.md). The wavefront overlaps GPU work of two layers, so it pays where a step's GPU time is
  // above what the host needs to issue it (~10 us for a cuBLAS GEMM + pointwise step), and costs ~10% (chunked
  // input GEMMs, events) where the step is bound by issuing:
  //   float32: 1.01-1.46x at B <= 256 with H <= 512 and at B <= 64 with H = 1024; B = 256 H = 1024 0.97-1.06x: off.
  //   float16/bfloat16: 1.29-1.61x at B <= 16 with H <= 512 (the fused step kernel), 1.08-1.17x at B = 256 with
  //   H >= 512; 0.75-0.97x at B = 64, at B = 256 H = 256 and at H = 1024 with B <= 64 (issue-bound steps): off.
  if (o < 0) {
    const long long BH = static_cast<long long>(d.B) * d.H;
    if (d.es == 2 ? !((d.B <= 16 && d.H <= 512) || (d.B >= 256 && d.H >= 512)) : BH >= 256LL * 1024) return;
  }
  const int n = std::min(d.L, kStdLanes);
  // A chunk of c steps costs c steps plus one input GEMM; the pipeline fills in (n - 1) chunks. Total time for one
  // group ~ (T/c + n - 1) * (c * step + gemm): minimal at c = sqrt(T * gemm / ((n - 1) * step)), with gemm ~ step
  // at the small batches where the wavefront pays.
  int c = o > 0 ? o : static_cast<int>(std::lround(std::sqrt(static_cast<double>(d.T) / (n - 1))));
  c = std::max(1, std::min(c, d.T));
  *lanes = n;
  *chunk = c;
}

StdLayout make_std_layout(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, bool training) {
  StdLayout s;
  const StdDims d = std_dims(rnn, x);
  s.d = d;
  s.blas_ws = blas_ws_per_handle(d.B, d.H, rnn.cfg.data_type, rnn.cfg.math_mode == OPENRNN_MATH_ALLOW_TF32);
  s.blas_step_ws =
      blas_step_ws(d.B, d.H, rnn.cfg.data_type, rnn.cfg.math_mode == OPENRNN_MATH_ALLOW_TF32, d.proj);
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
    std_wavefront(d, &s.wave, &s.chunk);
    Carver f{cublas_workspace_bytes(s.blas_ws)};
    if (lens) s.f_lens = f.take(B * sizeof(int32_t));
    const int lanes = s.wave > 0 ? s.wave : d.D;
    const size_t gx_rows = s.wave > 0 ? static_cast<size_t>(s.chunk) * B : TB;
    for (int j = 0; j < lanes; ++j) {
      s.f_gx[j] = f.take(gx_rows * GH * d.ss);
      // Two product parts (16-bit split state: [2B, GH], M doubled; float32 K split: [B, 2, GH]); float64: one.
      s.f_gh[j] = f.take(static_cast<size_t>(d.ss == 8 ? 1 : 2) * B * GH * d.ss);
      if (d.gru_rb) s.f_ghn[j] = f.take(B * H * d.ss);
      if (d.proj) s.f_hp[j] = f.take(B * static_cast<size_t>(d.P) * d.ss);
      if (d.split == 2 && (d.gru_rb || d.proj))  // K-doubled operand (standard_forward.cu)
        s.f_w2[j] = f.take((GH * 2 * Hout + (d.proj ? static_cast<size_t>(d.P) * 2 * H : 0)) * d.es);
      if (d.wpad > 0) s.f_wp[j] = f.take(GH * static_cast<size_t>(d.wpad) * d.es);
      if (!training) {
        if (d.gru_rb) s.f_acts[j] = f.take(B * GH * d.ss);
        s.f_hs[j] = f.take(2 * B * (d.wpad > 0 ? static_cast<size_t>(d.wpad) * d.split : hs) * d.es);
        if (d.lstm) s.f_cs[j] = f.take(2 * B * H * d.ss);
        if (d.proj) s.f_htil[j] = f.take(B * us * d.es);
        if (d.gru_rb) s.f_rh[j] = f.take(B * us * d.es);
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
    Carver b{cublas_workspace_bytes(s.blas_ws)};
    if (lens) s.b_lens = b.take(B * sizeof(int32_t));
    for (int dir = 0; dir < (s.wave > 0 ? s.wave : d.D); ++dir) {  // per lane
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
    if (s.wave > 0 && d.L >= 3) s.b_dx0 = b.take(TB * static_cast<size_t>(d.I) * d.es);
    s.bwd_bytes = b.off;
  }
  // backward_weights
  {
    Carver w{cublas_workspace_bytes(s.blas_ws)};
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
