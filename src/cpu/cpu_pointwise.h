// The fused per-step pointwise loops of the CPU backend: one call per thread per step, over all B rows and the
// thread's units [j0, j1). Each loop reads the step's pre-activations (input projection + recurrent product, already
// summed in place by the GEMMs), adds the biases, applies the cell, and writes the states, the layer output and the
// values backward needs, in one pass.
//
// Numerics: for S = double the element math is a call to src/cell_math.h itself. For S = float the same equations
// are restated on eight AVX2 lanes (cpu_simd.h) in the same order of operations; the float64 path is therefore the
// reference the float32 path is tested against.
//
// Padding (t >= len[b]): the state passes through unchanged (c_out = c_prev, the layer output row holds h_prev), the
// gradient carried in passes through unchanged, and every gradient slot of the step is zero, so the products over all
// steps (weight gradients, input gradients) need no masking.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cell_math.h"
#include "cpu_simd.h"

namespace openrnn {
namespace cpu {

template <typename S>
inline void copy_units(S* dst, const S* src, int j0, int j1) {
  for (int j = j0; j < j1; ++j) dst[j] = src[j];
}
template <typename S>
inline void zero_units(S* dst, int j0, int j1) {
  for (int j = j0; j < j1; ++j) dst[j] = S(0);
}

// ---- forward -----------------------------------------------------------------------------------------------------
template <typename S>
struct FwdStep {
  int B, H, GH;
  int t;
  const int32_t* len;
  S* xw;              // [B, G*H] (row stride GH): pre-activations in, activations out (kept in training)
  const S* bx;        // [G*H] bias added to every pre-activation (see cpu_forward.cpp)
  const S* bhn;       // [H] GRU-LBR: b_hn
  const S* hprev;     // [B, Hout] row stride ldh
  size_t ldh;
  S* y;               // [B, Hout] row stride ldy: this step's output (without projection)
  size_t ldy;
  const S* cprev;     // [B, H] LSTM
  S* cout;            // [B, H] LSTM (may equal cprev: in-place per element)
  S* hp;              // [B, H] LSTM with projection: h~ (the projection writes y)
  S* hn;              // [B, H] GRU-LBR: W_hn h in, hn = W_hn h + b_hn out
  S* rh;              // [B, H] GRU-RB: r * h_prev out
  S clip;
  bool proj, relu;
};

template <typename S>
void lstm_forward_units(const FwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  const int H = s.H;
  for (int b = 0; b < s.B; ++b) {
    const S* cp = s.cprev + static_cast<size_t>(b) * H;
    S* co = s.cout + static_cast<size_t>(b) * H;
    const S* hp_prev = s.hprev + b * s.ldh;
    if (s.t >= s.len[b]) {
      copy_units(co, cp, j0, j1);
      if (s.proj)
        zero_units(s.hp + static_cast<size_t>(b) * H, j0, j1);
      else
        copy_units(s.y + b * s.ldy, hp_prev, j0, j1);
      continue;
    }
    S* x = s.xw + static_cast<size_t>(b) * s.GH;
    S* hout = s.proj ? s.hp + static_cast<size_t>(b) * H : s.y + b * s.ldy;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      const V pi = vload(x + j, n) + vload(s.bx + j, n);
      const V pf = vload(x + H + j, n) + vload(s.bx + H + j, n);
      const V pg = vload(x + 2 * H + j, n) + vload(s.bx + 2 * H + j, n);
      const V po = vload(x + 3 * H + j, n) + vload(s.bx + 3 * H + j, n);
      const V c_prev = vload(cp + j, n);
      V ai, af, ag, ao, c, h;
      if constexpr (std::is_same<S, double>::value) {
        cell::LstmAct<double> a;
        cell::lstm_forward<double>(pi, pf, pg, po, c_prev, s.clip, a, c, h);
        ai = a.i, af = a.f, ag = a.g, ao = a.o;
      } else {
        ai = vsigmoid(pi), af = vsigmoid(pf), ag = vtanh(pg), ao = vsigmoid(po);
        c = af * c_prev + ai * ag;
        if (s.clip > S(0)) c = vclamp(c, s.clip);
        h = ao * vtanh(c);
      }
      vstore(x + j, ai, n);
      vstore(x + H + j, af, n);
      vstore(x + 2 * H + j, ag, n);
      vstore(x + 3 * H + j, ao, n);
      vstore(co + j, c, n);
      vstore(hout + j, h, n);
    }
  }
}

// GRU, linear-before-reset. xw's r and z columns hold W_i x + W_h h; its n column W_in x only; hn holds W_hn h.
template <typename S>
void gru_forward_units(const FwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  const int H = s.H;
  for (int b = 0; b < s.B; ++b) {
    const S* hprev = s.hprev + b * s.ldh;
    S* y = s.y + b * s.ldy;
    S* hn = s.hn + static_cast<size_t>(b) * H;
    if (s.t >= s.len[b]) {
      copy_units(y, hprev, j0, j1);
      zero_units(hn, j0, j1);
      continue;
    }
    S* x = s.xw + static_cast<size_t>(b) * s.GH;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      const V xr = vload(x + j, n) + vload(s.bx + j, n);
      const V xz = vload(x + H + j, n) + vload(s.bx + H + j, n);
      const V xn = vload(x + 2 * H + j, n) + vload(s.bx + 2 * H + j, n);
      const V hnv = vload(hn + j, n) + vload(s.bhn + j, n);
      const V hp = vload(hprev + j, n);
      V r, z, nn, h;
      if constexpr (std::is_same<S, double>::value) {
        cell::gru_forward<double>(xr, xz, xn, 0.0, 0.0, hnv, hp, r, z, nn, h);
      } else {
        r = vsigmoid(xr);
        z = vsigmoid(xz);
        nn = vtanh(xn + r * hnv);
        h = (V(1.0f) - z) * nn + z * hp;
      }
      vstore(x + j, r, n);
      vstore(x + H + j, z, n);
      vstore(x + 2 * H + j, nn, n);
      vstore(hn + j, hnv, n);
      vstore(y + j, h, n);
    }
  }
}

// GRU reset-before, first half: r, z from xw (W_i x + W_h h); rh = r * h_prev, the input of W_hn.
template <typename S>
void gru_rb_gates_units(const FwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  const int H = s.H;
  for (int b = 0; b < s.B; ++b) {
    S* rh = s.rh + static_cast<size_t>(b) * H;
    if (s.t >= s.len[b]) {
      zero_units(rh, j0, j1);
      continue;
    }
    S* x = s.xw + static_cast<size_t>(b) * s.GH;
    const S* hprev = s.hprev + b * s.ldh;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      const V xr = vload(x + j, n) + vload(s.bx + j, n);
      const V xz = vload(x + H + j, n) + vload(s.bx + H + j, n);
      V r, z;
      if constexpr (std::is_same<S, double>::value) {
        cell::gru_rb_gates<double>(xr, xz, 0.0, 0.0, r, z);
      } else {
        r = vsigmoid(xr);
        z = vsigmoid(xz);
      }
      vstore(x + j, r, n);
      vstore(x + H + j, z, n);
      vstore(rh + j, r * vload(hprev + j, n), n);
    }
  }
}

// GRU reset-before, second half: xw's n column holds W_in x + W_hn (r * h_prev).
template <typename S>
void gru_rb_output_units(const FwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  const int H = s.H;
  for (int b = 0; b < s.B; ++b) {
    const S* hprev = s.hprev + b * s.ldh;
    S* y = s.y + b * s.ldy;
    if (s.t >= s.len[b]) {
      copy_units(y, hprev, j0, j1);
      continue;
    }
    S* x = s.xw + static_cast<size_t>(b) * s.GH;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      const V xn = vload(x + 2 * H + j, n) + vload(s.bx + 2 * H + j, n);
      const V z = vload(x + H + j, n);
      const V hp = vload(hprev + j, n);
      V nn, h;
      if constexpr (std::is_same<S, double>::value) {
        cell::gru_rb_output<double>(xn, 0.0, z, hp, nn, h);
      } else {
        nn = vtanh(xn);
        h = (V(1.0f) - z) * nn + z * hp;
      }
      vstore(x + 2 * H + j, nn, n);
      vstore(y + j, h, n);
    }
  }
}

template <typename S>
void rnn_forward_units(const FwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  for (int b = 0; b < s.B; ++b) {
    const S* hprev = s.hprev + b * s.ldh;
    S* y = s.y + b * s.ldy;
    if (s.t >= s.len[b]) {
      copy_units(y, hprev, j0, j1);
      continue;
    }
    const S* x = s.xw + static_cast<size_t>(b) * s.GH;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      const V pre = vload(x + j, n) + vload(s.bx + j, n);
      V h;
      if constexpr (std::is_same<S, double>::value)
        h = cell::rnn_forward<double>(pre, s.relu);
      else
        h = s.relu ? vrelu(pre) : vtanh(pre);
      vstore(y + j, h, n);
    }
  }
}

// ---- backward ----------------------------------------------------------------------------------------------------
template <typename S>
struct BwdStep {
  int B, H, GH;
  int t;
  const int32_t* len;
  S* g;              // [B, G*H]: activations in, pre-activation gradients out
  const S* dy;       // [B, Hout] row stride lddy: dY of this step and direction
  size_t lddy;
  const S* dh_in;    // [B, Hout] gradient w.r.t. h arriving from the next step in time order
  S* dhd;            // [B, Hout] out: the part of dh_prev not through W_hh (GRU z * dh), or dh_in at padding
  const S* dht;      // [B, H] LSTM with projection: gradient w.r.t. h~ (replaces dy + dh_in)
  S* dc;             // [B, H] LSTM: dc_next in, dc_prev out
  const S* c;        // [B, H] LSTM: c of this step
  const S* cprev;    // [B, H]
  const S* hprev;    // [B, Hout] row stride ldh
  size_t ldh;
  const S* h;        // [B, Hout] row stride ldhh: RNN output of this step
  size_t ldhh;
  S* hn;             // [B, H] GRU-LBR: hn in, d(hn) out
  const S* drh;      // [B, H] GRU-RB: W_hn^T d(n pre-activation)
  S clip;
  bool proj, relu;
};

template <typename S>
void lstm_backward_units(const BwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  const int H = s.H;
  for (int b = 0; b < s.B; ++b) {
    S* g = s.g + static_cast<size_t>(b) * s.GH;
    if (s.t >= s.len[b]) {
      for (int q = 0; q < 4; ++q) zero_units(g + q * H, j0, j1);
      if (!s.proj) copy_units(s.dhd + static_cast<size_t>(b) * H, s.dh_in + static_cast<size_t>(b) * H, j0, j1);
      continue;
    }
    const S* cb = s.c + static_cast<size_t>(b) * H;
    const S* cpb = s.cprev + static_cast<size_t>(b) * H;
    S* dcb = s.dc + static_cast<size_t>(b) * H;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      V dh;
      if (s.proj)
        dh = vload(s.dht + static_cast<size_t>(b) * H + j, n);
      else
        dh = vload(s.dy + b * s.lddy + j, n) + vload(s.dh_in + static_cast<size_t>(b) * H + j, n);
      const V ai = vload(g + j, n), af = vload(g + H + j, n), ag = vload(g + 2 * H + j, n),
              ao = vload(g + 3 * H + j, n);
      const V c = vload(cb + j, n), cp = vload(cpb + j, n), dcn = vload(dcb + j, n);
      V di, df, dg, dO, dcp;
      if constexpr (std::is_same<S, double>::value) {
        const cell::LstmAct<double> a{ai, af, ag, ao};
        cell::lstm_backward<double>(a, c, cp, s.clip, dh, dcn, di, df, dg, dO, dcp);
      } else {
        const V one(1.0f);
        const V tc = vtanh(c);
        V dcv = dcn + dh * ao * (one - tc * tc);
        if (s.clip > S(0)) dcv = vclip_grad(dcv, c, s.clip);
        const V d_o = dh * tc;
        di = dcv * ag * ai * (one - ai);
        df = dcv * cp * af * (one - af);
        dg = dcv * ai * (one - ag * ag);
        dO = d_o * ao * (one - ao);
        dcp = dcv * af;
      }
      vstore(g + j, di, n);
      vstore(g + H + j, df, n);
      vstore(g + 2 * H + j, dg, n);
      vstore(g + 3 * H + j, dO, n);
      vstore(dcb + j, dcp, n);
    }
    if (!s.proj) zero_units(s.dhd + static_cast<size_t>(b) * H, j0, j1);
  }
}

// LSTM with projection, over the thread's projected units [p0, p1): the gradient w.r.t. the projected h of this step
// (dY + the carried gradient) is stored in dhp (for dW_hr and the W_hr product); dhd starts the carry for the
// previous step (zero, or the carried gradient itself at padding).
template <typename S>
void lstm_proj_backward_units(const BwdStep<S>& s, S* dhp, int P, int p0, int p1) {
  for (int b = 0; b < s.B; ++b) {
    S* d = dhp + static_cast<size_t>(b) * P;
    const S* din = s.dh_in + static_cast<size_t>(b) * P;
    S* dd = s.dhd + static_cast<size_t>(b) * P;
    if (s.t >= s.len[b]) {
      zero_units(d, p0, p1);
      copy_units(dd, din, p0, p1);
      continue;
    }
    const S* dyb = s.dy + b * s.lddy;
    for (int p = p0; p < p1; ++p) d[p] = dyb[p] + din[p];
    zero_units(dd, p0, p1);
  }
}

template <typename S>
void gru_backward_units(const BwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  const int H = s.H;
  for (int b = 0; b < s.B; ++b) {
    S* g = s.g + static_cast<size_t>(b) * s.GH;
    S* hn = s.hn + static_cast<size_t>(b) * H;
    S* dhd = s.dhd + static_cast<size_t>(b) * H;
    const S* din = s.dh_in + static_cast<size_t>(b) * H;
    if (s.t >= s.len[b]) {
      for (int q = 0; q < 3; ++q) zero_units(g + q * H, j0, j1);
      zero_units(hn, j0, j1);
      copy_units(dhd, din, j0, j1);
      continue;
    }
    const S* hprev = s.hprev + b * s.ldh;
    const S* dyb = s.dy + b * s.lddy;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      const V dh = vload(dyb + j, n) + vload(din + j, n);
      const V r = vload(g + j, n), z = vload(g + H + j, n), nn = vload(g + 2 * H + j, n);
      const V hnv = vload(hn + j, n), hp = vload(hprev + j, n);
      V dxr, dxz, dxn, dhn, direct;
      if constexpr (std::is_same<S, double>::value) {
        cell::gru_backward<double>(r, z, nn, hnv, hp, dh, dxr, dxz, dxn, dhn, direct);
      } else {
        const V one(1.0f);
        const V dn = dh * (one - z);
        const V dz = dh * (hp - nn);
        dxn = dn * (one - nn * nn);
        dhn = dxn * r;
        dxr = dxn * hnv * r * (one - r);
        dxz = dz * z * (one - z);
        direct = dh * z;
      }
      vstore(g + j, dxr, n);
      vstore(g + H + j, dxz, n);
      vstore(g + 2 * H + j, dxn, n);
      vstore(hn + j, dhn, n);
      vstore(dhd + j, direct, n);
    }
  }
}

// GRU reset-before, first half: d(z pre), d(n pre) and the direct part z * dh. The r column keeps r for the second
// half.
template <typename S>
void gru_rb_backward_nz_units(const BwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  const int H = s.H;
  for (int b = 0; b < s.B; ++b) {
    S* g = s.g + static_cast<size_t>(b) * s.GH;
    S* dhd = s.dhd + static_cast<size_t>(b) * H;
    const S* din = s.dh_in + static_cast<size_t>(b) * H;
    if (s.t >= s.len[b]) {
      for (int q = 0; q < 3; ++q) zero_units(g + q * H, j0, j1);
      copy_units(dhd, din, j0, j1);
      continue;
    }
    const S* hprev = s.hprev + b * s.ldh;
    const S* dyb = s.dy + b * s.lddy;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      const V dh = vload(dyb + j, n) + vload(din + j, n);
      const V z = vload(g + H + j, n), nn = vload(g + 2 * H + j, n), hp = vload(hprev + j, n);
      V dz, dnp, direct;
      if constexpr (std::is_same<S, double>::value) {
        cell::gru_rb_backward_nz<double>(z, nn, hp, dh, dz, dnp, direct);
      } else {
        const V one(1.0f);
        dnp = dh * (one - z) * (one - nn * nn);
        dz = dh * (hp - nn) * z * (one - z);
        direct = dh * z;
      }
      vstore(g + H + j, dz, n);
      vstore(g + 2 * H + j, dnp, n);
      vstore(dhd + j, direct, n);
    }
  }
}

// Second half: drh = W_hn^T d(n pre) gives d(r pre) (into the r column) and r * drh joins dhd.
template <typename S>
void gru_rb_backward_r_units(const BwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  const int H = s.H;
  for (int b = 0; b < s.B; ++b) {
    if (s.t >= s.len[b]) continue;  // r column already zero, dhd already the carried gradient
    S* g = s.g + static_cast<size_t>(b) * s.GH;
    S* dhd = s.dhd + static_cast<size_t>(b) * H;
    const S* hprev = s.hprev + b * s.ldh;
    const S* drh = s.drh + static_cast<size_t>(b) * H;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      const V r = vload(g + j, n), hp = vload(hprev + j, n), d = vload(drh + j, n);
      V dr, via;
      if constexpr (std::is_same<S, double>::value) {
        cell::gru_rb_backward_r<double>(r, hp, d, dr, via);
      } else {
        dr = d * hp * r * (V(1.0f) - r);
        via = d * r;
      }
      vstore(g + j, dr, n);
      vstore(dhd + j, vload(dhd + j, n) + via, n);
    }
  }
}

template <typename S>
void rnn_backward_units(const BwdStep<S>& s, int j0, int j1) {
  using V = typename Lanes<S>::V;
  constexpr int N = Lanes<S>::N;
  const int H = s.H;
  for (int b = 0; b < s.B; ++b) {
    S* g = s.g + static_cast<size_t>(b) * s.GH;
    S* dhd = s.dhd + static_cast<size_t>(b) * H;
    const S* din = s.dh_in + static_cast<size_t>(b) * H;
    if (s.t >= s.len[b]) {
      zero_units(g, j0, j1);
      copy_units(dhd, din, j0, j1);
      continue;
    }
    const S* hb = s.h + b * s.ldhh;
    const S* dyb = s.dy + b * s.lddy;
    for (int j = j0; j < j1; j += N) {
      const int n = std::min(N, j1 - j);
      const V dh = vload(dyb + j, n) + vload(din + j, n);
      const V h = vload(hb + j, n);
      V d;
      if constexpr (std::is_same<S, double>::value)
        d = cell::rnn_backward<double>(h, dh, s.relu);
      else
        d = s.relu ? vrelu_grad(h, dh) : dh * (V(1.0f) - h * h);
      vstore(g + j, d, n);
    }
    zero_units(dhd, j0, j1);
  }
}

}  // namespace cpu
}  // namespace openrnn
