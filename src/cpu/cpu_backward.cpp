// backward_data of the CPU backend: dx, dhx, dcx, and the pre-activation gradients left in the reserve for
// backward_weights.
//
// Per layer (top to bottom) and direction, one OpenMP region runs the time loop in reverse processing order. As in
// the forward pass each thread owns fixed hidden units in every gate: the pointwise loop turns the activations of its
// units into pre-activation gradients (in place in the reserve's gate buffer), one barrier publishes them, and the
// thread computes the carried gradient of its units dh_prev = dG W_hh (+ the direct GRU term) with small_gemm. The
// canonical W_hh [G*H, Hout] is already k-major for this product, so it is read in place (no packing). The carried
// gradient is double-buffered (DH read, DHD written, swapped per step); each thread only touches its own units of
// both, so no second barrier is needed.
// Then the input gradient of the layer, dX = sum over directions of dG [T*B, G*H] x W_ih [G*H, I_l], is one BLAS
// GEMM per direction over all steps, and for l > 0 it becomes dY of layer l-1 through the dropout mask.
#include <algorithm>
#include <cstring>

#include "cpu_gemm.h"
#include "cpu_internal.h"
#include "cpu_pointwise.h"

namespace openrnn {
namespace cpu {

namespace {

template <typename S>
void layer_dir_backward(const Dims& d, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& xs, const S* w, int l,
                        int dir, void* rs, const ResLayer& RL, const S* H0, const S* C0, const S* dY,
                        const BackwardDataArgs& a, S* DHa, S* DHb, S* DC, S* DHT, S* DRH, int nt) {
  constexpr int NR = kNR<S>;
  const LayerWeights<S> lw = layer_weights<S>(rnn, w, l, dir);
  const int T = d.T, B = d.B, H = d.H, GH = d.GH, Hout = d.Hout, W = d.W, P = d.P;
  const ResDir& r = RL.dir[dir];
  S* Y = at<S>(rs, RL.Y);
  S* G = at<S>(rs, r.G);
  S* C = at<S>(rs, r.C);
  S* DHP = at<S>(rs, r.DHP);
  S* HN = at<S>(rs, r.HN);
  const size_t idx = static_cast<size_t>(l * d.D + dir) * B;
  const S* H0ld = H0 + idx * Hout;
  const S* C0ld = d.lstm ? C0 + idx * H : nullptr;

  // Gradients arriving at the final states.
  if (a.dhy)
    load_row<S>(a.dhy, d.dt, idx * Hout, DHa, static_cast<size_t>(B) * Hout);
  else
    std::fill(DHa, DHa + static_cast<size_t>(B) * Hout, S(0));
  if (d.lstm) {
    if (a.dcy)
      load_row<S>(a.dcy, d.dt, idx * H, DC, static_cast<size_t>(B) * H);
    else
      std::fill(DC, DC + static_cast<size_t>(B) * H, S(0));
  }
  const int nbH = ceil_div(H, NR), nbP = d.proj ? ceil_div(P, NR) : 0;

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
    if (d.proj) split_blocks(nbP, tid, nth, pb0, pb1);
    const int j0 = std::min(H, ub0 * NR), j1 = std::min(H, ub1 * NR);
    const int p0 = std::min(P, pb0 * NR), p1 = std::min(P, pb1 * NR);
    S* dh_in = DHa;
    S* dhd = DHb;
    for (int s = T - 1; s >= 0; --s) {
      const int t = dir == 0 ? s : T - 1 - s;
      const int tp = dir == 0 ? t - 1 : t + 1;
      const size_t row = static_cast<size_t>(t) * B, prow = static_cast<size_t>(tp) * B;
      BwdStep<S> st;
      st.B = B;
      st.H = H;
      st.GH = GH;
      st.t = t;
      st.len = xs.lengths.data();
      st.g = G + row * GH;
      st.dy = dY + row * W + static_cast<size_t>(dir) * Hout;
      st.lddy = static_cast<size_t>(W);
      st.dh_in = dh_in;
      st.dhd = dhd;
      st.dht = DHT;
      st.dc = DC;
      st.c = d.lstm ? C + row * H : nullptr;
      st.cprev = d.lstm ? (s == 0 ? C0ld : C + prow * H) : nullptr;
      st.hprev = s == 0 ? H0ld : Y + prow * W + static_cast<size_t>(dir) * Hout;
      st.ldh = s == 0 ? static_cast<size_t>(Hout) : static_cast<size_t>(W);
      st.h = Y + row * W + static_cast<size_t>(dir) * Hout;
      st.ldhh = static_cast<size_t>(W);
      st.hn = HN ? HN + row * H : nullptr;
      st.drh = DRH;
      st.clip = static_cast<S>(d.clip);
      st.proj = d.proj;
      st.relu = d.relu;

      if (d.proj) {
        S* dhp = DHP + row * P;
        lstm_proj_backward_units(st, dhp, P, p0, p1);
        barrier.wait();
        // dh~ = dh_proj W_hr over the thread's hidden units; W_hr [P, H] is k-major for it.
        small_gemm<S>(B, P, dhp, P, lw.hr, H, NR, ub0, ub1, H, DHT, H, false);
        lstm_backward_units(st, j0, j1);
        barrier.wait();
        small_gemm<S>(B, GH, st.g, GH, lw.hh, P, NR, pb0, pb1, P, dhd, P, true);
      } else if (d.lstm || d.rnn) {
        if (d.lstm)
          lstm_backward_units(st, j0, j1);
        else
          rnn_backward_units(st, j0, j1);
        barrier.wait();
        small_gemm<S>(B, GH, st.g, GH, lw.hh, H, NR, ub0, ub1, H, dhd, H, true);
      } else if (d.gru_lbr) {
        gru_backward_units(st, j0, j1);
        barrier.wait();
        // dh_prev = direct + [d(xr) d(xz)] W_h{r,z} + d(hn) W_hn.
        small_gemm<S>(B, 2 * H, st.g, GH, lw.hh, H, NR, ub0, ub1, H, dhd, H, true);
        small_gemm<S>(B, H, st.hn, H, lw.hh + static_cast<size_t>(2) * H * H, H, NR, ub0, ub1, H, dhd, H, true);
      } else {  // GRU reset-before
        gru_rb_backward_nz_units(st, j0, j1);
        barrier.wait();
        small_gemm<S>(B, H, st.g + 2 * H, GH, lw.hh + static_cast<size_t>(2) * H * H, H, NR, ub0, ub1, H, DRH, H,
                      false);
        gru_rb_backward_r_units(st, j0, j1);
        barrier.wait();
        small_gemm<S>(B, 2 * H, st.g, GH, lw.hh, H, NR, ub0, ub1, H, dhd, H, true);
      }
      std::swap(dh_in, dhd);
    }
  }
  // After T swaps the result is in DHa when T is even, DHb when odd.
  const S* dh_fin = (T % 2 == 0) ? DHa : DHb;
  if (a.dhx) store_row<S>(a.dhx, d.dt, idx * Hout, dh_fin, static_cast<size_t>(B) * Hout);
  if (a.dcx && d.lstm) store_row<S>(a.dcx, d.dt, idx * H, DC, static_cast<size_t>(B) * H);
}

}  // namespace

template <typename S>
void backward_data_pass(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& xs, const BackwardDataArgs& a, int nt) {
  const Dims d = make_dims(rnn, xs);
  nt = call_threads(d, nt);
  const BwdWs Bw = backward_ws(d);
  char* ws = align64(a.workspace);
  void* rs = a.reserve;
  const ResHeader rh = reserve_header(d);
  const size_t TB = d.TB();
  const S* w = weights_as<S>(a.w, d.dt, d.nweights, at<S>(ws, Bw.Wf), nt);
  const S* H0 = at<S>(rs, rh.H0);
  const S* C0 = at<S>(rs, rh.C0);

  S* dYcur = at<S>(ws, Bw.dA);
  S* dXbuf = at<S>(ws, Bw.dB);
  gather_seq<S>(d, xs, a.dy, d.W, dYcur, nt);  // padding steps of dy are never read

  for (int l = d.L - 1; l >= 0; --l) {
    const ResLayer RL = reserve_layer(d, l);
    for (int dir = 0; dir < d.D; ++dir)
      layer_dir_backward<S>(d, rnn, xs, w, l, dir, rs, RL, H0, C0, dYcur, a, at<S>(ws, Bw.DH), at<S>(ws, Bw.DHD),
                            at<S>(ws, Bw.DC), at<S>(ws, Bw.DHT), at<S>(ws, Bw.DRH), nt);
    const int Il = d.in_size(l);
    for (int dir = 0; dir < d.D; ++dir) {
      const LayerWeights<S> lw = layer_weights<S>(rnn, w, l, dir);
      par_gemm<S>(nt, false, false, static_cast<int>(TB), Il, d.GH, S(1), at<S>(rs, RL.dir[dir].G), d.GH, lw.ih, Il,
                dir == 0 ? S(0) : S(1), dXbuf, Il);
    }
    if (l > 0) {
      if (d.dropout > 0.0) dropout_apply<S>(dXbuf, dXbuf, TB * d.W, rnn, l, nt);
      std::swap(dYcur, dXbuf);
    } else {
      scatter_seq<S>(d, xs, dXbuf, d.I, a.dx, nt);
    }
  }
}

template void backward_data_pass<float>(const openrnn_rnn_desc&, const openrnn_seq_desc&, const BackwardDataArgs&,
                                        int);
template void backward_data_pass<double>(const openrnn_rnn_desc&, const openrnn_seq_desc&, const BackwardDataArgs&,
                                         int);

}  // namespace cpu
}  // namespace openrnn
