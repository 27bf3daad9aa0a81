// STANDARD backward_data: layers from last to first; per layer the directions run in parallel (direction 1 on an aux
// stream), each stepping through time in the reverse of its forward order: pointwise backward kernel, then
// dh_prev += dG W_hh (one GEMM), or one fused kernel per step (standard_fused.cuh); or, given a BwdRecurrence
// (PERSISTENT), one launch per layer for all steps of both directions. The pre-activation gradients of every step
// stay in the reserve (dG, dGh, dhtot) for backward_weights. Then dX [T*B, I_l] = sum over directions of dG W_ih
// (direction 0 first, then 1 with beta = 1: a fixed order, so the result is bitwise reproducible), the dropout
// mask of layer l (recomputed from seed and offset) and, for layer 0, the copy into the user's dx with padding fill.
// One-direction stacks run the layer wavefront of the forward (StdLayout::wave) backwards: the layer above hands each
// chunk of dX rows to the layer below through an event.
#include "cuda_ops.h"
#include "philox.h"
#include "standard_impl.h"
#include <algorithm>
#include <type_traits>
#include <vector>

#include "standard_fused.cuh"
#include "standard_mma.cuh"
#include "standard_kernels.cuh"

namespace openrnn {
namespace cuda {

namespace {
constexpr int kBlock = 256;

// One layer and direction of backward_data's recurrence on lane j with lane j's buffers: begin() (dhy / dcy into the
// carried gradients), steps() over ranges of this direction's backward steps, end() (dhx / dcx).
template <typename T>
class BwdRun {
 public:
  using S = typename Arith<T>::type;

  BwdRun(const Context& ctx, const openrnn_rnn_desc& rnn, const StdLayout& s, const BackwardDataArgs& a,
         int32_t* lens, const T* dY, RowMap dy_rows, int l, int dir, int lane)
      : ctx_(ctx), s_(s), d_(s.d), a_(a), g_(gemm_spec(rnn.cfg.data_type, rnn.cfg.math_mode)), l_(l), dir_(dir),
        st_(ctx.lane(lane)), bh_(ctx.lane_blas(lane)),
        blas_slice_(static_cast<char*>(a.workspace) + s.blas_ws * static_cast<size_t>(lane)) {
    const StdDims& d = d_;
    void* ws = a.workspace;
    void* rs = a.reserve;
    const int B = d.B, H = d.H, Hout = d.Hout, GH = d.GH;
    auto wptr = [&](openrnn_weight_kind k) -> const T* {
      const size_t off = rnn.weights.offset(l, dir, k, d.D);
      return off == SIZE_MAX ? nullptr : static_cast<const T*>(a.w) + off;
    };
    Wih_ = wptr(OPENRNN_WEIGHT_IH);
    Whh_ = wptr(OPENRNN_WEIGHT_HH);
    Whr_ = wptr(OPENRNN_WEIGHT_HR);
    sidx_ = static_cast<size_t>(l * d.D + dir);
    const StdReserveDir& q = s.rsv[sidx_];
    hs_ = region<T>(rs, q.hs);
    cs_ = region<S>(rs, q.cs);
    acts_ = region<S>(rs, q.acts);
    hn_ = region<S>(rs, q.hn);
    dG_ = region<T>(rs, q.dG);
    dGh_ = region<T>(rs, q.dGh);
    dhtot_ = region<T>(rs, q.dhtot);
    for (int i = 0; i < 2; ++i) {
      dh_[i] = region<S>(ws, s.b_dh[lane][i]);
      dc_[i] = d.lstm ? region<S>(ws, s.b_dc[lane][i]) : nullptr;
    }
    dhtil_ = d.proj ? region<S>(ws, s.b_dhtil[lane]) : nullptr;
    d_rh_ = d.gru_rb ? region<S>(ws, s.b_drh[lane]) : nullptr;
    hB_ = static_cast<long long>(B) * Hout;
    cB_ = static_cast<long long>(B) * H;
    gB_ = static_cast<long long>(B) * GH;
    hsB_ = static_cast<long long>(B) * d.hs_ld();  // one state slot (split pairs for 16-bit types)
    dGrec_ = d.gru_lbr ? dGh_ : dG_;  // recurrent-side gradient: what multiplies W_hh
    // Per-step kernels that fold dG W_hh into the step: the tensor-core one for 16-bit types (standard_mma.cuh; it
    // reads dG and W_hh^T in 16-byte chunks), else the CUDA-core one at small B (standard_fused.cuh). Both use the
    // transposed copy of W_hh.
    if constexpr (sizeof(T) == 2) {
      const bool aligned = reinterpret_cast<uintptr_t>(dGrec_) % 16 == 0 && s.b_wt[lane] != kAbsent &&
                           reinterpret_cast<uintptr_t>(region<T>(ws, s.b_wt[lane])) % 16 == 0;
      clusters_ = ctx.props.major >= 9;
      mma_ = aligned && use_mma_bwd(d, rnn.cfg.data_type) &&
             mma::bwd_smem(d.B, d.H, clusters_) <= static_cast<size_t>(ctx.props.sharedMemPerBlockOptin);
    }
    fused_ = mma_ || use_fused_bwd(d, rnn.cfg.data_type);
    if (fused_) Wt_ = region<T>(ws, s.b_wt[lane]);

    BwdStep<T, S>& p = p_;
    p.B = B;
    p.H = H;
    p.Hout = Hout;
    p.lens = lens;
    p.dy = dY;
    p.dy_rows = dy_rows;
    p.dy_width = d.D * Hout;
    p.dy_col = dir * Hout;
    p.clip = static_cast<S>(rnn.cfg.cell_clip);
    p.relu = rnn.cfg.cell == OPENRNN_CELL_RNN_RELU;
  }

  void begin() const {
    const T* dhy = a_.dhy ? static_cast<const T*>(a_.dhy) + sidx_ * hB_ : nullptr;
    convert_or_zero(dhy, dh_[0], hB_, st_);
    if (d_.lstm) {
      const T* dcy = a_.dcy ? static_cast<const T*>(a_.dcy) + sidx_ * cB_ : nullptr;
      convert_or_zero(dcy, dc_[0], cB_, st_);
    }
    if (fused_) transpose(Whh_, Wt_, d_.GH, d_.H, st_);
  }

  // Backward steps k in [k0, k1): t = T - 1 - k for the forward direction, t = k for the reverse one.
  void steps(int k0, int k1) {
    const StdDims& d = d_;
    const int T_ = d.T, B = d.B, H = d.H, Hout = d.Hout, GH = d.GH, P = d.P, slots = s_.slots;
    const cudaDataType_t tS = CudaType<S>::value;
    const unsigned grid_h = grid_for(cB_, kBlock), grid_p = grid_for(hB_, kBlock);
    BwdStep<T, S>& p = p_;
    const BlasWorkspaceLimit step_ws(bh_, blas_slice_, s_.blas_ws, s_.blas_step_ws);  // the steps' GEMMs
    for (int k = k0; k < k1; ++k) {
      const int t = dir_ == 0 ? T_ - 1 - k : k;
      p.t = t;
      p.acts = acts_ + t * gB_;
      p.hin = hs_ + slot_in(t, dir_, slots) * hsB_;
      if (d.lstm) {
        p.cin = cs_ + slot_in(t, dir_, slots) * cB_;
        p.cout = cs_ + slot_out(t, dir_, slots) * cB_;
        p.dc_next = dc_[cur_];
        p.dc_prev = dc_[1 - cur_];
      }
      p.hn = hn_ ? hn_ + t * cB_ : nullptr;
      p.dh_next = dh_[cur_];
      p.dh_prev = dh_[1 - cur_];
      p.dG = dG_ + t * gB_;
      p.dGh = dGh_ ? dGh_ + t * gB_ : nullptr;
      // The next step's inputs, for the pointwise kernels' prefetch (bwd_prefetch_next; within [k0, k1), as dy of an
      // inner layer is written chunk by chunk).
      p.t_next = k + 1 < k1 ? (dir_ == 0 ? t - 1 : t + 1) : -1;
      p.pf = std_prefetch(d, true);
      if (p.t_next >= 0) {
        p.acts_next = acts_ + p.t_next * gB_;
        p.cin_next = d.lstm ? cs_ + slot_in(p.t_next, dir_, slots) * cB_ : nullptr;
        p.hn_next = hn_ ? hn_ + p.t_next * cB_ : nullptr;
        p.hin_next = d.gru_lbr ? hs_ + slot_in(p.t_next, dir_, slots) * hsB_ : nullptr;
      }
      if constexpr (!std::is_same<T, double>::value) {
        if (fused_) {
          // dh[cur] holds the carried part; the kernel adds dG(previous step) W_hh itself.
          const T* dGn = k == 0 ? nullptr : dGrec_ + (dir_ == 0 ? t + 1 : t - 1) * gB_;
          bool done = false;
          if constexpr (sizeof(T) == 2) {
            if (mma_) {  // a programmatic dependent of the previous step (the kernel before it on st_), as forward
              mma_backward_step(d, p, Wt_, dGn, k > k0 && std_step_pdl(), clusters_, ctx_.device, st_);
              done = true;
            }
          }
          if (!done) fused_backward_step(d, p, Wt_, dGn, ctx_.device, st_);
          cur_ = 1 - cur_;
          continue;
        }
      }
      // The previous step's dh GEMM (or this one's projection GEMM) is the kernel before each pointwise kernel here.
      const StepLaunch pw{k > k0 && (std_pw_pdl(d, true) & 2)};
      if (d.lstm) {
        if (d.proj) {
          p.dhtot = dhtot_ + t * static_cast<long long>(B) * P;
          proj_dh_kernel<T, S><<<grid_p, kBlock, 0, st_>>>(p);
          OPENRNN_LAUNCH_CHECK("proj_dh_kernel");
          // dhtil [B, H] = dhtot [B, P] W_hr [P, H]
          gemm_rm(bh_, g_, false, false, B, H, P, 1.0, p.dhtot, P, Whr_, H, 0.0, dhtil_, tS, H);
          p.dhtil = dhtil_;
        }
        launch_step_ex(lstm_bwd_kernel<T, S>, grid_h, kBlock, 0, st_, pw, p);
        OPENRNN_LAUNCH_CHECK("lstm_bwd_kernel");
        gemm_rm(bh_, g_, false, false, B, Hout, GH, 1.0, p.dG, GH, Whh_, Hout, 1.0, p.dh_prev, tS, Hout);
      } else if (d.gru_lbr) {
        launch_step_ex(gru_bwd_kernel<T, S>, grid_h, kBlock, 0, st_, pw, p);
        OPENRNN_LAUNCH_CHECK("gru_bwd_kernel");
        gemm_rm(bh_, g_, false, false, B, H, GH, 1.0, p.dGh, GH, Whh_, H, 1.0, p.dh_prev, tS, H);
      } else if (d.gru_rb) {
        gru_rb_bwd1_kernel<T, S><<<grid_h, kBlock, 0, st_>>>(p);
        OPENRNN_LAUNCH_CHECK("gru_rb_bwd1_kernel");
        // d_rh [B, H] = dpre_n [B, H] (columns 2H..3H of dG) W_hn [H, H]
        gemm_rm(bh_, g_, false, false, B, H, H, 1.0, p.dG + 2 * H, GH, Whh_ + static_cast<size_t>(2) * H * H, H, 0.0,
                d_rh_, tS, H);
        p.d_rh = d_rh_;
        gru_rb_bwd2_kernel<T, S><<<grid_h, kBlock, 0, st_>>>(p);
        OPENRNN_LAUNCH_CHECK("gru_rb_bwd2_kernel");
        // dh_prev += [dpre_r dpre_z] [B, 2H] W_h{r,z} [2H, H]
        gemm_rm(bh_, g_, false, false, B, H, 2 * H, 1.0, p.dG, GH, Whh_, H, 1.0, p.dh_prev, tS, H);
      } else {
        launch_step_ex(rnn_bwd_kernel<T, S>, grid_h, kBlock, 0, st_, pw, p);
        OPENRNN_LAUNCH_CHECK("rnn_bwd_kernel");
        gemm_rm(bh_, g_, false, false, B, H, H, 1.0, p.dG, H, Whh_, H, 1.0, p.dh_prev, tS, H);
      }
      cur_ = 1 - cur_;
    }
  }

  // dX rows of the steps [t0, t1) = dG W_ih (beta: 0 for the first direction, 1 to add the second).
  void input_grad(int t0, int t1, T* dX, double beta) const {
    const StdDims& d = d_;
    const int I_l = d.layer_in(l_);
    const long long r0 = static_cast<long long>(t0) * d.B;
    gemm_rm(bh_, g_, false, false, (t1 - t0) * d.B, I_l, d.GH, 1.0, dG_ + r0 * d.GH, d.GH, Wih_, I_l, beta,
            dX + r0 * I_l, CudaType<T>::value, I_l);
  }

  void end() const {
    const StdDims& d = d_;
    const cudaDataType_t tS = CudaType<S>::value;
    if (fused_ && a_.dhx) {
      // The W_hh part of the last processed step (t = 0 forward, T-1 reverse) completes the gradient of hx.
      const T* dGl = dGrec_ + (dir_ == 0 ? 0 : d.T - 1) * gB_;
      const BlasWorkspaceLimit step_ws(bh_, blas_slice_, s_.blas_ws, s_.blas_step_ws);  // M = B, as the steps'
      gemm_rm(bh_, g_, false, false, d.B, d.H, d.GH, 1.0, dGl, d.GH, Whh_, d.H, 1.0, dh_[cur_], tS, d.H);
    }
    if (a_.dhx) convert_or_zero(dh_[cur_], static_cast<T*>(a_.dhx) + sidx_ * hB_, hB_, st_);
    if (a_.dcx && d.lstm) convert_or_zero(dc_[cur_], static_cast<T*>(a_.dcx) + sidx_ * cB_, cB_, st_);
  }

 private:
  const Context& ctx_;
  const StdLayout& s_;
  const StdDims& d_;
  const BackwardDataArgs& a_;
  GemmSpec g_;
  int l_, dir_;
  cudaStream_t st_;
  cublasHandle_t bh_;
  void* blas_slice_;  // bh_'s slice of the workspace (Context::bind_blas_workspace)
  const T *Wih_ = nullptr, *Whh_ = nullptr, *Whr_ = nullptr;
  size_t sidx_ = 0;
  const T* hs_ = nullptr;
  const S *cs_ = nullptr, *acts_ = nullptr, *hn_ = nullptr;
  T *dG_ = nullptr, *dGh_ = nullptr, *dhtot_ = nullptr, *Wt_ = nullptr;
  const T* dGrec_ = nullptr;
  S *dh_[2] = {}, *dc_[2] = {}, *dhtil_ = nullptr, *d_rh_ = nullptr;
  long long hB_ = 0, cB_ = 0, gB_ = 0, hsB_ = 0;
  bool fused_ = false;  // one kernel per step (mma_: the tensor-core one)
  bool mma_ = false;
  bool clusters_ = false;  // the device launches thread-block clusters (compute capability >= 9.0)
  int cur_ = 0;  // dh_[cur_] / dc_[cur_]: gradient w.r.t. the state after the step being processed
  BwdStep<T, S> p_{};
};

}  // namespace

template <typename T>
void std_backward_data(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                       const StdLayout& s, const BackwardDataArgs& a, const BwdRecurrence* rec) {
  const StdDims& d = s.d;
  const auto& cfg = rnn.cfg;
  const GemmSpec g = gemm_spec(cfg.data_type, cfg.math_mode);
  const cudaDataType_t tT = CudaType<T>::value;
  void* ws = a.workspace;
  void* rs = a.reserve;
  ctx.bind_blas_workspace(ws, s.blas_ws);

  int32_t* lens = region<int32_t>(ws, s.b_lens);
  if (lens) upload_lengths(x, lens, ctx.stream);

  const T* w = static_cast<const T*>(a.w);
  const int T_ = d.T, B = d.B, GH = d.GH, W = d.D * d.Hout;
  const long long TB = d.TB();
  const uint32_t thr = dropout_threshold(cfg.dropout);
  const double scale = 1.0 / (1.0 - cfg.dropout);
  const RowMap seq_rows = seq_major_rows(B), user_rows = layout_rows(x.layout, T_, B);
  auto wptr = [&](int l, int dir, openrnn_weight_kind k) -> const T* {
    const size_t off = rnn.weights.offset(l, dir, k, d.D);
    return off == SIZE_MAX ? nullptr : w + off;
  };
  const long long hB = static_cast<long long>(B) * d.Hout, cB = static_cast<long long>(B) * d.H;
  // Layer 0's dX straight into the caller's dx where that is the same matrix (sequence-major, no padding to fill):
  // no copy after the GEMMs (session 20: one launch less per training call).
  const bool dx_direct = x.layout == OPENRNN_LAYOUT_SEQ_MAJOR && !lens;
  auto dX_of = [&](int l) -> T* {
    if (l == 0 && dx_direct) return static_cast<T*>(a.dx);
    return l == 0 && s.b_dx0 != kAbsent ? region<T>(ws, s.b_dx0) : region<T>(ws, s.b_dx[l % 2]);
  };
  auto dY_of = [&](int l) -> const T* {
    return l == d.L - 1 ? static_cast<const T*>(a.dy) : region<T>(ws, s.b_dx[(l + 1) % 2]);
  };
  auto dy_rows_of = [&](int l) { return l == d.L - 1 ? user_rows : seq_rows; };
  // Layer l's dX after its GEMMs: into the user's dx (l = 0, padding filled) or through layer l's dropout mask.
  auto finish_dx = [&](int l, T* dX, int t0, int t1, cudaStream_t st) {
    if (l == 0) {
      if (t0 == 0 && t1 == T_ && !dx_direct) {
        copy_rows(static_cast<const T*>(dX), seq_rows, static_cast<T*>(a.dx), user_rows, T_, B, d.I, lens, x.fill, st);
      }
    } else if (s.dropout) {
      const long long e0 = static_cast<long long>(t0) * B * W;
      dropout_apply(dX + e0, dX + e0, (t1 - t0) * static_cast<long long>(B) * W, cfg.dropout_seed,
                    rnn.dropout_offset, l, thr, scale, st, e0);
    }
  };

  if (s.wave > 0 && !rec) {
    // Layer wavefront, top layer first: lane j runs layer g1 - j; chunk k is backward steps [k*chunk, ...), i.e. the
    // latest steps first. Lane j waits for lane j - 1's event (the layer above has written its dX rows of these
    // steps, which are this layer's dY), runs the steps, writes its own dX rows and records its event. Issue order
    // and event reuse as in the forward (standard_forward.cu).
    for (int g1 = d.L - 1; g1 >= 0; g1 -= s.wave) {
      const int n = std::min(s.wave, g1 + 1);
      ctx.fork(n);
      std::vector<BwdRun<T>> runs;
      runs.reserve(static_cast<size_t>(n));
      for (int j = 0; j < n; ++j) {
        const int l = g1 - j;
        runs.emplace_back(ctx, rnn, s, a, lens, dY_of(l), dy_rows_of(l), l, 0, j);
        runs.back().begin();
      }
      for (int k0 = 0; k0 < T_; k0 += s.chunk) {
        const int k1 = std::min(T_, k0 + s.chunk);
        const int t0 = T_ - k1, t1 = T_ - k0;
        for (int j = 0; j < n; ++j) {
          const int l = g1 - j;
          const cudaStream_t st = ctx.lane(j);
          if (j > 0) OPENRNN_CUDA_CHECK(cudaStreamWaitEvent(st, ctx.events[kFreeEvent0 + j - 1], 0));
          BwdRun<T>& r = runs[static_cast<size_t>(j)];
          r.steps(k0, k1);
          T* dX = dX_of(l);
          r.input_grad(t0, t1, dX, 0.0);
          finish_dx(l, dX, t0, t1, st);
          if (j < n - 1) OPENRNN_CUDA_CHECK(cudaEventRecord(ctx.events[kFreeEvent0 + j], st));
        }
      }
      for (int j = 0; j < n; ++j) runs[static_cast<size_t>(j)].end();
      ctx.join(n);
      if (g1 - n + 1 == 0) finish_dx(0, dX_of(0), 0, T_, ctx.stream);
    }
    return;
  }

  for (int l = d.L - 1; l >= 0; --l) {
    const int I_l = d.layer_in(l);
    const T* dY = dY_of(l);
    const RowMap dy_rows = dy_rows_of(l);
    T* dX = dX_of(l);

    if (rec) {
      // Another algorithm's recurrence (both directions in one launch), then dX as below, in the same fixed order.
      BwdLayer bl{};
      bl.l = l;
      bl.lens = lens;
      bl.dy = dY;
      bl.dy_rows = dy_rows;
      bl.dy_width = W;
      bl.reserve = rs;
      for (int dir = 0; dir < d.D; ++dir) {
        const size_t sidx = static_cast<size_t>(l * d.D + dir);
        bl.whh[dir] = wptr(l, dir, OPENRNN_WEIGHT_HH);
        bl.whr[dir] = d.proj ? wptr(l, dir, OPENRNN_WEIGHT_HR) : nullptr;
        bl.rsv[dir] = &s.rsv[sidx];
        bl.dhy[dir] = a.dhy ? static_cast<const T*>(a.dhy) + sidx * hB : nullptr;
        bl.dcy[dir] = a.dcy && d.lstm ? static_cast<const T*>(a.dcy) + sidx * cB : nullptr;
        bl.dhx[dir] = a.dhx ? static_cast<T*>(a.dhx) + sidx * hB : nullptr;
        bl.dcx[dir] = a.dcx && d.lstm ? static_cast<T*>(a.dcx) + sidx * cB : nullptr;
      }
      rec->run(ctx, rnn, x, s, bl);
      for (int dir = 0; dir < d.D; ++dir)
        gemm_rm(ctx.blas, g, false, false, static_cast<int>(TB), I_l, GH, 1.0,
                region<T>(rs, s.rsv[static_cast<size_t>(l * d.D + dir)].dG), GH, wptr(l, dir, OPENRNN_WEIGHT_IH), I_l,
                dir == 0 ? 0.0 : 1.0, dX, tT, I_l);
    } else {
      ctx.fork(d.D);
      for (int dir = 0; dir < d.D; ++dir) {
        BwdRun<T> r(ctx, rnn, s, a, lens, dY, dy_rows, l, dir, dir);
        r.begin();
        r.steps(0, T_);
        r.end();
        // dX = dG_0 W_ih_0 on direction 0's lane (the main stream) while direction 1 still runs.
        if (dir == 0) r.input_grad(0, T_, dX, 0.0);
      }
      ctx.join(d.D);
      if (d.D == 2) {
        const T* dG1 = region<T>(rs, s.rsv[static_cast<size_t>(l * d.D + 1)].dG);
        gemm_rm(ctx.blas, g, false, false, static_cast<int>(TB), I_l, GH, 1.0, dG1, GH, wptr(l, 1, OPENRNN_WEIGHT_IH),
                I_l, 1.0, dX, tT, I_l);
      }
    }
    finish_dx(l, dX, 0, T_, ctx.stream);
  }
}

template void std_backward_data<float>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&,
                                       const StdLayout&, const BackwardDataArgs&, const BwdRecurrence*);
template void std_backward_data<double>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&,
                                        const StdLayout&, const BackwardDataArgs&, const BwdRecurrence*);
template void std_backward_data<__half>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&,
                                        const StdLayout&, const BackwardDataArgs&, const BwdRecurrence*);
template void std_backward_data<__nv_bfloat16>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&,
                                               const StdLayout&, const BackwardDataArgs&, const BwdRecurrence*);

}  // namespace cuda
}  // namespace openrnn
