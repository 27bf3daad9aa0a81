// The cell equations, one element at a time, as __host__ __device__ inline functions: the single statement of the
// numerics that both backends compile (docs/numerics.md is the same in words). S is the arithmetic type: double for
// float64 problems, float for float32/float16/bfloat16 (storage types are converted before these are called).
//
// Naming: "pre" = pre-activation (sum of the input part W_ih x + b_ih and the recurrent part W_hh h + b_hh);
// "d" prefix = gradient of the loss. Gate order: LSTM i f g o, GRU r z n.
#pragma once

#include <cmath>

#include "philox.h"  // OPENRNN_HD

namespace openrnn {
namespace cell {

OPENRNN_HD float exp_(float x) { return ::expf(x); }
OPENRNN_HD double exp_(double x) { return ::exp(x); }
OPENRNN_HD float tanh_(float x) { return ::tanhf(x); }
OPENRNN_HD double tanh_(double x) { return ::tanh(x); }

template <typename S>
OPENRNN_HD S sigmoid(S x) {
  return S(1) / (S(1) + exp_(-x));
}
// cell::sigmoid as a functor: the default of the forward functions' Sig parameter. A caller may pass another that
// computes the same function (standard_wgmma_cell.cuh's SigmoidNoBranch: the same operations without the division's
// slow-path branch).
struct Sigmoid {
  template <typename S>
  OPENRNN_HD S operator()(S x) const {
    return sigmoid(x);
  }
};
template <typename S>
OPENRNN_HD S relu(S x) {
  return x > S(0) ? x : S(0);
}

// ---- LSTM -------------------------------------------------------------------------------------------------------
// Forward of one unit. clip > 0 clamps c' to [-clip, clip]. Outputs the four activations (kept for backward),
// the new cell c' and h~ = o * tanh(c') (the output before the optional projection).
template <typename S>
struct LstmAct {
  S i, f, g, o;
};

template <typename S, typename Sig = Sigmoid>
OPENRNN_HD void lstm_forward(S pre_i, S pre_f, S pre_g, S pre_o, S c_prev, S clip, LstmAct<S>& a, S& c, S& h,
                             Sig sig = Sig()) {
  a.i = sig(pre_i);
  a.f = sig(pre_f);
  a.g = tanh_(pre_g);
  a.o = sig(pre_o);
  c = a.f * c_prev + a.i * a.g;
  if (clip > S(0)) c = c > clip ? clip : (c < -clip ? -clip : c);
  h = a.o * tanh_(c);
}

// Backward of one unit. dh: gradient w.r.t. h~ of this step (from y, from h of the next step and the projection);
// dc_next: gradient w.r.t. c' arriving from step t+1. c: the (clipped) c' of this step. A clipped c' passes no
// gradient: |c'| < clip is required for the gradient to flow (the boundary itself is a measure-zero case).
// Outputs the pre-activation gradients and the gradient w.r.t. c_prev.
template <typename S>
OPENRNN_HD void lstm_backward(const LstmAct<S>& a, S c, S c_prev, S clip, S dh, S dc_next, S& dpre_i, S& dpre_f,
                              S& dpre_g, S& dpre_o, S& dc_prev) {
  const S tc = tanh_(c);
  S dc = dc_next + dh * a.o * (S(1) - tc * tc);
  if (clip > S(0) && !(c < clip && c > -clip)) dc = S(0);
  const S d_o = dh * tc;
  dpre_i = dc * a.g * a.i * (S(1) - a.i);
  dpre_f = dc * c_prev * a.f * (S(1) - a.f);
  dpre_g = dc * a.i * (S(1) - a.g * a.g);
  dpre_o = d_o * a.o * (S(1) - a.o);
  dc_prev = dc * a.f;
}

// ---- GRU, linear-before-reset -------------------------------------------------------------------------------------
// xr, xz, xn: W_i* x + b_i*;  hr, hz, hn: W_h* h + b_h*.  n = tanh(xn + r * hn), h' = (1 - z) n + z h.
template <typename S, typename Sig = Sigmoid>
OPENRNN_HD void gru_forward(S xr, S xz, S xn, S hr, S hz, S hn, S h_prev, S& r, S& z, S& n, S& h, Sig sig = Sig()) {
  r = sig(xr + hr);
  z = sig(xz + hz);
  n = tanh_(xn + r * hn);
  h = (S(1) - z) * n + z * h_prev;
}

// dh: gradient w.r.t. h'. Outputs the gradients w.r.t. the input-side pre-activations (dxr, dxz, dxn) and the
// recurrent-side ones (dhr = dxr, dhz = dxz, dhn = r * dxn), and the direct part of dh_prev (z * dh; the
// W_hh^T part is added by the caller's GEMM).
template <typename S>
OPENRNN_HD void gru_backward(S r, S z, S n, S hn, S h_prev, S dh, S& dxr, S& dxz, S& dxn, S& dhn, S& dh_prev_direct) {
  const S dn = dh * (S(1) - z);
  const S dz = dh * (h_prev - n);
  dxn = dn * (S(1) - n * n);
  dhn = dxn * r;
  dxr = dxn * hn * r * (S(1) - r);
  dxz = dz * z * (S(1) - z);
  dh_prev_direct = dh * z;
}

// ---- GRU, reset-before (Keras reset_after=False) ------------------------------------------------------------------
// Step in two halves: r, z from xr + hr, xz + hz; then hn = W_hn (r * h) + b_hn; n = tanh(xn + hn).
template <typename S>
OPENRNN_HD void gru_rb_gates(S xr, S xz, S hr, S hz, S& r, S& z) {
  r = sigmoid(xr + hr);
  z = sigmoid(xz + hz);
}
template <typename S>
OPENRNN_HD void gru_rb_output(S xn, S hn, S z, S h_prev, S& n, S& h) {
  n = tanh_(xn + hn);
  h = (S(1) - z) * n + z * h_prev;
}
// First half of the backward: from dh' to dpre_n (= d(xn) = d(hn)) and dpre_z, and the direct part z * dh.
template <typename S>
OPENRNN_HD void gru_rb_backward_nz(S z, S n, S h_prev, S dh, S& dpre_z, S& dpre_n, S& dh_prev_direct) {
  dpre_n = dh * (S(1) - z) * (S(1) - n * n);
  dpre_z = dh * (h_prev - n) * z * (S(1) - z);
  dh_prev_direct = dh * z;
}
// Second half: d_rh = W_hn^T dpre_n (gradient w.r.t. r * h_prev) gives dpre_r, and r * d_rh joins dh_prev.
template <typename S>
OPENRNN_HD void gru_rb_backward_r(S r, S h_prev, S d_rh, S& dpre_r, S& dh_prev_via_rh) {
  dpre_r = d_rh * h_prev * r * (S(1) - r);
  dh_prev_via_rh = d_rh * r;
}

// ---- plain RNN --------------------------------------------------------------------------------------------------
template <typename S>
OPENRNN_HD S rnn_forward(S pre, bool relu_act) {
  return relu_act ? relu(pre) : tanh_(pre);
}
// h: the output of this step. relu' is taken as 0 at 0 (PyTorch's convention).
template <typename S>
OPENRNN_HD S rnn_backward(S h, S dh, bool relu_act) {
  return relu_act ? (h > S(0) ? dh : S(0)) : dh * (S(1) - h * h);
}

}  // namespace cell
}  // namespace openrnn
