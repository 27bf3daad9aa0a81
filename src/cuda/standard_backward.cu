// STANDARD backward_data: layers from last to first; per layer the directions run in parallel (direction 1 on an aux
// stream), each stepping through time in the reverse of its forward order: pointwise backward kernel, then
// dh_prev += dG W_hh (one GEMM), or one fused kernel per step (standard_fused.cuh); or, given a BwdRecurrence
// (PERSISTENT), one launch per layer for all steps of both directions. The pre-activation gradients of every step
// stay in the reserve (dG, dGh, dhtot) for backward_weights. Then dX [T*B, I_l] = sum over directions of dG W_ih
// (direction 0 first, then 1 with beta = 1: a fixed order, so the result is bitwise reproducible), the dropout
// mask of layer l (recomputed from seed and offset) and, for layer 0, the copy into the user's dx with padding fill.
#include "cuda_ops.h"
#include "philox.h"
#include "standard_impl.h"
#include <type_traits>

#include "standard_fused.cuh"
#include "standard_kernels.cuh"

namespace openrnn {
namespace cuda {

namespace {
constexpr int kBlock = 256;
}

template <typename T>
void std_backward_data(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                       const StdLayout& s, const BackwardDataArgs& a, const BwdRecurrence* rec) {
  using S = typename Arith<T>::type;
  const StdDims& d = s.d;
  const auto& cfg = rnn.cfg;
  const GemmSpec g = gemm_spec(cfg.data_type, cfg.math_mode);
  const cudaDataType_t tS = CudaType<S>::value, tT = CudaType<T>::value;
  void* ws = a.workspace;
  void* rs = a.reserve;
  ctx.bind_blas_workspace(ws);

  int32_t* lens = region<int32_t>(ws, s.b_lens);
  if (lens) upload_lengths(x, lens, ctx.stream);

  const T* w = static_cast<const T*>(a.w);
  const int T_ = d.T, B = d.B, H = d.H, Hout = d.Hout, GH = d.GH, W = d.D * d.Hout, P = d.P;
  const long long TB = d.TB();
  const uint32_t thr = dropout_threshold(cfg.dropout);
  const double scale = 1.0 / (1.0 - cfg.dropout);
  const RowMap seq_rows = seq_major_rows(B), user_rows = layout_rows(x.layout, T_, B);
  auto wptr = [&](int l, int dir, openrnn_weight_kind k) -> const T* {
    const size_t off = rnn.weights.offset(l, dir, k, d.D);
    return off == SIZE_MAX ? nullptr : w + off;
  };
  const long long hB = static_cast<long long>(B) * Hout, cB = static_cast<long long>(B) * H;
  const long long gB = static_cast<long long>(B) * GH;
  const long long hsB = static_cast<long long>(B) * d.hs_ld();  // one state slot (split pairs for 16-bit types)
  const unsigned grid_h = grid_for(cB, kBlock), grid_p = grid_for(hB, kBlock);

  for (int l = d.L - 1; l >= 0; --l) {
    const int I_l = d.layer_in(l);
    const bool last = l == d.L - 1;
    const T* dY = last ? static_cast<const T*>(a.dy) : region<T>(ws, s.b_dx[(l + 1) % 2]);
    const RowMap dy_rows = last ? user_rows : seq_rows;
    T* dX = region<T>(ws, s.b_dx[l % 2]);

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
        const cudaStream_t st = ctx.lane(dir);
        const cublasHandle_t bh = ctx.lane_blas(dir);
        const T *Wih = wptr(l, dir, OPENRNN_WEIGHT_IH), *Whh = wptr(l, dir, OPENRNN_WEIGHT_HH);
        const T* Whr = wptr(l, dir, OPENRNN_WEIGHT_HR);
        const size_t sidx = static_cast<size_t>(l * d.D + dir);
        const StdReserveDir& q = s.rsv[sidx];
        const T* hs = region<T>(rs, q.hs);
        const S* cs = region<S>(rs, q.cs);
        const S* acts = region<S>(rs, q.acts);
        const S* hn = region<S>(rs, q.hn);
        T* dG = region<T>(rs, q.dG);
        T* dGh = region<T>(rs, q.dGh);
        T* dhtot = region<T>(rs, q.dhtot);
        S* dh[2] = {region<S>(ws, s.b_dh[dir][0]), region<S>(ws, s.b_dh[dir][1])};
        S* dc[2] = {d.lstm ? region<S>(ws, s.b_dc[dir][0]) : nullptr, d.lstm ? region<S>(ws, s.b_dc[dir][1]) : nullptr};
        S* dhtil = d.proj ? region<S>(ws, s.b_dhtil[dir]) : nullptr;
        S* d_rh = d.gru_rb ? region<S>(ws, s.b_drh[dir]) : nullptr;

        convert_or_zero(a.dhy ? static_cast<const T*>(a.dhy) + sidx * hB : static_cast<const T*>(nullptr), dh[0], hB,
                        st);
        if (d.lstm)
          convert_or_zero(a.dcy ? static_cast<const T*>(a.dcy) + sidx * cB : static_cast<const T*>(nullptr), dc[0], cB,
                          st);

        BwdStep<T, S> p{};
        p.B = B;
        p.H = H;
        p.Hout = Hout;
        p.lens = lens;
        p.dy = dY;
        p.dy_rows = dy_rows;
        p.dy_width = W;
        p.dy_col = dir * Hout;
        p.clip = static_cast<S>(cfg.cell_clip);
        p.relu = cfg.cell == OPENRNN_CELL_RNN_RELU;
        int cur = 0;  // dh[cur] / dc[cur]: gradient w.r.t. the state after the step being processed
        const bool fused = use_fused_bwd(d, cfg.data_type);
        const T* dGrec = d.gru_lbr ? dGh : dG;  // recurrent-side gradient: what multiplies W_hh
        T* Wt = nullptr;  // W_hh^T [H, G*H] for the fused kernel
        if (fused) {
          Wt = region<T>(ws, s.b_wt[dir]);
          transpose(Whh, Wt, GH, H, st);
        }
        for (int k = 0; k < T_; ++k) {
          const int t = dir == 0 ? T_ - 1 - k : k;
          p.t = t;
          p.acts = acts + t * gB;
          p.hin = hs + slot_in(t, dir, s.slots) * hsB;
          if (d.lstm) {
            p.cin = cs + slot_in(t, dir, s.slots) * cB;
            p.cout = cs + slot_out(t, dir, s.slots) * cB;
            p.dc_next = dc[cur];
            p.dc_prev = dc[1 - cur];
          }
          p.hn = hn ? hn + t * cB : nullptr;
          p.dh_next = dh[cur];
          p.dh_prev = dh[1 - cur];
          p.dG = dG + t * gB;
          p.dGh = dGh ? dGh + t * gB : nullptr;
          if constexpr (!std::is_same<T, double>::value) {
            if (fused) {
              // dh[cur] holds the carried part; the kernel adds dG(previous step) W_hh itself.
              const T* dGn = k == 0 ? nullptr : dGrec + (dir == 0 ? t + 1 : t - 1) * gB;
              fused_backward_step(d, p, Wt, dGn, ctx.device, st);
              cur = 1 - cur;
              continue;
            }
          }
          if (d.lstm) {
            if (d.proj) {
              p.dhtot = dhtot + t * static_cast<long long>(B) * P;
              proj_dh_kernel<T, S><<<grid_p, kBlock, 0, st>>>(p);
              OPENRNN_LAUNCH_CHECK("proj_dh_kernel");
              // dhtil [B, H] = dhtot [B, P] W_hr [P, H]
              gemm_rm(bh, g, false, false, B, H, P, 1.0, p.dhtot, P, Whr, H, 0.0, dhtil, tS, H);
              p.dhtil = dhtil;
            }
            lstm_bwd_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
            OPENRNN_LAUNCH_CHECK("lstm_bwd_kernel");
            gemm_rm(bh, g, false, false, B, Hout, GH, 1.0, p.dG, GH, Whh, Hout, 1.0, p.dh_prev, tS, Hout);
          } else if (d.gru_lbr) {
            gru_bwd_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
            OPENRNN_LAUNCH_CHECK("gru_bwd_kernel");
            gemm_rm(bh, g, false, false, B, H, GH, 1.0, p.dGh, GH, Whh, H, 1.0, p.dh_prev, tS, H);
          } else if (d.gru_rb) {
            gru_rb_bwd1_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
            OPENRNN_LAUNCH_CHECK("gru_rb_bwd1_kernel");
            // d_rh [B, H] = dpre_n [B, H] (columns 2H..3H of dG) W_hn [H, H]
            gemm_rm(bh, g, false, false, B, H, H, 1.0, p.dG + 2 * H, GH, Whh + static_cast<size_t>(2) * H * H, H, 0.0,
                    d_rh, tS, H);
            p.d_rh = d_rh;
            gru_rb_bwd2_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
            OPENRNN_LAUNCH_CHECK("gru_rb_bwd2_kernel");
            // dh_prev += [dpre_r dpre_z] [B, 2H] W_h{r,z} [2H, H]
            gemm_rm(bh, g, false, false, B, H, 2 * H, 1.0, p.dG, GH, Whh, H, 1.0, p.dh_prev, tS, H);
          } else {
            rnn_bwd_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
            OPENRNN_LAUNCH_CHECK("rnn_bwd_kernel");
            gemm_rm(bh, g, false, false, B, H, H, 1.0, p.dG, H, Whh, H, 1.0, p.dh_prev, tS, H);
          }
          cur = 1 - cur;
        }
        if (fused && a.dhx) {
          // The W_hh part of the last processed step (t = 0 forward, T-1 reverse) completes the gradient of hx.
          const T* dGl = dGrec + (dir == 0 ? 0 : T_ - 1) * gB;
          gemm_rm(bh, g, false, false, B, H, GH, 1.0, dGl, GH, Whh, H, 1.0, dh[cur], tS, H);
        }
        if (a.dhx) convert_or_zero(dh[cur], static_cast<T*>(a.dhx) + sidx * hB, hB, st);
        if (a.dcx && d.lstm) convert_or_zero(dc[cur], static_cast<T*>(a.dcx) + sidx * cB, cB, st);
        // dX = dG_0 W_ih_0 on direction 0's lane (the main stream) while direction 1 still runs.
        if (dir == 0)
          gemm_rm(bh, g, false, false, static_cast<int>(TB), I_l, GH, 1.0, dG, GH, Wih, I_l, 0.0, dX, tT, I_l);
      }
      ctx.join(d.D);
      if (d.D == 2) {
        const T* dG1 = region<T>(rs, s.rsv[static_cast<size_t>(l * d.D + 1)].dG);
        gemm_rm(ctx.blas, g, false, false, static_cast<int>(TB), I_l, GH, 1.0, dG1, GH, wptr(l, 1, OPENRNN_WEIGHT_IH),
                I_l, 1.0, dX, tT, I_l);
      }
    }
    if (l == 0) {
      copy_rows(static_cast<const T*>(dX), seq_rows, static_cast<T*>(a.dx), user_rows, T_, B, I_l, lens, x.fill,
                ctx.stream);
    } else if (s.dropout) {
      dropout_apply(dX, dX, TB * W, cfg.dropout_seed, rnn.dropout_offset, l, thr, scale, ctx.stream);
    }
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
