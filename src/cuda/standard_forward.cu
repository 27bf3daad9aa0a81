// STANDARD forward: per layer, per direction (direction 1 on an aux stream), one input GEMM over all steps
// [T*B, I_l] x W_ih^T, then per step the recurrent GEMM [B, Hout] x W_hh^T and one pointwise kernel (GRU reset-before:
// two GEMMs and two kernels; LSTM projection: one more GEMM and a fix-up kernel). Layers are joined before the next
// layer's input GEMM (a bidirectional layer needs both halves of its input).
#include "cuda_ops.h"
#include "philox.h"
#include "standard_impl.h"
#include <climits>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "standard_fused.cuh"
#include "standard_kernels.cuh"

namespace openrnn {
namespace cuda {

namespace {
constexpr int kBlock = 256;

// float32 recurrent GEMM with its K range split in two (one strided-batched call writing [B, 2, GH], summed by the
// pointwise kernel through gh_lo). At B of 32-128 the product [B, Hout] x [Hout, GH] has too few output tiles to fill
// the GPU's SMs; two K halves double the tiles. OPENRNN_STD_KSPLIT=0/1 (developer switch, read once) overrides the
// rule. Measured rule: docs/performance.md.
int ksplit_override() {
  static const int v = [] {
    const char* e = std::getenv("OPENRNN_STD_KSPLIT");
    if (!e) return -1;
    if (std::strcmp(e, "0") == 0) return 0;
    if (std::strcmp(e, "1") == 0) return 1;
    return -1;
  }();
  return v;
}
bool use_ksplit(const StdDims& d, openrnn_data_type dt, bool fused) {
  if (dt != OPENRNN_DATA_FLOAT || fused || d.gru_rb || d.proj || d.Hout % 2 != 0) return false;
  const int o = ksplit_override();
  if (o >= 0) return o == 1;
  // H100, 2026-11-21 (float32 inference, T=100, split vs one GEMM, µs/step): B=64 H=1024 LSTM 37.6 vs 44.6,
  // H=2048 114.5 vs 140.3; B=256 H=1024 102.2 vs 111.0, GRU 85.2 vs 97.7; B=32 H=2048 80.6 vs 99.1; B=256
  // H=2048 GRU 311 vs 306 (the one row it lost, within noise); H=512: B=64 19.7 vs 21.0.
  return d.B >= 32 && d.Hout >= 512;
}

}  // namespace

template <typename T>
void std_forward(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const StdLayout& s,
                 const ForwardArgs& a) {
  using S = typename Arith<T>::type;
  const StdDims& d = s.d;
  const auto& cfg = rnn.cfg;
  const GemmSpec g = gemm_spec(cfg.data_type, cfg.math_mode);
  const cudaDataType_t tS = CudaType<S>::value, tT = CudaType<T>::value;
  (void)tT;
  void* ws = a.workspace;
  void* rs = a.reserve;
  const bool training = s.training;
  ctx.bind_blas_workspace(ws);

  int32_t* lens = region<int32_t>(ws, s.f_lens);
  if (lens) upload_lengths(x, lens, ctx.stream);

  const T* w = static_cast<const T*>(a.w);
  const int T_ = d.T, B = d.B, H = d.H, Hout = d.Hout, GH = d.GH, W = d.D * d.Hout;
  const long long TB = d.TB();
  const uint32_t thr = dropout_threshold(cfg.dropout);
  const double scale = 1.0 / (1.0 - cfg.dropout);
  const RowMap seq_rows = seq_major_rows(B), user_rows = layout_rows(x.layout, T_, B);
  auto wptr = [&](int l, int dir, openrnn_weight_kind k) -> const T* {
    const size_t off = rnn.weights.offset(l, dir, k, d.D);
    return off == SIZE_MAX ? nullptr : w + off;
  };

  for (int l = 0; l < d.L; ++l) {
    const int I_l = d.layer_in(l);
    const T* X = static_cast<const T*>(a.x);
    RowMap x_rows = user_rows;
    if (l > 0) {
      const T* prev = training ? region<T>(rs, s.rsv_y[static_cast<size_t>(l - 1)])
                               : region<T>(ws, s.f_y[(l - 1) % 2]);
      if (s.dropout) {
        T* xl = region<T>(rs, s.rsv_x[static_cast<size_t>(l)]);
        dropout_apply(prev, xl, TB * W, cfg.dropout_seed, rnn.dropout_offset, l, thr, scale, ctx.stream);
        X = xl;
      } else {
        X = prev;
      }
      x_rows = seq_rows;
    }
    const bool last = l == d.L - 1;
    T* Y = last ? static_cast<T*>(a.y) : (training ? region<T>(rs, s.rsv_y[static_cast<size_t>(l)])
                                                   : region<T>(ws, s.f_y[l % 2]));
    const RowMap y_rows = last ? user_rows : seq_rows;
    const S fill = last ? static_cast<S>(x.fill) : S(0);  // internal layer outputs: 0 at padding (GEMM-safe)

    ctx.fork(d.D);
    for (int dir = 0; dir < d.D; ++dir) {
      const cudaStream_t st = ctx.lane(dir);
      const cublasHandle_t bh = ctx.lane_blas(dir);
      const T *Wih = wptr(l, dir, OPENRNN_WEIGHT_IH), *Whh = wptr(l, dir, OPENRNN_WEIGHT_HH);
      const T *bih = wptr(l, dir, OPENRNN_BIAS_IH), *bhh = wptr(l, dir, OPENRNN_BIAS_HH);
      const T* Whr = wptr(l, dir, OPENRNN_WEIGHT_HR);
      S* gx = region<S>(ws, s.f_gx[dir]);
      S* gh = region<S>(ws, s.f_gh[dir]);
      S* ghn = d.gru_rb ? region<S>(ws, s.f_ghn[dir]) : nullptr;

      // gx [T*B, G*H] = X [T*B, I_l] W_ih^T, rows in X's order (the user's layout for layer 0).
      gemm_rm(bh, g, false, true, static_cast<int>(TB), GH, I_l, 1.0, X, I_l, Wih, I_l, 0.0, gx, tS, GH);

      T* hs;
      S *cs, *acts, *hn;
      T *htil, *rh;
      long long acts_t = 0, htil_t = 0, hn_t = 0, rh_t = 0;  // per-step strides (0: one reused slot)
      if (training) {
        const StdReserveDir& q = s.rsv[static_cast<size_t>(l * d.D + dir)];
        hs = region<T>(rs, q.hs);
        cs = region<S>(rs, q.cs);
        acts = region<S>(rs, q.acts);
        htil = region<T>(rs, q.htil);
        hn = region<S>(rs, q.hn);
        rh = region<T>(rs, q.rh);
        acts_t = static_cast<long long>(B) * GH;
        hn_t = static_cast<long long>(B) * H;
        htil_t = rh_t = static_cast<long long>(B) * d.us_ld();
      } else {
        hs = region<T>(ws, s.f_hs[dir]);
        cs = region<S>(ws, s.f_cs[dir]);
        acts = region<S>(ws, s.f_acts[dir]);
        htil = region<T>(ws, s.f_htil[dir]);
        hn = nullptr;
        rh = region<T>(ws, s.f_rh[dir]);
      }
      // hB: one user state [B, Hout]; hsB: one internal state slot [B, Hout * split].
      const long long hB = static_cast<long long>(B) * Hout, cB = static_cast<long long>(B) * H;
      const int hs_ld = d.hs_ld(), us_ld = d.us_ld();
      const long long hsB = static_cast<long long>(B) * hs_ld;
      const int first = slot_first(T_, dir, s.slots), lastslot = slot_last(T_, dir, s.slots);
      const size_t sidx = static_cast<size_t>(l * d.D + dir);
      state_in(a.hx ? static_cast<const T*>(a.hx) + sidx * hB : static_cast<const T*>(nullptr), hs + first * hsB, B,
               Hout, hs_ld, st);
      if (d.lstm)
        convert_or_zero(a.cx ? static_cast<const T*>(a.cx) + sidx * cB : static_cast<const T*>(nullptr),
                        cs + first * cB, cB, st);

      FwdStep<T, S> p{};
      p.B = B;
      p.H = H;
      p.Hout = Hout;
      p.lens = lens;
      p.gx = gx;
      p.gx_rows = x_rows;
      p.bih = bih;
      p.bhh = bhh;
      p.y = Y;
      p.y_rows = y_rows;
      p.y_width = W;
      p.y_col = dir * Hout;
      p.fill = fill;
      p.clip = static_cast<S>(cfg.cell_clip);
      p.relu = cfg.cell == OPENRNN_CELL_RNN_RELU;
      const unsigned grid_h = grid_for(cB, kBlock), grid_p = grid_for(hB, kBlock);

      const bool fused = use_fused_fwd(d, cfg.data_type);
      // Recurrent GEMM operands for split states (standard_kernels.cuh): LSTM without projection, GRU
      // linear-before-reset and RNN multiply the [2B, Hout] view of the slot by W_hh (M doubled, gh_lo); GRU
      // reset-before and projection multiply [hi | lo] by [W | W] (K doubled).
      const bool m2 = d.split == 2 && !d.gru_rb && !d.proj;
      const bool ks = use_ksplit(d, cfg.data_type, fused);
      // OPENRNN_MATH_ALLOW_REDUCED_STATE (16-bit types): the product takes hi = round(h) only, M = B, as cuDNN's
      // does. LSTM and RNN accumulate it into step t's rows of gx in place (beta = 1: no [B, GH] buffer written
      // and read back); GRU keeps W_hn h apart from W_in x (r multiplies it), so it writes gh.
      const bool reduced = m2 && cfg.math_mode == OPENRNN_MATH_ALLOW_REDUCED_STATE;
      const long long gx_ldc = x_rows.row_b * GH;
      const bool in_place = reduced && !d.gru_lbr && gx_ldc <= INT_MAX;
      const T* Wrec = Whh;
      const T* Wproj = Whr;
      if (d.split == 2 && !fused && !m2) {
        T* w2 = region<T>(ws, s.f_w2[dir]);
        dup_cols(Whh, w2, GH, Hout, st);
        Wrec = w2;
        if (d.proj) {
          T* wp2 = w2 + static_cast<size_t>(GH) * 2 * Hout;
          dup_cols(Whr, wp2, Hout, H, st);
          Wproj = wp2;
        }
      }
      S* hp = d.proj ? region<S>(ws, s.f_hp[dir]) : nullptr;
      p.hp = hp;
      for (int k = 0; k < T_; ++k) {
        const int t = dir == 0 ? k : T_ - 1 - k;
        p.t = t;
        p.hin = hs + slot_in(t, dir, s.slots) * hsB;
        p.hout = hs + slot_out(t, dir, s.slots) * hsB;
        if (d.lstm) {
          p.cin = cs + slot_in(t, dir, s.slots) * cB;
          p.cout = cs + slot_out(t, dir, s.slots) * cB;
        }
        p.acts = acts ? acts + t * acts_t : nullptr;
        p.hn = hn ? hn + t * hn_t : nullptr;
        p.htil = htil ? htil + t * htil_t : nullptr;
        p.rh = rh ? rh + t * rh_t : nullptr;
        if (d.gru_rb) {
          // [r z] part: gh [B, 2H] = h W_h{r,z}^T; then n part on r*h.
          gemm_rm(bh, g, false, true, B, 2 * H, hs_ld, 1.0, p.hin, hs_ld, Wrec, hs_ld, 0.0, gh, tS, 2 * H);
          p.gh = gh;
          p.gh_ld = 2 * H;
          gru_rb1_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
          OPENRNN_LAUNCH_CHECK("gru_rb1_kernel");
          gemm_rm(bh, g, false, true, B, H, us_ld, 1.0, p.rh, us_ld, Wrec + static_cast<size_t>(2) * H * us_ld, us_ld,
                  0.0, ghn, tS, H);
          p.gh = ghn;
          p.gh_ld = H;
          gru_rb2_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
          OPENRNN_LAUNCH_CHECK("gru_rb2_kernel");
          continue;
        }
        if constexpr (!std::is_same<T, double>::value) {
          if (fused) {
            fused_forward_step(d, p, Whh, ctx.device, st);
            continue;
          }
        }
        if (in_place) {
          S* gxt = gx + x_rows.row(t, 0) * GH;  // rows b at gxt + b * gx_ldc
          gemm_rm(bh, g, false, true, B, GH, Hout, 1.0, p.hin, hs_ld, Whh, Hout, 1.0, gxt, tS, gx_ldc);
          p.gh_ld = 0;
          p.gh_lo = 0;
          p.gh = nullptr;
        } else if (reduced) {
          gemm_rm(bh, g, false, true, B, GH, Hout, 1.0, p.hin, hs_ld, Whh, Hout, 0.0, gh, tS, GH);
          p.gh_ld = GH;
          p.gh_lo = 0;
        } else if (m2) {
          // gh [2B, GH]: row 2b = hi_b W_hh^T, row 2b+1 = lo_b W_hh^T.
          gemm_rm(bh, g, false, true, 2 * B, GH, Hout, 1.0, p.hin, Hout, Whh, Hout, 0.0, gh, tS, GH);
          p.gh_ld = 2 * GH;
          p.gh_lo = GH;
        } else if (ks) {
          // gh [B, 2, GH]: part k = h[:, k*Hout/2 ..] W_hh[:, k*Hout/2 ..]^T over Hout/2 columns.
          const int K2 = Hout / 2;
          gemm_rm_batched(bh, g, false, true, B, GH, K2, 1.0, p.hin, hs_ld, K2, Whh, Hout, K2, 0.0, gh, tS, 2 * GH,
                          GH, 2);
          p.gh_ld = 2 * GH;
          p.gh_lo = GH;
        } else {
          gemm_rm(bh, g, false, true, B, GH, hs_ld, 1.0, p.hin, hs_ld, Wrec, hs_ld, 0.0, gh, tS, GH);
          p.gh_ld = GH;
        }
        if (!in_place) p.gh = gh;
        if (d.lstm) {
          lstm_fwd_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
          OPENRNN_LAUNCH_CHECK("lstm_fwd_kernel");
          if (d.proj) {
            // hp [B, P] = htil [B, H] W_hr^T for every row; proj_post makes it the state of active rows and y.
            gemm_rm(bh, g, false, true, B, Hout, us_ld, 1.0, p.htil, us_ld, Wproj, us_ld, 0.0, hp, tS, Hout);
            proj_post_kernel<T, S><<<grid_p, kBlock, 0, st>>>(p);
            OPENRNN_LAUNCH_CHECK("proj_post_kernel");
          }
        } else if (d.gru_lbr) {
          gru_fwd_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
          OPENRNN_LAUNCH_CHECK("gru_fwd_kernel");
        } else {
          rnn_fwd_kernel<T, S><<<grid_h, kBlock, 0, st>>>(p);
          OPENRNN_LAUNCH_CHECK("rnn_fwd_kernel");
        }
      }
      if (a.hy) state_out(hs + lastslot * hsB, static_cast<T*>(a.hy) + sidx * hB, B, Hout, hs_ld, st);
      if (a.cy && d.lstm) convert_or_zero(cs + lastslot * cB, static_cast<T*>(a.cy) + sidx * cB, cB, st);
    }
    ctx.join(d.D);
  }
}

template void std_forward<float>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&, const StdLayout&,
                                 const ForwardArgs&);
template void std_forward<double>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&, const StdLayout&,
                                  const ForwardArgs&);
template void std_forward<__half>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&, const StdLayout&,
                                  const ForwardArgs&);
template void std_forward<__nv_bfloat16>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&,
                                         const StdLayout&, const ForwardArgs&);

}  // namespace cuda
}  // namespace openrnn
