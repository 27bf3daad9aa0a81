// STANDARD algorithm: the per-step pointwise kernels (one thread per (b, unit), all gates of that unit). The GEMMs
// around them are in standard_forward.cu / standard_backward.cu; the per-element math is cell_math.h.
//
// Step t of one layer and direction. "active" = t < len[b] (PyTorch packed semantics, both directions: the reverse
// direction starts at len[b]-1 because its state is carried unchanged through the padding steps it meets first).
// On an inactive step the state is carried (h_out = h_in, c_out = c_in), y gets the fill value, and every saved
// activation / gradient of that step is written as 0 so that the all-steps weight-gradient GEMMs can run over
// padding rows without masking.
#pragma once

#include <type_traits>

#include "cell_math.h"
#include "cuda_common.cuh"

namespace openrnn {
namespace cuda {

// Recurrent state of 16-bit storage types. DESIGN.md: states are carried in float32 inside a call. A float16 /
// bfloat16 state h is kept as a pair hi = round(h), lo = round(h - hi) in storage-type rows [hi(W) | lo(W)], so the
// recurrent GEMM still runs on tensor cores and sees h to ~2x the storage precision. LSTM (no projection), GRU
// linear-before-reset and RNN read a state slot [B, 2W] as the matrix [2B, W] (rows hi_0, lo_0, hi_1, ...) and
// multiply it by W_hh itself (M doubled: the weights are read once per step, as for a single-term state); the
// pointwise kernel adds the two products (FwdStep::gh_lo). GRU reset-before and projection multiply [hi | lo] by a
// duplicated [W | W] (K doubled); y and hy get hi = round(h). float32 / float64 states are single rows (kSplit = 1).
template <typename T>
struct Split {
  static constexpr int value = sizeof(T) == 2 ? 2 : 1;
};

// Row r of a split buffer: element u of width w at r[u] (+ r[w + u]).
template <typename S, typename T>
__device__ __forceinline__ S ld_split(const T* r, int w) {
  if constexpr (Split<T>::value == 2) return static_cast<S>(to_f(r[0]) + to_f(r[w]));
  return ld<S>(r);
}
template <typename T, typename S>
__device__ __forceinline__ void st_split(T* r, int w, S v) {
  if constexpr (Split<T>::value == 2) {
    const T hi = from_f<T>(static_cast<float>(v));
    r[0] = hi;
    r[w] = from_f<T>(static_cast<float>(v) - to_f(hi));
  } else {
    st(r, v);
  }
}
template <typename T>
__device__ __forceinline__ void copy_split(const T* src, T* dst, int w) {
  dst[0] = src[0];
  if constexpr (Split<T>::value == 2) dst[w] = src[w];
}

template <typename T, typename S>
struct FwdStep {
  int B, H, Hout, t;
  const int32_t* lens;  // [B] or null (every sequence has length T)
  const S* gx;          // input part W_ih x of every step, rows gx_rows(t, b), width G*H
  RowMap gx_rows;
  int t_next;  // the step after t in this launch sequence, whose gx rows gx holds (-1: none; the cuBLAS step path)
  int pf;      // fwd_pointwise prefetches step t_next's gx rows into L2: 0 no, else prefetch_l2's mode (std_prefetch)
  const S* gh;  // recurrent part of this step [B, gh_ld] (GRU reset-before part 2: W_hn (r*h), [B, H]); null:
                // LSTM / RNN with the product accumulated into gx in place (reduced-state math, standard_forward.cu)
  int gh_ld;
  int gh_lo;  // split states on the M-doubled GEMM: row b holds hi*W^T then, gh_lo further, lo*W^T (0: one term)
  const T* bih;  // [G*H] or null
  const T* bhh;  // [G*H] or null
  const T* hin;  // state before the step: row b at b * hsp * Split, hi at [u], lo at [hsp + u] (u < Hout)
  T* hout;       // state after the step (projection: written by proj_post from the projection GEMM's hp)
  const S* cin;  // LSTM [B, H]
  S* cout;
  S* acts;  // [B, G*H] activations of this step (LSTM i f g o, GRU r z n, RNN h); null = not kept
  S* hn;    // GRU linear-before-reset: W_hn h + b_hn [B, H]; null = not kept
  T* htil;  // LSTM projection: o*tanh(c) [B, H * Split]
  T* rh;    // GRU reset-before: r*h [B, H * Split]
  const S* hp;  // LSTM projection: htil W_hr^T [B, P] (GEMM output, read by proj_post)
  T* y;     // output rows y_rows(t, b) of width y_width; this direction's columns start at y_col
  RowMap y_rows;
  int y_width, y_col;
  S fill, clip;
  bool relu;
  int hsp;  // the state rows' part pitch (hin / hout): Hout, or StdDims::wpad where the Hopper step runs an inference

  __device__ bool active(int b) const { return !lens || t < lens[b]; }
  __device__ S bias(const T* p, int j) const { return p ? ld<S>(p + j) : S(0); }
  static constexpr int kSplit = Split<T>::value;
  __device__ long long hrow(int b) const { return (long long)b * hsp * kSplit; }
  __device__ long long urow(int b) const { return (long long)b * H * kSplit; }  // htil / rh rows (width H)
  __device__ S h_prev(int b, int u) const { return ld_split<S>(hin + hrow(b) + u, hsp); }
  __device__ void put_h(int b, int u, S v) const { st_split(hout + hrow(b) + u, hsp, v); }
  __device__ void carry_h(int b, int u) const { copy_split(hin + hrow(b) + u, hout + hrow(b) + u, hsp); }
  __device__ void put_y(int b, int u, S v) const { st(y + y_rows.row(t, b) * y_width + y_col + u, v); }
};

// The biases the *_unit_in forms add: bias(0, k, j) = b_ih of gate row j = k*H + u, bias(1, k, j) = b_hh (0 where
// absent). FwdBias reads them from p; fwd_pointwise passes values it loaded into registers before its wait.
template <typename T, typename S>
struct FwdBias {
  const FwdStep<T, S>& p;
  __device__ __forceinline__ S operator()(int hh, int, int j) const { return p.bias(hh ? p.bhh : p.bih, j); }
};
// The recurrent product of gate k (row j = k*H + u): gh(k, j) where the functor takes the gate too (values already in
// registers, fwd_pointwise), else gh(j).
template <typename GhFn>
__device__ __forceinline__ auto gh_at(const GhFn& gh, int k, int j) {
  if constexpr (std::is_invocable<GhFn, int, int>::value)
    return gh(k, j);
  else
    return gh(j);
}

// The pointwise part of one unit (b, u) of a step; gh(j) returns the recurrent part of gate row j (j = k*H + u)
// without bias. Shared by the GEMM + pointwise path and the fused kernel (standard_fused.cuh). The *_in forms take the
// step's other inputs through functors too: gx(k) = the input projection of gate k of this unit, and the previous c
// (LSTM) or h (GRU), so that a caller may have loaded them earlier (standard_wgmma.cuh: into registers before its
// main loop); the plain forms read them from p.
template <typename T, typename S, typename GhFn, typename GxFn, typename CFn, typename BiasFn>
__device__ __forceinline__ void lstm_unit_in(const FwdStep<T, S>& p, int b, int u, GhFn gh, GxFn gx, CFn cprev,
                                             BiasFn bias) {
  const int H = p.H, GH = 4 * H;
  const long long idx = (long long)b * H + u;
  const bool proj = p.htil != nullptr;
  if (!p.active(b)) {
    p.cout[idx] = cprev();
    if (proj) {
      st_split(p.htil + p.urow(b) + u, H, S(0));
    } else {
      p.carry_h(b, u);
      p.put_y(b, u, p.fill);
    }
    if (p.acts)
      for (int k = 0; k < 4; ++k) p.acts[(long long)b * GH + k * H + u] = S(0);
    return;
  }
  S pre[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int j = k * H + u;
    pre[k] = gx(k) + gh_at(gh, k, j) + bias(0, k, j) + bias(1, k, j);
  }
  cell::LstmAct<S> a;
  S c, h;
  cell::lstm_forward(pre[0], pre[1], pre[2], pre[3], cprev(), p.clip, a, c, h);
  p.cout[idx] = c;
  if (p.acts) {
    S* ap = p.acts + (long long)b * GH + u;
    ap[0] = a.i;
    ap[H] = a.f;
    ap[2 * H] = a.g;
    ap[3 * H] = a.o;
  }
  if (proj) {
    st_split(p.htil + p.urow(b) + u, H, h);
  } else {
    p.put_h(b, u, h);
    p.put_y(b, u, h);
  }
}

template <typename T, typename S, typename GhFn, typename GxFn, typename CFn>
__device__ __forceinline__ void lstm_unit_in(const FwdStep<T, S>& p, int b, int u, GhFn gh, GxFn gx, CFn cprev) {
  lstm_unit_in(p, b, u, gh, gx, cprev, FwdBias<T, S>{p});
}

template <typename T, typename S, typename GhFn>
__device__ __forceinline__ void lstm_unit(const FwdStep<T, S>& p, int b, int u, GhFn gh) {
  const long long idx = (long long)b * p.H + u;
  lstm_unit_in(
      p, b, u, gh, [&p, b, u](int k) { return p.gx[p.gx_rows.row(p.t, b) * 4 * p.H + k * p.H + u]; },
      [&p, idx] { return p.cin[idx]; });
}

// The cuBLAS step path's pointwise kernels (the cell after each step's GEMM, forward and backward) pass this before
// they read what that GEMM writes (the forward's product gh, or gx where the product was accumulated into it; the
// backward's dh_next or dhtil). Launched as the GEMM's programmatic dependent (std_pw_pdl, standard_plan.h), a kernel
// waits here until the GEMM has finished and its writes are visible; launched plainly, the wait returns at once.
// Everything else a kernel reads (gx, the previous c / h, the saved activations, dy, dc_next) was written before the
// GEMM started (a plain launch: it began after every earlier kernel on the stream had completed, and the wavefront's
// cross-lane waits and the chunked input GEMMs sit before it), so the kernels load those inputs first, to have them in
// flight while they wait (forward: CellInputs where the arithmetic is float32, fwd_pointwise; LSTM and GRU backward:
// LstmBwdIn / GruBwdIn). Nothing is written before the wait. The trigger lets a programmatic dependent of this kernel
// start early (it has its own wait).
__device__ __forceinline__ void pw_enter() {
  pdl_wait();
  pdl_trigger();
}

// After the projection GEMM wrote hp = htil W_hr^T [B, P] (arithmetic type): active rows become the new state and y,
// carried rows keep their state.
template <typename T, typename S>
__global__ void proj_post_kernel(const FwdStep<T, S> p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.B * p.Hout) return;
  const int b = idx / p.Hout, u = idx % p.Hout;
  if (p.active(b)) {
    const S h = p.hp[idx];
    p.put_h(b, u, h);
    p.put_y(b, u, h);
  } else {
    p.carry_h(b, u);
    p.put_y(b, u, p.fill);
  }
}

template <typename T, typename S, typename GhFn, typename GxFn, typename HFn, typename BiasFn>
__device__ __forceinline__ void gru_unit_in(const FwdStep<T, S>& p, int b, int u, GhFn gh, GxFn gx, HFn hprev,
                                            BiasFn bias) {
  const int H = p.H, GH = 3 * H;
  const long long idx = (long long)b * H + u;
  if (!p.active(b)) {
    p.carry_h(b, u);
    p.put_y(b, u, p.fill);
    if (p.acts)
      for (int k = 0; k < 3; ++k) p.acts[(long long)b * GH + k * H + u] = S(0);
    if (p.hn) p.hn[idx] = S(0);
    return;
  }
  const S xr = gx(0) + bias(0, 0, u), xz = gx(1) + bias(0, 1, H + u), xn = gx(2) + bias(0, 2, 2 * H + u);
  const S hr = gh_at(gh, 0, u) + bias(1, 0, u), hz = gh_at(gh, 1, H + u) + bias(1, 1, H + u),
          hn = gh_at(gh, 2, 2 * H + u) + bias(1, 2, 2 * H + u);
  S r, z, n, h;
  cell::gru_forward(xr, xz, xn, hr, hz, hn, hprev(), r, z, n, h);
  if (p.acts) {
    S* ap = p.acts + (long long)b * GH + u;
    ap[0] = r;
    ap[H] = z;
    ap[2 * H] = n;
  }
  if (p.hn) p.hn[idx] = hn;
  p.put_h(b, u, h);
  p.put_y(b, u, h);
}

template <typename T, typename S, typename GhFn, typename GxFn, typename HFn>
__device__ __forceinline__ void gru_unit_in(const FwdStep<T, S>& p, int b, int u, GhFn gh, GxFn gx, HFn hprev) {
  gru_unit_in(p, b, u, gh, gx, hprev, FwdBias<T, S>{p});
}

template <typename T, typename S, typename GhFn>
__device__ __forceinline__ void gru_unit(const FwdStep<T, S>& p, int b, int u, GhFn gh) {
  gru_unit_in(
      p, b, u, gh, [&p, b, u](int k) { return p.gx[p.gx_rows.row(p.t, b) * 3 * p.H + k * p.H + u]; },
      [&p, b, u] { return p.h_prev(b, u); });
}

// GRU reset-before, first half: r, z from the [B, 2H] recurrent part; writes r*h for the W_hn GEMM. acts required.
template <typename T, typename S>
__global__ void gru_rb1_kernel(const FwdStep<T, S> p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.B * p.H) return;
  const int b = idx / p.H, u = idx % p.H, H = p.H, GH = 3 * H;
  S* ap = p.acts + (long long)b * GH + u;
  if (!p.active(b)) {
    ap[0] = S(0);
    ap[H] = S(0);
    st_split(p.rh + p.urow(b) + u, H, S(0));
    return;
  }
  const S* gx = p.gx + p.gx_rows.row(p.t, b) * GH;
  const S* gh = p.gh + (long long)b * p.gh_ld;
  S r, z;
  cell::gru_rb_gates(gx[u] + p.bias(p.bih, u), gx[H + u] + p.bias(p.bih, H + u), gh[u] + p.bias(p.bhh, u),
                     gh[H + u] + p.bias(p.bhh, H + u), r, z);
  ap[0] = r;
  ap[H] = z;
  st_split(p.rh + p.urow(b) + u, H, r * p.h_prev(b, u));
}

// GRU reset-before, second half: gh = W_hn (r*h) [B, H].
template <typename T, typename S>
__global__ void gru_rb2_kernel(const FwdStep<T, S> p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.B * p.H) return;
  const int b = idx / p.H, u = idx % p.H, H = p.H, GH = 3 * H;
  S* ap = p.acts + (long long)b * GH + u;
  if (!p.active(b)) {
    ap[2 * H] = S(0);
    p.carry_h(b, u);
    p.put_y(b, u, p.fill);
    return;
  }
  const S* gx = p.gx + p.gx_rows.row(p.t, b) * GH;
  const S xn = gx[2 * H + u] + p.bias(p.bih, 2 * H + u);
  const S hn = p.gh[(long long)b * p.gh_ld + u] + p.bias(p.bhh, 2 * H + u);
  S n, h;
  cell::gru_rb_output(xn, hn, ap[H], p.h_prev(b, u), n, h);
  ap[2 * H] = n;
  p.put_h(b, u, h);
  p.put_y(b, u, h);
}

template <typename T, typename S, typename GhFn, typename GxFn, typename BiasFn>
__device__ __forceinline__ void rnn_unit_in(const FwdStep<T, S>& p, int b, int u, GhFn gh, GxFn gx, BiasFn bias) {
  const long long idx = (long long)b * p.H + u;
  if (!p.active(b)) {
    p.carry_h(b, u);
    p.put_y(b, u, p.fill);
    if (p.acts) p.acts[idx] = S(0);
    return;
  }
  const S pre = gx(0) + gh_at(gh, 0, u) + bias(0, 0, u) + bias(1, 0, u);
  const S h = cell::rnn_forward(pre, p.relu);
  if (p.acts) p.acts[idx] = h;
  p.put_h(b, u, h);
  p.put_y(b, u, h);
}

template <typename T, typename S, typename GhFn, typename GxFn>
__device__ __forceinline__ void rnn_unit_in(const FwdStep<T, S>& p, int b, int u, GhFn gh, GxFn gx) {
  rnn_unit_in(p, b, u, gh, gx, FwdBias<T, S>{p});
}

template <typename T, typename S, typename GhFn>
__device__ __forceinline__ void rnn_unit(const FwdStep<T, S>& p, int b, int u, GhFn gh) {
  rnn_unit_in(p, b, u, gh, [&p, b, u](int) { return p.gx[p.gx_rows.row(p.t, b) * p.H + u]; });
}

// One (sequence, unit)'s cell inputs other than the recurrent product, loaded ahead of the cell: gx of each of the G
// gates (0 for an inactive sequence, whose gates are not computed) and the previous c (LSTM) or h (GRU). The step
// kernels (standard_mma.cuh, standard_wgmma.cuh) load them into registers before their product's main loop, so that
// the loads complete under it instead of one round trip per element in the cell loop after it. CELL: 0 LSTM, 1 GRU
// linear-before-reset, 2 RNN. valid: (b, u) lies inside the problem (else nothing is read and run() is not called).
template <int CELL>
struct CellInputs {
  static constexpr int G = CELL == 0 ? 4 : (CELL == 1 ? 3 : 1);
  float x[G];
  float prev;

  template <typename T>
  __device__ __forceinline__ void load(const FwdStep<T, float>& p, int b, int u, bool valid) {
    const bool act = valid && p.active(b);
    const float* gr = act ? p.gx + p.gx_rows.row(p.t, b) * (G * p.H) + u : nullptr;
#pragma unroll
    for (int g = 0; g < G; ++g) x[g] = act ? gr[g * p.H] : 0.f;
    if constexpr (CELL == 0)
      prev = valid ? p.cin[(long long)b * p.H + u] : 0.f;
    else if constexpr (CELL == 1)
      prev = valid ? p.h_prev(b, u) : 0.f;
    else
      prev = 0.f;
  }
  // Step p.t_next's gx of (b, u) into L2 (p.pf): the next pointwise kernel then finds it there instead of in DRAM,
  // where the input GEMM left it long before (T * B * G * H floats). Padding rows are prefetched too (their gx exists).
  template <typename T>
  __device__ __forceinline__ void prefetch_next(const FwdStep<T, float>& p, int b, int u) const {
    if (!p.pf || p.t_next < 0) return;
    const float* gr = p.gx + p.gx_rows.row(p.t_next, b) * (G * p.H) + u;
#pragma unroll
    for (int g = 0; g < G; ++g) prefetch_l2(gr + g * p.H, p.pf);
  }
  // The cell of (b, u) on these inputs; gh(j): the recurrent product of gate row j = g*H + u.
  template <typename T, typename GhFn>
  __device__ __forceinline__ void run(const FwdStep<T, float>& p, int b, int u, GhFn gh) const {
    auto gx = [this](int g) { return x[g]; };
    if constexpr (CELL == 0)
      lstm_unit_in(p, b, u, gh, gx, [this] { return prev; });
    else if constexpr (CELL == 1)
      gru_unit_in(p, b, u, gh, gx, [this] { return prev; });
    else
      rnn_unit_in(p, b, u, gh, gx);
  }
  // The same with the biases passed in (bias(hh, k, j), as FwdBias) and gh(k, j) taking the gate index.
  template <typename T, typename GhFn, typename BiasFn>
  __device__ __forceinline__ void run_pre(const FwdStep<T, float>& p, int b, int u, GhFn gh, BiasFn bias) const {
    auto gx = [this](int g) { return x[g]; };
    if constexpr (CELL == 0)
      lstm_unit_in(p, b, u, gh, gx, [this] { return prev; }, bias);
    else if constexpr (CELL == 1)
      gru_unit_in(p, b, u, gh, gx, [this] { return prev; }, bias);
    else
      rnn_unit_in(p, b, u, gh, gx, bias);
  }
};

// One unit's biases in registers (b_ih and b_hh of each of the G gates; 0 where absent or u >= H), loaded ahead of the
// cell with CellInputs by the step kernels whose threads run the cell on one unit only (standard_wgmma.cuh), and
// passed to CellInputs::run_pre as its bias functor: the same values, added in the same order, as FwdBias reads.
template <int CELL>
struct CellBias {
  static constexpr int G = CellInputs<CELL>::G;
  float v[2][G];
  template <typename T>
  __device__ __forceinline__ void load(const FwdStep<T, float>& p, int u) {
#pragma unroll
    for (int k = 0; k < G; ++k) {
      v[0][k] = u < p.H ? p.bias(p.bih, k * p.H + u) : 0.f;
      v[1][k] = u < p.H ? p.bias(p.bhh, k * p.H + u) : 0.f;
    }
  }
  __device__ __forceinline__ float operator()(int hh, int k, int) const { return v[hh][k]; }
};

// ---- backward ------------------------------------------------------------------------------------------------------
// dh_next: gradient w.r.t. the state after step t (from steps processed later in the forward), without y's part.
// The kernels write dh_prev's direct part (GRU z*dh, or the carried gradient on an inactive step); the caller's
// GEMM then adds dG W_hh (beta = 1), which adds exactly 0 on inactive rows because their dG row is 0.
template <typename T, typename S>
struct BwdStep {
  int B, H, Hout, t;
  const int32_t* lens;
  const S* acts;  // [B, G*H] of step t
  const S* cin;   // LSTM c before / after step t [B, H]
  const S* cout;
  const S* dc_next;  // LSTM [B, H]
  S* dc_prev;
  const T* hin;  // state before step t [B, Hout * Split]
  const S* hn;   // GRU linear-before-reset [B, H] of step t
  const T* dy;   // rows dy_rows(t, b) of width dy_width, this direction at dy_col; padding never read
  RowMap dy_rows;
  int dy_width, dy_col;
  const S* dh_next;  // [B, Hout]
  S* dh_prev;
  const S* dhtil;  // LSTM projection: gradient w.r.t. o*tanh(c) [B, H] (already holds dy and dh_next)
  T* dhtot;        // LSTM projection: dh_next + dy [B, P] (kept for dW_hr)
  T* dG;           // [B, G*H] gradient w.r.t. the pre-activations (input side)
  T* dGh;          // GRU linear-before-reset: recurrent side (n part = r * dxn)
  const S* d_rh;   // GRU reset-before: W_hn^T dpre_n [B, H]
  // The step after t in this launch sequence (-1: none) and its inputs, which LSTM / GRU linear-before-reset kernels
  // prefetch into L2 (pf: prefetch_l2's mode, 0 none; bwd_prefetch_next): acts, c before it, GRU's W_hn h + b_hn and
  // h before it (null where the cell has none).
  int t_next, pf;
  const S* acts_next;
  const S* cin_next;
  const S* hn_next;
  const T* hin_next;
  S clip;
  bool relu;

  __device__ bool active(int b) const { return !lens || t < lens[b]; }
  __device__ S h_prev(int b, int u) const {
    return ld_split<S>(hin + (long long)b * Hout * Split<T>::value + u, Hout);
  }
  __device__ S dy_at(int b, int u) const { return ld<S>(dy + dy_rows.row(t, b) * dy_width + dy_col + u); }
};

template <typename T, typename S>
__global__ void proj_dh_kernel(const BwdStep<T, S> p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.B * p.Hout) return;
  const int b = idx / p.Hout, u = idx % p.Hout;
  if (p.active(b)) {
    st(p.dhtot + idx, p.dh_next[idx] + p.dy_at(b, u));
    p.dh_prev[idx] = S(0);
  } else {
    st(p.dhtot + idx, S(0));
    p.dh_prev[idx] = p.dh_next[idx];
  }
}

// The inputs of one unit's backward that no step GEMM writes (see pw_enter): LSTM's saved activations, c after and
// before the step and dc_next; dy where there is no projection. Inactive sequences read dc_next only.
template <typename S>
struct LstmBwdIn {
  S i, f, g, o, c, cprev, dcn, dy;
};
template <typename T, typename S>
__device__ __forceinline__ LstmBwdIn<S> lstm_bwd_load(const BwdStep<T, S>& p, int b, int u) {
  const int H = p.H;
  const long long idx = (long long)b * H + u;
  LstmBwdIn<S> v{};
  v.dcn = p.dc_next[idx];
  if (!p.active(b)) return v;
  const S* ap = p.acts + (long long)b * 4 * H + u;
  v.i = ap[0];
  v.f = ap[H];
  v.g = ap[2 * H];
  v.o = ap[3 * H];
  v.c = p.cout[idx];
  v.cprev = p.cin[idx];
  v.dy = p.dhtil ? S(0) : p.dy_at(b, u);
  return v;
}

// Step p.t_next's inputs of (b, u) that the forward wrote long before (DRAM at large T * B) into L2, so that the next
// pointwise kernel finds them there: G activations, c (LSTM) or W_hn h + b_hn and h's rows (GRU) before that step,
// and dy where it is read (not with a projection: dhtil holds it). Padding rows too (harmless: the addresses exist).
template <int G, typename T, typename S>
__device__ __forceinline__ void bwd_prefetch_next(const BwdStep<T, S>& p, int b, int u) {
  if (!p.pf || p.t_next < 0) return;
  const int H = p.H;
  const long long idx = (long long)b * H + u;
  const S* ap = p.acts_next + (long long)b * G * H + u;
#pragma unroll
  for (int g = 0; g < G; ++g) prefetch_l2(ap + g * H, p.pf);
  if (p.cin_next) prefetch_l2(p.cin_next + idx, p.pf);
  if (p.hn_next) prefetch_l2(p.hn_next + idx, p.pf);
  if (p.hin_next) {
    const T* hp = p.hin_next + (long long)b * p.Hout * Split<T>::value + u;
    prefetch_l2(hp, p.pf);
    if (Split<T>::value == 2) prefetch_l2(hp + p.Hout, p.pf);
  }
  if (!p.dhtil) prefetch_l2(p.dy + p.dy_rows.row(p.t_next, b) * p.dy_width + p.dy_col + u, p.pf);
}

// Backward of one unit (b, u) on its loaded inputs v; dhn: gradient w.r.t. this unit's state after the step, without
// y's part (unused with a projection, where dhtil already holds everything).
template <typename T, typename S>
__device__ __forceinline__ void lstm_bwd_unit_in(const BwdStep<T, S>& p, int b, int u, S dhn, const LstmBwdIn<S>& v) {
  const int H = p.H, GH = 4 * H;
  const long long idx = (long long)b * H + u;
  const bool proj = p.dhtil != nullptr;
  T* dg = p.dG + (long long)b * GH + u;
  if (!p.active(b)) {
    p.dc_prev[idx] = v.dcn;
    if (!proj) p.dh_prev[idx] = dhn;
    for (int k = 0; k < 4; ++k) st(dg + k * H, S(0));
    return;
  }
  const S dh = proj ? p.dhtil[idx] : dhn + v.dy;
  const cell::LstmAct<S> a{v.i, v.f, v.g, v.o};
  S di, df, dg_, d_o, dcp;
  cell::lstm_backward(a, v.c, v.cprev, p.clip, dh, v.dcn, di, df, dg_, d_o, dcp);
  st(dg, di);
  st(dg + H, df);
  st(dg + 2 * H, dg_);
  st(dg + 3 * H, d_o);
  p.dc_prev[idx] = dcp;
  if (!proj) p.dh_prev[idx] = S(0);
}

// The same, loading its inputs itself. Shared with the fused kernel (standard_fused.cuh).
template <typename T, typename S>
__device__ __forceinline__ void lstm_bwd_unit(const BwdStep<T, S>& p, int b, int u, S dhn) {
  lstm_bwd_unit_in(p, b, u, dhn, lstm_bwd_load(p, b, u));
}

template <typename T, typename S>
__global__ void lstm_bwd_kernel(const BwdStep<T, S> p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  const bool valid = idx < p.B * p.H;
  const int b = idx / p.H, u = idx % p.H;
  LstmBwdIn<S> v{};
  if (valid) {
    v = lstm_bwd_load(p, b, u);
    bwd_prefetch_next<4>(p, b, u);
  }
  pw_enter();
  if (!valid) return;
  lstm_bwd_unit_in(p, b, u, p.dhtil ? S(0) : p.dh_next[idx], v);
}

// GRU linear-before-reset's backward inputs (as LstmBwdIn): r, z, n, W_hn h + b_hn, h before the step, dy.
template <typename S>
struct GruBwdIn {
  S r, z, n, hn, hprev, dy;
};
template <typename T, typename S>
__device__ __forceinline__ GruBwdIn<S> gru_bwd_load(const BwdStep<T, S>& p, int b, int u) {
  const int H = p.H;
  GruBwdIn<S> v{};
  if (!p.active(b)) return v;
  const S* ap = p.acts + (long long)b * 3 * H + u;
  v.r = ap[0];
  v.z = ap[H];
  v.n = ap[2 * H];
  v.hn = p.hn[(long long)b * H + u];
  v.hprev = p.h_prev(b, u);
  v.dy = p.dy_at(b, u);
  return v;
}

template <typename T, typename S>
__device__ __forceinline__ void gru_bwd_unit_in(const BwdStep<T, S>& p, int b, int u, S dhn, const GruBwdIn<S>& v) {
  const int H = p.H, GH = 3 * H;
  const long long idx = (long long)b * H + u;
  T* dgx = p.dG + (long long)b * GH + u;
  T* dgh = p.dGh + (long long)b * GH + u;
  if (!p.active(b)) {
    p.dh_prev[idx] = dhn;
    for (int k = 0; k < 3; ++k) {
      st(dgx + k * H, S(0));
      st(dgh + k * H, S(0));
    }
    return;
  }
  const S dh = dhn + v.dy;
  S dxr, dxz, dxn, dhn_, direct;
  cell::gru_backward(v.r, v.z, v.n, v.hn, v.hprev, dh, dxr, dxz, dxn, dhn_, direct);
  st(dgx, dxr);
  st(dgx + H, dxz);
  st(dgx + 2 * H, dxn);
  st(dgh, dxr);
  st(dgh + H, dxz);
  st(dgh + 2 * H, dhn_);
  p.dh_prev[idx] = direct;
}

template <typename T, typename S>
__device__ __forceinline__ void gru_bwd_unit(const BwdStep<T, S>& p, int b, int u, S dhn) {
  gru_bwd_unit_in(p, b, u, dhn, gru_bwd_load(p, b, u));
}

template <typename T, typename S>
__global__ void gru_bwd_kernel(const BwdStep<T, S> p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  const bool valid = idx < p.B * p.H;
  const int b = idx / p.H, u = idx % p.H;
  GruBwdIn<S> v{};
  if (valid) {
    v = gru_bwd_load(p, b, u);
    bwd_prefetch_next<3>(p, b, u);
  }
  pw_enter();
  if (!valid) return;
  gru_bwd_unit_in(p, b, u, p.dh_next[idx], v);
}

// GRU reset-before, first half: z and n gradients, the direct part z*dh. The r gradient needs W_hn^T dpre_n.
template <typename T, typename S>
__global__ void gru_rb_bwd1_kernel(const BwdStep<T, S> p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.B * p.H) return;
  const int b = idx / p.H, u = idx % p.H, H = p.H, GH = 3 * H;
  T* dg = p.dG + (long long)b * GH + u;
  if (!p.active(b)) {
    p.dh_prev[idx] = p.dh_next[idx];
    st(dg + H, S(0));
    st(dg + 2 * H, S(0));
    return;
  }
  const S dh = p.dh_next[idx] + p.dy_at(b, u);
  const S* ap = p.acts + (long long)b * GH + u;
  S dz, dn, direct;
  cell::gru_rb_backward_nz(ap[H], ap[2 * H], p.h_prev(b, u), dh, dz, dn, direct);
  st(dg + H, dz);
  st(dg + 2 * H, dn);
  p.dh_prev[idx] = direct;
}

template <typename T, typename S>
__global__ void gru_rb_bwd2_kernel(const BwdStep<T, S> p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.B * p.H) return;
  const int b = idx / p.H, u = idx % p.H, GH = 3 * p.H;
  T* dg = p.dG + (long long)b * GH + u;
  if (!p.active(b)) {
    st(dg, S(0));
    return;
  }
  S dr, via;
  cell::gru_rb_backward_r(p.acts[(long long)b * GH + u], p.h_prev(b, u), p.d_rh[idx], dr, via);
  st(dg, dr);
  p.dh_prev[idx] += via;
}

template <typename T, typename S>
__device__ __forceinline__ void rnn_bwd_unit(const BwdStep<T, S>& p, int b, int u, S dhn) {
  const long long idx = (long long)b * p.H + u;
  if (!p.active(b)) {
    p.dh_prev[idx] = dhn;
    st(p.dG + idx, S(0));
    return;
  }
  const S dh = dhn + p.dy_at(b, u);
  st(p.dG + idx, cell::rnn_backward(p.acts[idx], dh, p.relu));
  p.dh_prev[idx] = S(0);
}

template <typename T, typename S>
__global__ void rnn_bwd_kernel(const BwdStep<T, S> p) {
  pw_enter();
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.B * p.H) return;
  rnn_bwd_unit(p, idx / p.H, idx % p.H, p.dh_next[idx]);
}

// The cell of a step kernel by its template number (CELL: 0 LSTM without projection, 1 GRU linear-before-reset,
// 2 RNN): forward (gh: the recurrent product of gate row j) and backward (dhn as for lstm_bwd_unit) of unit (b, u).
template <int CELL, typename T, typename S, typename GhFn>
__device__ __forceinline__ void cell_unit(const FwdStep<T, S>& p, int b, int u, GhFn gh) {
  if constexpr (CELL == 0)
    lstm_unit(p, b, u, gh);
  else if constexpr (CELL == 1)
    gru_unit(p, b, u, gh);
  else
    rnn_unit(p, b, u, gh);
}
template <int CELL, typename T, typename S>
__device__ __forceinline__ void cell_bwd_unit(const BwdStep<T, S>& p, int b, int u, S dhn) {
  if constexpr (CELL == 0)
    lstm_bwd_unit(p, b, u, dhn);
  else if constexpr (CELL == 1)
    gru_bwd_unit(p, b, u, dhn);
  else
    rnn_bwd_unit(p, b, u, dhn);
}

// The cuBLAS step path's forward pointwise kernels (cell_unit's cells; the projection's LSTM writes htil, proj_post
// the rest). For S = float with a separate product (gh), the inputs this step's GEMM does not write (CellInputs: gx
// and the previous c or h) are loaded before pw_enter()'s wait, so that they are in flight while a programmatic
// dependent waits for the GEMM; the cell then runs on the same values as cell_unit would read. They also prefetch the
// next step's gx into L2 (CellInputs::prefetch_next). Otherwise (float64, or the reduced-state math's product
// accumulated into gx, FwdStep::gh null) everything is read after the wait.
template <int CELL, typename T, typename S>
__device__ __forceinline__ void fwd_pointwise(const FwdStep<T, S>& p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  const bool valid = idx < p.B * p.H;
  const int b = idx / p.H, u = idx % p.H;
  if constexpr (std::is_same<S, float>::value) {
    if (p.gh) {
      constexpr int G = CellInputs<CELL>::G;
      CellInputs<CELL> in;
      in.load(p, b, u, valid);
      if (valid) in.prefetch_next(p, b, u);
      // The biases too (weights, written before the GEMM), and after the wait every product value of the unit, all
      // into registers before the cell's first operation: one round trip for the lot. Left to the compiler, the
      // float16 LSTM kernel issued two of its eight product loads and some bias loads after the first gate's
      // arithmetic (SASS, session 71), a second round trip on every step's critical path.
      float bi[G], bh[G];
#pragma unroll
      for (int g = 0; g < G; ++g) {
        bi[g] = valid ? p.bias(p.bih, g * p.H + u) : 0.f;
        bh[g] = valid ? p.bias(p.bhh, g * p.H + u) : 0.f;
      }
      pw_enter();
      if (!valid) return;
      const S* gh = p.gh + (long long)b * p.gh_ld + u;
      const int lo = p.gh_lo;
      float hi[G], lv[G];
#pragma unroll
      for (int g = 0; g < G; ++g) {
        hi[g] = gh[g * p.H];
        lv[g] = lo ? gh[g * p.H + lo] : 0.f;
      }
      auto bias = [&bi, &bh](int hh, int k, int) { return hh ? bh[k] : bi[k]; };
      if (lo)
        in.run_pre(p, b, u, [&hi, &lv](int k, int) { return hi[k] + lv[k]; }, bias);
      else
        in.run_pre(p, b, u, [&hi](int k, int) { return hi[k]; }, bias);
      return;
    }
  }
  pw_enter();
  if (!valid) return;
  if (!p.gh) {  // the recurrent product was accumulated into gx (FwdStep::gh)
    cell_unit<CELL>(p, b, u, [](int) { return S(0); });
    return;
  }
  const S* gh = p.gh + (long long)b * p.gh_ld;
  if (p.gh_lo) {
    const int lo = p.gh_lo;
    cell_unit<CELL>(p, b, u, [gh, lo](int j) { return gh[j] + gh[j + lo]; });
  } else {
    cell_unit<CELL>(p, b, u, [gh](int j) { return gh[j]; });
  }
}

template <typename T, typename S>
__global__ void lstm_fwd_kernel(const FwdStep<T, S> p) {
  fwd_pointwise<0>(p);
}
template <typename T, typename S>
__global__ void gru_fwd_kernel(const FwdStep<T, S> p) {
  fwd_pointwise<1>(p);
}
template <typename T, typename S>
__global__ void rnn_fwd_kernel(const FwdStep<T, S> p) {
  fwd_pointwise<2>(p);
}

}  // namespace cuda
}  // namespace openrnn
