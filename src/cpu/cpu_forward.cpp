// Forward pass of the CPU backend (inference and training).
//
// Per layer and direction:
//   1. one BLAS GEMM for the input projection of all steps: XW [T*B, G*H] = X [T*B, I_l] x W_ih^T;
//   2. one OpenMP region for the whole time loop. Thread tid owns a fixed range of hidden units (blocks of NR = 64
//      bytes of S) in every gate. It packs W_hh^T's panels of its own units (so no barrier is needed after
//      packing), and per step computes the recurrent product of its units for all B rows, accumulating into XW of
//      the step (small_gemm), then runs the fused pointwise loop of the same units. One barrier per step publishes
//      the new h to every thread (two with a projection or for GRU reset-before, whose W_hn product needs all of r).
//      Owning units in all gates is what lets the product and the pointwise loop run without a barrier between them.
// Layouts chosen:
//   W_hh^T packed per gate into panels [Hout, NR] (cpu_gemm.h): the forward product needs W_hh^T, whose columns
//   are rows of the canonical W_hh; packing once per call (G*H*Hout elements, about one step's product) turns them
//   into unit-stride streams. W_hr^T likewise. W_ih is used in place by the BLAS (transposed operand).
//   Biases: bx = b_ih + b_hh per gate, added in the pointwise loop; GRU linear-before-reset keeps b_hn apart since
//   it sits inside r * (W_hn h + b_hn).
#include <algorithm>
#include <cstring>

#include "cpu_gemm.h"
#include "cpu_internal.h"
#include "cpu_pointwise.h"

namespace openrnn {
namespace cpu {

namespace {

template <typename S>
struct FwdBufs {
  S* XW;      // [T, B, G*H]
  S* C;       // training: [T, B, H]; inference: [B, H] state
  S* HP;      // training: [T, B, H]; inference: [B, H]
  S* HN;      // idem (GRU-LBR)
  S* RH;      // idem (GRU-RB)
  bool per_step;  // training: the buffers above have a [T] dimension
};

template <typename S>
void layer_dir_forward(const Dims& d, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& xs, const S* w, int l,
                       int dir, const S* X, S* Y, const S* H0, const S* C0, const FwdBufs<S>& fb, S* bx, S* bhn,
                       S* Pk, S* Pr, int nt) {
  constexpr int NR = kNR<S>;
  const LayerWeights<S> lw = layer_weights<S>(rnn, w, l, dir);
  const int T = d.T, B = d.B, H = d.H, GH = d.GH, Hout = d.Hout, W = d.W, P = d.P;
  const int Il = d.in_size(l);

  // Biases: everything that is added to a pre-activation goes to bx; GRU-LBR's b_hn stays apart.
  for (int k = 0; k < GH; ++k) {
    const bool hh_apart = d.gru_lbr && k >= 2 * H;
    bx[k] = (lw.bih ? lw.bih[k] : S(0)) + (lw.bhh && !hh_apart ? lw.bhh[k] : S(0));
  }
  if (d.gru_lbr)
    for (int j = 0; j < H; ++j) bhn[j] = lw.bhh ? lw.bhh[2 * H + j] : S(0);

  S* XW = fb.XW;
  par_gemm<S>(nt, false, true, static_cast<int>(d.TB()), GH, Il, S(1), X, Il, lw.ih, Il, S(0), XW, GH);

  const size_t TBstride = static_cast<size_t>(B);
  const S* H0ld = H0 + static_cast<size_t>(l * d.D + dir) * B * Hout;
  const S* C0ld = d.lstm ? C0 + static_cast<size_t>(l * d.D + dir) * B * H : nullptr;
  const int nbH = ceil_div(H, NR), nbP = d.proj ? ceil_div(P, NR) : 0;
  const size_t gstride = static_cast<size_t>(nbH) * Hout * NR;  // one gate's packed panels

  // Per-step multiply-adds of the recurrent products decide how many threads the time loop uses.
  const int nloop = threads_for(static_cast<size_t>(B) * GH * Hout + static_cast<size_t>(B) * P * H, nt);
  StepBarrier barrier;
#pragma omp parallel num_threads(nloop)
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
#pragma omp single
    barrier.set_size(nth);
    int ub0, ub1, pb0 = 0, pb1 = 0;
    split_blocks(nbH, tid, nth, ub0, ub1);
    const int j0 = std::min(H, ub0 * NR), j1 = std::min(H, ub1 * NR);
    for (int g = 0; g < d.G; ++g)
      pack_transposed<S>(lw.hh + static_cast<size_t>(g) * H * Hout, Hout, H, Hout, Pk + g * gstride, ub0, ub1);
    if (d.proj) {
      split_blocks(nbP, tid, nth, pb0, pb1);
      pack_transposed<S>(lw.hr, H, P, H, Pr, pb0, pb1);
    }
    const int p0 = std::min(P, pb0 * NR), p1 = std::min(P, pb1 * NR);

    for (int s = 0; s < T; ++s) {
      const int t = dir == 0 ? s : T - 1 - s;
      const int tp = dir == 0 ? t - 1 : t + 1;
      const size_t row = static_cast<size_t>(t) * TBstride, prow = static_cast<size_t>(tp) * TBstride;
      FwdStep<S> st;
      st.B = B;
      st.H = H;
      st.GH = GH;
      st.t = t;
      st.len = xs.lengths.data();
      st.xw = XW + row * GH;
      st.bx = bx;
      st.bhn = bhn;
      st.hprev = s == 0 ? H0ld : Y + prow * W + static_cast<size_t>(dir) * Hout;
      st.ldh = s == 0 ? static_cast<size_t>(Hout) : static_cast<size_t>(W);
      st.y = Y + row * W + static_cast<size_t>(dir) * Hout;
      st.ldy = static_cast<size_t>(W);
      if (d.lstm) {
        st.cprev = s == 0 ? C0ld : (fb.per_step ? fb.C + prow * H : fb.C);
        st.cout = fb.per_step ? fb.C + row * H : fb.C;
      } else {
        st.cprev = nullptr;
        st.cout = nullptr;
      }
      st.hp = fb.HP ? (fb.per_step ? fb.HP + row * H : fb.HP) : nullptr;
      st.hn = fb.HN ? (fb.per_step ? fb.HN + row * H : fb.HN) : nullptr;
      st.rh = fb.RH ? (fb.per_step ? fb.RH + row * H : fb.RH) : nullptr;
      st.clip = static_cast<S>(d.clip);
      st.proj = d.proj;
      st.relu = d.relu;

      if (!d.gru_rb) {
        for (int g = 0; g < d.G; ++g) {
          if (d.gru_lbr && g == 2)
            small_gemm<S>(B, Hout, st.hprev, st.ldh, Pk + g * gstride, NR, static_cast<size_t>(Hout) * NR, ub0, ub1,
                          H, st.hn, H, false);
          else
            small_gemm<S>(B, Hout, st.hprev, st.ldh, Pk + g * gstride, NR, static_cast<size_t>(Hout) * NR, ub0, ub1,
                          H, st.xw + static_cast<size_t>(g) * H, GH, true);
        }
        if (d.lstm)
          lstm_forward_units(st, j0, j1);
        else if (d.gru_lbr)
          gru_forward_units(st, j0, j1);
        else
          rnn_forward_units(st, j0, j1);
        if (d.proj) {
          barrier.wait();
          // h = h~ W_hr^T over the thread's projected units; padding rows keep h_prev.
          small_gemm<S>(B, H, st.hp, H, Pr, NR, static_cast<size_t>(H) * NR, pb0, pb1, P, st.y, W, false);
          for (int b = 0; b < B; ++b)
            if (t >= xs.lengths[static_cast<size_t>(b)])
              copy_units(st.y + b * st.ldy, st.hprev + b * st.ldh, p0, p1);
        }
      } else {
        for (int g = 0; g < 2; ++g)
          small_gemm<S>(B, Hout, st.hprev, st.ldh, Pk + g * gstride, NR, static_cast<size_t>(Hout) * NR, ub0, ub1, H,
                        st.xw + static_cast<size_t>(g) * H, GH, true);
        gru_rb_gates_units(st, j0, j1);
        barrier.wait();
        small_gemm<S>(B, H, st.rh, H, Pk + 2 * gstride, NR, static_cast<size_t>(Hout) * NR, ub0, ub1, H,
                      st.xw + static_cast<size_t>(2) * H, GH, true);
        gru_rb_output_units(st, j0, j1);
      }
      barrier.wait();
    }
  }
}

}  // namespace

template <typename S>
void forward_pass(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& xs, const ForwardArgs& a, int nt) {
  const Dims d = make_dims(rnn, xs);
  nt = call_threads(d, nt);
  const bool training = a.mode == OPENRNN_FWD_TRAINING;
  const FwdWs F = forward_ws(d, training);
  char* ws = align64(a.workspace);
  void* rs = a.reserve;
  const ResHeader rh = reserve_header(d);
  const size_t TB = d.TB();

  const S* w = weights_as<S>(a.w, d.dt, d.nweights, at<S>(ws, F.Wf), nt);

  // Initial states as S ([L*D, B, Hout], [L*D, B, H]); in training they are the reserve's copies.
  S* H0 = training ? at<S>(rs, rh.H0) : at<S>(ws, F.H0);
  S* C0 = d.lstm ? (training ? at<S>(rs, rh.C0) : at<S>(ws, F.C0)) : nullptr;
  const size_t nH = static_cast<size_t>(d.L) * d.D * d.B * d.Hout, nC = static_cast<size_t>(d.L) * d.D * d.B * d.H;
  if (a.hx)
    load_row<S>(a.hx, d.dt, 0, H0, nH);
  else
    std::fill(H0, H0 + nH, S(0));
  if (d.lstm) {
    if (a.cx)
      load_row<S>(a.cx, d.dt, 0, C0, nC);
    else
      std::fill(C0, C0 + nC, S(0));
  }

  const S* X = static_cast<const S*>(a.x);
  if (F.X0 != kNone) {
    S* X0 = at<S>(ws, F.X0);
    gather_seq<S>(d, xs, a.x, d.I, X0, nt);
    X = X0;
  }

  S* bx = at<S>(ws, F.bx);
  S* bhn = at<S>(ws, F.bhn);
  S* Pk = at<S>(ws, F.Pk);
  S* Pr = at<S>(ws, F.Pr);
  const S* Ylast = nullptr;
  for (int l = 0; l < d.L; ++l) {
    const ResLayer RL = training ? reserve_layer(d, l) : ResLayer{};
    S* Y = training ? at<S>(rs, RL.Y) : at<S>(ws, l % 2 == 0 ? F.Ya : F.Yb);
    const S* Xin = X;
    if (l > 0) {
      Xin = Ylast;
      if (training && d.dropout > 0.0) {
        S* Xd = at<S>(rs, RL.Xd);
        dropout_apply<S>(Ylast, Xd, TB * d.W, rnn, l, nt);
        Xin = Xd;
      }
    }
    for (int dir = 0; dir < d.D; ++dir) {
      FwdBufs<S> fb;
      if (training) {
        const ResDir& r = RL.dir[dir];
        fb = FwdBufs<S>{at<S>(rs, r.G), at<S>(rs, r.C), at<S>(rs, r.HP), at<S>(rs, r.HN), at<S>(rs, r.RH), true};
      } else {
        fb = FwdBufs<S>{at<S>(ws, F.XW), at<S>(ws, F.C), at<S>(ws, F.HP), at<S>(ws, F.HN), at<S>(ws, F.RH), false};
      }
      layer_dir_forward<S>(d, rnn, xs, w, l, dir, Xin, Y, H0, C0, fb, bx, bhn, Pk, Pr, nt);

      // Final states: the state after the last processed step (t = T-1 forward, t = 0 reverse) is, by the
      // pass-through at padding steps, the state at each sequence's own end.
      const int tl = dir == 0 ? d.T - 1 : 0;
      const size_t idx = static_cast<size_t>(l * d.D + dir) * d.B;
      if (a.hy)
        for (int b = 0; b < d.B; ++b)
          store_row<S>(a.hy, d.dt, (idx + b) * d.Hout,
                       Y + (static_cast<size_t>(tl) * d.B + b) * d.W + static_cast<size_t>(dir) * d.Hout,
                       static_cast<size_t>(d.Hout));
      if (a.cy && d.lstm) {
        const S* cfin = fb.per_step ? fb.C + static_cast<size_t>(tl) * d.B * d.H : fb.C;
        store_row<S>(a.cy, d.dt, idx * d.H, cfin, static_cast<size_t>(d.B) * d.H);
      }
    }
    Ylast = Y;
  }
  scatter_seq<S>(d, xs, Ylast, d.W, a.y, nt);
}

template void forward_pass<float>(const openrnn_rnn_desc&, const openrnn_seq_desc&, const ForwardArgs&, int);
template void forward_pass<double>(const openrnn_rnn_desc&, const openrnn_seq_desc&, const ForwardArgs&, int);

}  // namespace cpu
}  // namespace openrnn
