// PERSISTENT backward-data kernel: one launch runs the whole recurrence of backward_data for one layer, both
// directions when D = 2 (blockIdx.y), with W_hh held on chip for all T steps. It replaces STANDARD's per-step loop
// (standard_backward.cu: pointwise backward + dG W_hh per step) and leaves the same results in STANDARD's reserve:
// dG (and GRU's dGh) of every step, so STANDARD's dX GEMMs and weight-gradient GEMMs run on them unchanged.
//
// The transposed problem of the forward kernel (persistent_fwd.cuh). Per step, per sequence b:
//   dh_tot[u] = carried[u] + sum_j W_hh[j][u] dGrec_prev[j]    (j over all G*H gate rows; dGrec_prev = the
//               recurrent-side pre-activation gradient of the step processed before, 0 at the first)
//   active step: cell backward with dh = dh_tot + dy[t][u] -> dG[g*H + u] (input side), dGrec, dc, carried
//   inactive step (t >= len): carried = dh_tot, dc unchanged, dG = dGrec = 0.
// carried is the part of dh_prev that does not go through W_hh: 0 for LSTM and RNN, z * dh for GRU, everything on
// an inactive step. Processing order is the reverse of the forward's: real time t = T-1 .. 0 for direction 0,
// t = 0 .. T-1 for direction 1 (which ran t = T-1 .. 0 forward), as STANDARD's backward.
//
// Decomposition. A group (one thread-block cluster of C CTAs) owns a batch tile of BT sequences. CTA `rank` owns the
// U = H/C units [rank*U, (rank+1)*U): it holds the columns u of W_hh for every one of the K = G*H gate rows (W_hh^T
// [U, K], the same number of values as the forward's row slice) and runs the cell backward of its units, so dc and
// carried stay local. Warp w owns the j-range [w*KPW, (w+1)*KPW) of K (split-K over NW = 16 warps), lane l owns the
// units {l, l+32, ...} (RPT = U/32 of them); KREG of each thread's j per unit in registers, KSM = KPW - KREG in
// shared memory. Per step and batch chunk of BC sequences:
//  1. matvec over dgs[t parity] (the previous step's dGrec of the whole tile, float32 [rows][K] in every CTA's shared
//     memory) -> partial sums red[chunk parity][w][bc][u]; __syncthreads;
//  2. cell phase, U*BC threads per copy, NCOPY = min(NT / (U*BC), C) identical copies (as the forward): each adds
//     the NW partials (fixed order), runs the cell backward (cell_math.h, the float32 functions STANDARD uses);
//     copy 0 writes the reserve's dG/dGh rows and the local dc / carried (double-buffered by step parity, read by
//     every copy); copy k pushes the unit's G values of dGrec into dgs[next parity] of CTAs k, k+NCOPY, ...
//     with st.async, each store completing on that CTA's mbarrier mbar[next parity]; a __syncthreads ends the
//     step (red and carried are rewritten next step) and the next step starts when the CTA's own mbarrier phase
//     completes (the forward's exchange, persistent_fwd_v6.cuh; a barrier.cluster per step until session 12, whose
//     release cost ~550 ns per step on an H100).
// After step T-1 one more matvec gives dhx = carried + W_hh^T dGrec(last); dcx = dc.
// The pointwise inputs of the next chunk / step (activations, c, c_prev, dy, GRU W_hn h + b_hn and h_prev) are
// loaded into registers one chunk ahead, so their latency hides behind the exchange and the matvec.
//
// GRU reset-before (CELL == GRU_RB): dh_prev = z * dh + r * d_rh + W_hr^T dr + W_hz^T dz with d_rh = W_hn^T dn of the
// same step, and dr needs d_rh: two products per step. dgs carries only the r and z gradients (its n part stays 0)
// and step 1 gives dh_tot = carried + W_h{r,z}^T d{r,z}_prev; the cell phase's first half (cell::gru_rb_backward_nz)
// pushes dn into dns[rows][K] (only its n part is ever written) of every CTA (st.async on the receiver's nbar[j&1],
// phase j = k*nchunk + c), waits for its own phase and syncs the CTA, the full-width matvec over dns gives d_rh of
// the CTA's units, and the second half (cell::gru_rb_backward_r) gives dr and carried = z * dh + r * d_rh, then
// pushes dr, dz. dns is single-buffered and the nbar alternate (the forward's rh argument, persistent_fwd.cuh).
//
// Precision: dGrec is exchanged in float32 (STANDARD multiplies the stored dG, rounded to the storage type for
// float16 / bfloat16: this kernel is the more accurate of the two); dG / dGh are stored rounded, as STANDARD's.
// Hidden sizes below the compiled H: units [Hr, H) read W_hh as 0 and push exact zeros, as in the forward kernel.
// Determinism: fixed summation order, no atomics.
#pragma once

#include "cell_math.h"
#include "mma_sync.cuh"
#include "persistent_common.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <typename TW>
struct BwdParams {
  int T, B, Hr, BT, D;
  const TW* whh[2];      // [G*Hr, Hr] canonical
  const float* acts[2];  // reserve [T, B, G*Hr]
  const TW* hs[2];       // reserve [T+1, B, Hr*S] (S = 2 for 16-bit TW: hi, lo)
  const float* cs[2];    // reserve [T+1, B, Hr] (LSTM)
  const float* hn[2];    // reserve [T, B, Hr] (GRU)
  const TW* dy;          // row dy_rt*t + dy_rb*b, width dy_width; direction d's columns at d*Hr
  long long dy_rt, dy_rb;
  int dy_width;
  TW* dG[2];             // reserve [T, B, G*Hr]
  TW* dGh[2];            // reserve [T, B, G*Hr] (GRU)
  const TW* dhy[2];      // [B, Hr] or null
  const TW* dcy[2];
  TW* dhx[2];            // [B, Hr] or null
  TW* dcx[2];
  const int* lengths;    // [B] or null
  float clip;
  float* part[2];        // grid kernel (persistent_bwd_grid.cuh): float32 [2][C][min(B, BMAX)][H] shares
  int b_lo;              // grid kernel, float32 batches of several launches: this launch's first sequence (else 0)
  unsigned* counter[2];  // grid kernel: arrival counter, zeroed before the launch
};

// Pointwise inputs of one (processing step, sequence, unit) of the backward recurrence, shared by the cluster kernel
// below and the grid kernel (persistent_bwd_grid.cuh). valid = false past the sequence's length, and wherever the
// caller passes ok = false (no such thread role, final matvec-only pass, column past the tile, padded unit).
template <int G, typename TW>
struct BwdIn {
  bool valid;
  int t;  // real time of processing step k
  float a[G];
  float c, cp, dy, hn, hp;
  // 16-bit storage: dy and h_prev's hi / lo halves as loaded; bwd_in_ready widens them when the step uses them. A
  // conversion next to the load waits for the load there, one step early, which undoes the prefetch: ~600 cycles of
  // every 16-bit grid-backward step at H = 1024 (session 50's phase profile, docs/performance.md).
  TW dyr, hpr[2];
};

// The inputs of processing step k for sequence bg (global index), unit gu of direction dir, length len.
template <int CELL, typename TW>
__device__ __forceinline__ BwdIn<CellTraits<CELL>::G, TW> bwd_load_in(const BwdParams<TW>& p, int dir, int k, int bg,
                                                                      int gu, int len, bool ok) {
  constexpr int G = CellTraits<CELL>::G;
  constexpr bool W16 = sizeof(TW) == 2;
  const int T = p.T, B = p.B, Hr = p.Hr;
  BwdIn<G, TW> v{};
  v.valid = false;
  v.t = dir == 0 ? T - 1 - k : k;
  if (!ok || k >= T || v.t >= len) return v;
  v.valid = true;
  const size_t row = size_t(v.t) * B + bg;
  const float* ap = p.acts[dir] + row * (G * Hr) + gu;
#pragma unroll
  for (int g = 0; g < G; ++g) v.a[g] = ap[g * Hr];
  const TW dy = p.dy[(v.t * p.dy_rt + bg * p.dy_rb) * p.dy_width + dir * Hr + gu];
  if constexpr (W16)
    v.dyr = dy;
  else
    v.dy = dy;
  const int sin = dir == 0 ? v.t : v.t + 1, sout = dir == 0 ? v.t + 1 : v.t;  // STANDARD's slots (T+1 of them)
  if (CELL == LSTM) {
    v.c = p.cs[dir][(size_t(sout) * B + bg) * Hr + gu];
    v.cp = p.cs[dir][(size_t(sin) * B + bg) * Hr + gu];
  }
  if (CELL == GRU) v.hn = p.hn[dir][row * Hr + gu];
  if (CELL == GRU || CELL == GRU_RB) {
    const TW* hr = p.hs[dir] + (size_t(sin) * B + bg) * (size_t(Hr) * kStateSlots<TW>) + gu;
    if constexpr (W16) {
      v.hpr[0] = hr[0];
      v.hpr[1] = hr[Hr];
    } else {
      v.hp = hr[0];
    }
  }
  return v;
}

// The loaded inputs ready for the step that uses them (16-bit: widened here, float32: as loaded).
template <int CELL, typename TW>
__device__ __forceinline__ BwdIn<CellTraits<CELL>::G, TW> bwd_in_ready(BwdIn<CellTraits<CELL>::G, TW> v) {
  using S = Store<TW>;
  if constexpr (sizeof(TW) == 2) {
    v.dy = S::to_f(v.dyr);
    if (CELL == GRU || CELL == GRU_RB) v.hp = S::to_f(v.hpr[0]) + S::to_f(v.hpr[1]);
  }
  return v;
}

// One unit's cell backward: dh = dh_tot + dy -> input-side (dgx) and recurrent-side (dgr) pre-activation gradients,
// the new dc and carried (the part of dh_prev that does not go through W_hh). Inactive step: carried = dh_tot, dc
// unchanged, gradients 0; padded unit (live = false): everything 0.
template <int CELL, typename TW>
__device__ __forceinline__ void bwd_cell(const BwdIn<CellTraits<CELL>::G, TW>& in, float dh_tot, float dc_cur, float clip,
                                         bool live, float (&dgx)[CellTraits<CELL>::G],
                                         float (&dgr)[CellTraits<CELL>::G], float& carry, float& dc_new) {
  constexpr int G = CellTraits<CELL>::G;
#pragma unroll
  for (int g = 0; g < G; ++g) dgx[g] = dgr[g] = 0.f;
  carry = live ? dh_tot : 0.f;
  dc_new = live ? dc_cur : 0.f;
  if (!in.valid) return;
  const float dh = dh_tot + in.dy;
  if (CELL == LSTM) {
    const cell::LstmAct<float> a{in.a[0], in.a[1], in.a[2], in.a[3]};
    cell::lstm_backward(a, in.c, in.cp, clip, dh, dc_cur, dgx[0], dgx[1], dgx[2], dgx[3], dc_new);
#pragma unroll
    for (int g = 0; g < G; ++g) dgr[g] = dgx[g];
    carry = 0.f;
  } else if (CELL == GRU) {
    cell::gru_backward(in.a[0], in.a[1], in.a[2], in.hn, in.hp, dh, dgx[0], dgx[1], dgx[2], dgr[2], carry);
    dgr[0] = dgx[0];
    dgr[1] = dgx[1];
  } else {
    dgx[0] = dgr[0] = cell::rnn_backward(in.a[0], dh, CELL == RNN_RELU);
    carry = 0.f;
  }
}

// The reserve's dG (and GRU's dGh) of one unit at real time t, sequence bg: every step's rows, zeros at padding
// steps (the weight-gradient GEMMs run over them).
template <int CELL, typename TW>
__device__ __forceinline__ void bwd_store_dG(const BwdParams<TW>& p, int dir, int t, int bg, int gu,
                                             const float (&dgx)[CellTraits<CELL>::G],
                                             const float (&dgr)[CellTraits<CELL>::G]) {
  using S = Store<TW>;
  constexpr int G = CellTraits<CELL>::G;
  const size_t row = size_t(t) * p.B + bg;
  TW* dg = p.dG[dir] + row * (G * p.Hr) + gu;
#pragma unroll
  for (int g = 0; g < G; ++g) dg[g * p.Hr] = S::from_f(dgx[g]);
  if (CELL == GRU) {
    TW* dgh = p.dGh[dir] + row * (G * p.Hr) + gu;
#pragma unroll
    for (int g = 0; g < G; ++g) dgh[g * p.Hr] = S::from_f(dgr[g]);
  }
}

// bwd_store_dG's values rounded to the storage type and packed in pairs (LSTM: dG of gates (0, 1) and (2, 3); GRU:
// (dGx, dGh) of each gate), for a kernel that leaves them in shared memory for another warp to store (the
// reduce-scatter kernel's deferred stores, persistent_bwd_rs.cuh). The pair conversions round each element as from_f
// does: the stored values are bwd_store_dG's bit for bit.
template <int CELL>
struct DGPairs {
  static constexpr int G = CellTraits<CELL>::G;
  static constexpr int NQ = CELL == GRU ? G : G / 2;
};
template <int CELL, typename TW>
__device__ __forceinline__ typename Store<TW>::Pair bwd_dG_pair(int i, const float (&dgx)[CellTraits<CELL>::G],
                                                                const float (&dgr)[CellTraits<CELL>::G]) {
  using S = Store<TW>;
  return CELL == GRU ? S::from_f2(dgx[i], dgr[i]) : S::from_f2(dgx[2 * i], dgx[2 * i + 1]);
}
// Stores pair i of bwd_dG_pair at time t, sequence bg, unit gu.
template <int CELL, typename TW>
__device__ __forceinline__ void bwd_store_dG_pair(const BwdParams<TW>& p, int dir, int t, int bg, int gu, int i,
                                                  typename Store<TW>::Pair v) {
  constexpr int G = CellTraits<CELL>::G;
  const size_t row = size_t(t) * p.B + bg;
  TW* dg = p.dG[dir] + row * (G * p.Hr) + gu;
  if (CELL == GRU) {
    dg[i * p.Hr] = v.x;
    p.dGh[dir][row * (G * p.Hr) + gu + i * p.Hr] = v.y;
  } else {
    dg[(2 * i) * p.Hr] = v.x;
    dg[(2 * i + 1) * p.Hr] = v.y;
  }
}

// The transposed row slice of a CTA as mma A fragments, for the 16-bit products of the reduce-scatter backward kernels
// (persistent_bwd_rs.cuh; persistent_bwd_grid.cuh's MMA share): A[m][r] = W_hh[(r / U) * Hr + u0 + r % U][m] for the
// gate rows r < R of the CTA's U units (KT*16 >= R k columns: the rest 0) and all H units m (padded units: 0); warp w
// takes m-tiles w*MTW .. w*MTW + MTW - 1 and every k-tile. The rows are staged as they lie in W_hh, ws [KT*16][H + 8]
// TW (stage_w_rows: one round trip to memory), i.e. A transposed, and ldmatrix.trans delivers A's fragments: matrix
// j of a fragment (a0..a3) is A's rows m + 8 (j & 1), columns r + 8 (j >> 1), read as staged rows r + 8 (j >> 1) +
// (lane & 7) at column m + 8 (j & 1). (Before session 20 the slice was staged transposed by scalar loads, ~32 round
// trips to memory per launch.) The staging buffer's size: w_stage_bytes(KT * 16, H). Every thread calls it (two
// __syncthreads; ws is free again afterwards).
template <typename TW, int H, int U, int R, int KT, int MTW, int NT>
__device__ __forceinline__ void load_wt_fragments(uint32_t (&wa)[MTW][KT][4], TW* ws, const TW* W, int Hr, int u0,
                                                  int warp, int tid, int lane) {
  constexpr int LDS = w_stage_ld(H);
  stage_w_rows<TW, NT>(ws, LDS, W, Hr, u0, U, KT * 16, R, H, tid);
  const int j = lane >> 3;
#pragma unroll
  for (int i = 0; i < MTW; ++i)
#pragma unroll
    for (int kt = 0; kt < KT; ++kt)
      mma::ldsm_x4_trans(wa[i][kt],
                         ws + (kt * 16 + (j >> 1) * 8 + (lane & 7)) * LDS + (warp * MTW + i) * 16 + (j & 1) * 8);
  __syncthreads();
}

template <int CELL, typename TW, int H, int C, int KREG, int BC>
struct BwdConfig {
  using Pair = typename Store<TW>::Pair;
  static constexpr int G = CellTraits<CELL>::G;
  static constexpr int NW = 16, NT = NW * 32;
  static constexpr int U = H / C;
  static constexpr int K = G * H;
  static constexpr int KPW = K / NW;
  static constexpr int KSM = KPW - KREG;
  static constexpr int RPT = U / 32;
  static_assert(U % 32 == 0 && K % NW == 0, "whole warps of units, whole k per warp");
  static_assert(KREG % 4 == 0 && KSM % 4 == 0 && KSM >= 0, "k slices are walked 4 at a time");
  static_assert(U * BC <= NT, "one cell-phase thread per (unit, column)");
  static constexpr bool RB = CELL == GRU_RB;
  // dGrec exchanged by st.async + mbarrier: two mbarriers first in shared memory, GRU_RB two more for dn.
  static constexpr int NBAR = RB ? 4 : 2;

  // Shared memory, in this order: mbar [NBAR] | W_hh^T slice (pairs) | red [2][NW][BC][U] |
  // dgs [2][rows_pad][K] |
  // dns [rows_pad][K] (GRU_RB) | carried [2][rows_pad][U] | dc [2][rows_pad][U] (LSTM) | lens int [rows_pad].
  static size_t smem_bytes(int rows_pad) {
    const size_t w = size_t(NW) * (KSM / 2) * RPT * 32 * sizeof(Pair);
    const size_t red = size_t(2) * NW * BC * U;
    const size_t dgs = size_t(RB ? 3 : 2) * rows_pad * K;
    const size_t st = size_t(2) * rows_pad * U * (CELL == LSTM ? 2 : 1);
    return 8 * size_t(NBAR) + w + 4 * (red + dgs + st) + 4 * size_t(rows_pad);
  }
};

template <int CELL, typename TW, int H, int C, int KREG, int BC>
__global__ void __launch_bounds__(512, 1) persist_bwd_kernel(const BwdParams<TW> p) {
  using Cfg = BwdConfig<CELL, TW, H, C, KREG, BC>;
  using S = Store<TW>;
  using Pair = typename Cfg::Pair;
  constexpr int G = Cfg::G, U = Cfg::U, K = Cfg::K, NW = Cfg::NW, NT = Cfg::NT, KPW = Cfg::KPW, KSM = Cfg::KSM,
                RPT = Cfg::RPT;
  constexpr bool RB = Cfg::RB;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int dir = blockIdx.y;
  const int T = p.T, B = p.B, Hr = p.Hr;
  const int rank = blockIdx.x % C, group = blockIdx.x / C;
  const int b0 = group * p.BT;
  const int nb = min(p.BT, B - b0);
  const int nchunk = (nb + BC - 1) / BC;
  const int rows_pad = nchunk * BC;
  const int u0 = rank * U;

  extern __shared__ float4 smem4[];
  uint64_t* mbar = reinterpret_cast<uint64_t*>(smem4);  // [2]: dGrec
  uint64_t* nbar = mbar + 2;                             // [2], GRU_RB: dn
  Pair* Wsm = reinterpret_cast<Pair*>(smem4 + Cfg::NBAR / 2);
  float* red = reinterpret_cast<float*>(Wsm + NW * (KSM / 2) * RPT * 32);
  float* dgs = red + 2 * NW * BC * U;
  float* dns = dgs + 2 * rows_pad * K;  // GRU_RB only
  float* carried = dns + (RB ? rows_pad * K : 0);
  float* dcs = carried + 2 * rows_pad * U;
  int* lens = reinterpret_cast<int*>(dcs + (CELL == LSTM ? 2 * rows_pad * U : 0));

  // ---- W_hh^T slice: unit u0 + lane + 32 j, gate rows j = warp*KPW + kk (compiled index g*H + unit). Lanes read
  // consecutive units of one canonical row: coalesced. Padded units / rows read as 0.
  const TW* W = p.whh[dir];
  Pair wreg[RPT][KREG / 2 > 0 ? KREG / 2 : 1];
  {
    const TW zero = S::from_f(0.f);
#pragma unroll
    for (int j = 0; j < RPT; ++j) {
      const int gu = u0 + lane + 32 * j;
      auto ld = [&](int k) -> TW {
        const int g = k / H, kk = k % H;
        return gu < Hr && kk < Hr ? W[size_t(g * Hr + kk) * Hr + gu] : zero;
      };
      const int k0 = warp * KPW;
#pragma unroll
      for (int kk = 0; kk < KREG / 2; ++kk)
        wreg[j][kk] = S::from_f2(S::to_f(ld(k0 + 2 * kk)), S::to_f(ld(k0 + 2 * kk + 1)));
      for (int kk = 0; kk < KSM / 2; ++kk)
        Wsm[((warp * (KSM / 2) + kk) * RPT + j) * 32 + lane] =
            S::from_f2(S::to_f(ld(k0 + KREG + 2 * kk)), S::to_f(ld(k0 + KREG + 2 * kk + 1)));
    }
  }

  // Cell-phase role: copy pk of (unit pu, column pbc).
  const int ncopy = min(NT / (U * BC), C);
  const int pk = tid / (U * BC), pu = tid % U, pbc = (tid / U) % BC;
  const bool cell_thread = pk < ncopy;
  const int gu = u0 + pu;
  const bool p_live = gu < Hr;

  // ---- initial state: dgs = 0 (the step before the first contributes nothing), carried = dhy, dc = dcy ----
  for (int i = tid; i < rows_pad; i += NT) lens[i] = i < nb ? (p.lengths ? p.lengths[b0 + i] : T) : 0;
  for (int i = tid; i < (RB ? 3 : 2) * rows_pad * K; i += NT) dgs[i] = 0.f;  // and dns
  for (int i = tid; i < rows_pad * U; i += NT) {
    const int b = i / U, u = i % U;
    const bool ok = b < nb && u0 + u < Hr;
    const size_t g = size_t(b0 + b) * Hr + u0 + u;
    carried[i] = ok && p.dhy[dir] ? S::to_f(p.dhy[dir][g]) : 0.f;
    if (CELL == LSTM) dcs[i] = ok && p.dcy[dir] ? S::to_f(p.dcy[dir][g]) : 0.f;
  }
  __syncthreads();  // lens visible to every role

  // Pointwise inputs of (processing step k, chunk c) for this thread's (unit, column), one chunk ahead.
  using In = BwdIn<G, TW>;
  auto load_in = [&](int k, int c) -> In {
    const int b = c * BC + pbc;
    const bool ok = cell_thread && b < nb && p_live;
    return bwd_load_in<CELL, TW>(p, dir, k, b0 + b, gu, ok ? lens[b] : 0, ok);
  };
  In nx = load_in(0, 0);

  // The NW warps' partial sums in rd of this cell thread's unit pu, column pbc (fixed order, two chains).
  auto sum_red = [&](const float* rd) {
    float a0 = 0.f, a1 = 0.f;
#pragma unroll
    for (int w = 0; w < NW; w += 2) {
      a0 += rd[(w * BC + pbc) * U + pu];
      a1 += rd[((w + 1) * BC + pbc) * U + pu];
    }
    return a0 + a1;
  };
  // GRU_RB: phase j = k*nchunk + c of nbar[j&1] = dn of chunk c's rows (those below nb) from every CTA.
  const int rb_phases = RB ? T * nchunk : 0;
  auto rb_bytes = [&](int j) { return unsigned(C) * U * unsigned(min(BC, nb - (j % nchunk) * BC)) * 4u; };
  // GRU_RB, one chunk of a step (k < T) after step 1's matvec (partials in rd): the cell backward in two halves around
  // the product d_rh = W_hn^T dn (module comment). Every thread calls it: it holds the dn exchange's wait and a
  // __syncthreads.
  auto bwd_rb_step = [&](const In& in, float* rd, int b, int sbuf, int c, int k) {
    if constexpr (RB) {  // (instantiated for every cell, compiled for GRU_RB only)
      const bool act = cell_thread && b < nb;
      const int si = (sbuf * rows_pad + b) * U + pu, so = ((sbuf ^ 1) * rows_pad + b) * U + pu;
      float dh = 0.f, dz = 0.f, dn = 0.f, direct = 0.f, carry = 0.f;
      if (act) {
        const float dh_tot = carried[si] + sum_red(rd);
        carry = p_live ? dh_tot : 0.f;  // an inactive step carries dh_tot unchanged
        if (in.valid) {
          dh = dh_tot + in.dy;
          cell::gru_rb_backward_nz(in.a[1], in.a[2], in.hp, dh, dz, dn, direct);
        }
        float* dd = dns + size_t(b) * K + 2 * H + gu;
        uint64_t* nb_ = &nbar[(k * nchunk + c) & 1];
        for (int q = pk; q < C; q += ncopy) st_async_f32(map_dsmem(dd, q), dn, map_dsmem(nb_, q));
      }
      {
        const int j = k * nchunk + c;
        mbar_wait_parity(&nbar[j & 1], (j >> 1) & 1);
        if (tid == 0 && j + 2 < rb_phases) mbar_arrive_expect_tx_cta(&nbar[j & 1], rb_bytes(j + 2));
      }
      __syncthreads();  // every thread's reads of rd (step 1's partials) before the product below rewrites it
      float acc[RPT][BC];
      slice_matvec<TW, RPT, BC, KREG, KSM>(wreg, Wsm + warp * (KSM / 2) * RPT * 32 + lane,
                                           dns + size_t(c) * BC * K + warp * KPW, K, acc);
#pragma unroll
      for (int j = 0; j < RPT; ++j)
#pragma unroll
        for (int q = 0; q < BC; ++q) rd[(warp * BC + q) * U + lane + 32 * j] = acc[j][q];
      __syncthreads();
      if (!act) return;
      float dgx[G] = {};
      if (in.valid) {
        const float d_rh = sum_red(rd);
        float via;
        cell::gru_rb_backward_r(in.a[0], in.hp, d_rh, dgx[0], via);
        dgx[1] = dz;
        dgx[2] = dn;
        carry = direct + via;
      }
      if (!p_live) carry = 0.f;
      if (pk == 0) {
        carried[so] = carry;
        if (p_live) bwd_store_dG<CELL, TW>(p, dir, in.t, b0 + b, gu, dgx, dgx);
      }
      float* dst = dgs + (size_t(sbuf ^ 1) * rows_pad + b) * K + gu;
      for (int q = pk; q < C; q += ncopy) {
        const uint32_t base = map_dsmem(dst, q), bar = map_dsmem(&mbar[(k + 1) & 1], q);
        st_async_f32(base, dgx[0], bar);
        st_async_f32(base + 4u * H, dgx[1], bar);
      }
    }
  };
  // One phase of mbar[b] = the dGrec values pushed into this CTA at one step (C producers x U units x G gates x
  // nb columns); pushes happen at steps 0 .. T-1 into mbar[(k+1)&1], so mbar[1] takes steps 0, 2, ... and mbar[0]
  // steps 1, 3, ...
  const unsigned step_bytes = unsigned(C) * U * (RB ? 2 : G) * unsigned(nb) * 4u;  // GRU_RB pushes dr, dz only
  if (tid == 0) {
    mbar_pair_init(mbar);
    if (RB) mbar_pair_init(nbar);
    fence_mbar_init_cluster();
    mbar_pair_arm(mbar, 1, T, [&](int) { return step_bytes; });
    mbar_pair_arm(nbar, 0, rb_phases, rb_bytes);
  }
  cluster_arrive_release();
  cluster_wait_acquire();

  for (int k = 0; k <= T; ++k) {
    const int sbuf = k & 1;  // dgs / carried / dc: read [sbuf], written [sbuf ^ 1]
    if (k > 0) {
      // step k-1's dGrec is mbar[k&1]'s completion number (k-1)/2; re-arm it for step k+1's (CTA scope).
      mbar_wait_parity(&mbar[k & 1], ((k - 1) >> 1) & 1);
      if (tid == 0 && k + 1 <= T - 1) mbar_arrive_expect_tx_cta(&mbar[k & 1], step_bytes);
    }
    for (int c = 0; c < nchunk; ++c) {
      // ---- 1. matvec: acc[j][q] = sum over this warp's gate rows of W^T[u][j] dgs[q][j] ----
      const float* dk = dgs + (size_t(sbuf) * rows_pad + c * BC) * K + warp * KPW;
      float acc[RPT][BC];
      slice_matvec<TW, RPT, BC, KREG, KSM>(wreg, Wsm + warp * (KSM / 2) * RPT * 32 + lane, dk, K, acc);
      float* rd = red + (c & 1) * NW * BC * U;
#pragma unroll
      for (int j = 0; j < RPT; ++j)
#pragma unroll
        for (int q = 0; q < BC; ++q) rd[(warp * BC + q) * U + lane + 32 * j] = acc[j][q];
      __syncthreads();

      // ---- 2. cell phase ----
      const In in = bwd_in_ready<CELL, TW>(nx);
      if (c + 1 < nchunk) nx = load_in(k, c + 1);
      else nx = load_in(k + 1, 0);
      const int b = c * BC + pbc;
      if constexpr (RB) {
        if (k < T) {
          bwd_rb_step(in, rd, b, sbuf, c, k);
          continue;
        }
      }
      if (cell_thread && b < nb) {
        const int si = (sbuf * rows_pad + b) * U + pu, so = ((sbuf ^ 1) * rows_pad + b) * U + pu;
        const float dh_tot = carried[si] + sum_red(rd);
        const float dc_cur = CELL == LSTM ? dcs[si] : 0.f;
        if (k == T) {  // final pass: the gradients of hx and cx
          if (pk == 0 && p_live) {
            const size_t g = size_t(b0 + b) * Hr + gu;
            if (p.dhx[dir]) p.dhx[dir][g] = S::from_f(dh_tot);
            if (CELL == LSTM && p.dcx[dir]) p.dcx[dir][g] = S::from_f(dc_cur);
          }
        } else {
          float dgx[G], dgr[G], carry, dc_new;  // input-side and recurrent-side pre-activation gradients
          bwd_cell<CELL, TW>(in, dh_tot, dc_cur, p.clip, p_live, dgx, dgr, carry, dc_new);
          if (pk == 0) {
            carried[so] = carry;
            if (CELL == LSTM) dcs[so] = dc_new;
            if (p_live) bwd_store_dG<CELL, TW>(p, dir, in.t, b0 + b, gu, dgx, dgr);
          }
          float* dst = dgs + (size_t(sbuf ^ 1) * rows_pad + b) * K + gu;
          for (int q = pk; q < C; q += ncopy) {
            const uint32_t base = map_dsmem(dst, q), bar = map_dsmem(&mbar[(k + 1) & 1], q);
#pragma unroll
            for (int g = 0; g < G; ++g) st_async_f32(base + 4u * g * H, dgr[g], bar);
          }
        }
      }
    }
    if (k < T) __syncthreads();  // red / carried / dc of this step are read before anyone rewrites them
  }
  // Every push into a CTA was waited for; keep the cluster alive until all CTAs are done.
  cluster_arrive_release();
  cluster_wait_acquire();
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
