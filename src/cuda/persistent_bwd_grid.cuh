// PERSISTENT backward-data kernel, grid mode: the recurrence of backward_data for hidden sizes whose W_hh does not
// fit in one thread-block cluster (LSTM / GRU H = 1024: 16 MB / 12 MB in float32). Same results, same reserve
// outputs and the same per-step equations as the cluster kernel (persistent_bwd.cuh); what differs is where the
// weights sit and how the step's sum crosses the chip.
//
// Decomposition. C = H/U CTAs per direction (a cooperative launch: all co-resident or refused). CTA `rank` owns the
// U units [u0, u0+U) and holds the forward's row slice of W_hh: the R = G*U rows {g*H + u} of its units, every one
// of the H columns. Thread tid holds columns {2 tid, 2 tid + 1} of all R rows (H = 2 NT: R pairs per thread; KREG of
// them in registers, the rest in shared memory as [R-KREG][NT] pairs, conflict-free).
// The sum a unit needs, dh_tot[u'] = carried[u'] + sum_j W_hh[j][u'] dGrec[j], runs over the gate rows j of every
// CTA, so each CTA computes its rows' share for all H units and the shares are reduced where they are needed
// (reduce-scatter through L2), instead of gathering all G*H gradients into every CTA (4x the bytes per step):
//   step k (processing order as the cluster kernel: real t = T-1..0 for direction 0, 0..T-1 for direction 1):
//   1. k > 0: thread 0 waits (ld.acquire) for C*k arrivals on the direction's counter; every CTA reads the C
//      shares of its U units from part[k&1][c][b][u] (float4, L2 only) and adds them in a fixed order (warp
//      butterfly over c, then the warps of a column in order): red[b][w][u];
//   2. cell phase, one thread per (sequence, unit) of the batch (U*BMAX threads): dh_tot = carried + the partial
//      sums; cell backward (the cluster kernel's bwd_cell); dGrec -> dgl[b][r] in shared memory. carried and dc
//      stay in that thread's registers for all T steps (it owns the unit);
//   3. share: part[(k+1)&1][rank][b][2tid..2tid+1] = sum_r W[r][2tid..] dgl[b][r] (columns in chunks of 4, so each
//      weight pair is read once per chunk); __syncthreads, then thread 0 adds 1 to the counter (red.release), and
//      only then the cell threads write the step's dG/dGh rows of the reserve (from dgl: the release does not wait
//      for those stores, as in v7).
//   After the last step one more pass of 1 gives dhx = carried + W_hh^T dGrec(last); dcx = dc.
// One counter per direction and group suffices: a CTA writes part[(k+1)&1] at step k after its wait for C*k arrivals, i.e.
// after every CTA finished step k-1, the last step that read that buffer.
//
// Bytes per step through L2: C*B*H floats written and read (B = 16, H = 1024, U = 8: 8 MB each way; U = 16, 64 CTAs:
// 4 MB), a quarter of a gather of dGrec. Capacity: B <= BMAX per launch (the reduction holds a column pair per 512
// threads in registers); float32 batches of up to 4 * BMAX run as several launches from sequence b_lo (session 24).
// MMA (16-bit storage, session 18): step 3 on tensor cores instead of FFMA (1024 FMAs per thread and step at B = 16,
// each on a converted weight pair): the same rows, transposed (A[unit m][row r], 4 m-tiles x 2 k-tiles per warp: 32
// registers; U = 16: 4 k-tiles, 64 registers, LSTM R = 64), times dGrec split hi / lo in shared memory (as
// persistent_bwd_rs.cuh's), the hi + lo sums stored to the share; everything else as above.
// Precision and determinism: float32 exchange and sums in a fixed order (no atomics on data), as the cluster kernel.
#pragma once

#include <type_traits>

#include "mma_sync.cuh"
#include "persistent_bwd.cuh"
#include "persistent_plan.h"  // kBwdCounterStride

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, typename TW, int H, int U, int KREG, bool MMA = false>
struct BwdGridConfig {
  using Pair = typename Store<TW>::Pair;
  static constexpr int G = CellTraits<CELL>::G;
  static constexpr int NT = 512, NW = NT / 32;
  static constexpr int R = G * U;
  static constexpr int C = H / U;
  static constexpr int BMAX = 16;          // columns (sequences) per launch
  static constexpr int NV = U / 4;         // float4 per (share, column) of the reduction
  static constexpr int TPC = C * NV;       // reduction threads per column (= H / 4)
  static constexpr int CPP = NT / TPC;     // columns per reduction pass
  static constexpr int NPASS = BMAX / CPP; // reduction passes for BMAX columns
  static constexpr int WPC = TPC / 32;     // warps per column in the reduction
  static constexpr int KSM = R - KREG;     // weight pairs per thread in shared memory
  static_assert(H == 2 * NT, "one column pair per thread");
  static_assert(U % 4 == 0 && TPC % 32 == 0 && NT % TPC == 0 && BMAX % CPP == 0, "reduction shape");
  static_assert(KREG <= R && KREG % 4 == 0 && R % 4 == 0, "rows are walked 4 at a time");
  static_assert(U * BMAX <= NT, "one cell-phase thread per (unit, column)");
  // MMA (16-bit storage): the share on tensor cores. A[m][r] = W_hh[row r][m] (m over all H units, r over the R rows
  // padded to KT k-tiles: 2 at U = 8, 3-4 at U = 16) as mma fragments in registers, MTW m-tiles per warp; the B
  // operand is the step's dGrec split hi / lo in dgs [2*BMAX][LDG] TW (row 2b = hi of sequence b, 2b + 1 = lo; rows
  // past B and columns past R 0).
  static_assert(!MMA || (sizeof(TW) == 2 && R <= 64 && H % (16 * NW) == 0), "tensor-core share: 16-bit, R <= 64");
  // KT k-tiles of 16 rows (R padded); LDG = KT*16 + 8: rows of an odd multiple of 16 bytes (ldmatrix, no conflicts)
  static constexpr int KT = (R + 15) / 16, MTW = H / 16 / NW, LDG = KT * 16 + 8;

  // Shared memory: Wsm [KSM][NT] pairs (FFMA) | dgl [BMAX][R] float | xn [BMAX][U] (GRU) | red [BMAX][WPC][U] |
  // lens int [BMAX] | dgs [2*BMAX][LDG] TW (MMA, 16-byte aligned). MMA: before the first step the A staging buffer
  // [KT*16][H + 8] TW sits at 0 (load_wt_fragments).
  static size_t run_bytes() {
    return size_t(MMA ? 0 : KSM) * NT * sizeof(Pair) +
           4 * (size_t(BMAX) * R + (CELL == GRU ? size_t(BMAX) * U : 0) + size_t(BMAX) * WPC * U + BMAX) +
           (MMA ? 16 + size_t(2) * BMAX * LDG * 2 : 0);
  }
  static size_t smem_bytes() {
    const size_t stage = MMA ? w_stage_bytes(KT * 16, H) : 0;
    return run_bytes() > stage ? run_bytes() : stage;
  }
  // Global exchange per direction: part float32 [NG][2][C][BT][H], BT <= min(B, BMAX) the launch's tile, NG the
  // groups of C CTAs of one launch (MMA: up to 2, each on its own batch tile; float32: 1). A batch of several launches
  // reuses it.
  static constexpr int NG = MMA ? 2 : 1;
  static size_t part_bytes(int B) { return size_t(NG) * 2 * C * (B < BMAX ? B : BMAX) * H * 4; }
};

template <int CELL, typename TW, int H, int U, int KREG, bool MMA = false>
__global__ void __launch_bounds__(512, 1) persist_bwd_grid_kernel(const BwdParams<TW> p) {
  using Cfg = BwdGridConfig<CELL, TW, H, U, KREG, MMA>;
  using S = Store<TW>;
  using Pair = typename Cfg::Pair;
  constexpr int G = Cfg::G, R = Cfg::R, C = Cfg::C, NT = Cfg::NT, BMAX = Cfg::BMAX, NV = Cfg::NV, TPC = Cfg::TPC,
                CPP = Cfg::CPP, NPASS = Cfg::NPASS, WPC = Cfg::WPC, KSM = Cfg::KSM;

  constexpr int KT = Cfg::KT, MTW = Cfg::MTW, LDG = Cfg::LDG;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int dir = blockIdx.y;
  // Group `group` of this launch (C CTAs each; 16-bit: two groups side by side for B = kBwdGridTwoGroupsMinB-32,
  // session 25) takes the sequences bl .. bl + B - 1 of the problem's p.B: tiles of p.BT <= BMAX, from p.b_lo
  // (float32 batches of more than BMAX run as several launches, BwdGridKernelImpl::launch). Its shares (stride
  // BS = p.BT columns) and its counter are its own.
  const int group = blockIdx.x / C, rank = blockIdx.x % C;
  const int T = p.T, bl = p.b_lo + group * p.BT, B = min(p.BT, p.B - bl), BS = p.BT, Hr = p.Hr;
  const int u0 = rank * U;

  extern __shared__ float4 smem4[];
  Pair* Wsm = reinterpret_cast<Pair*>(smem4);
  float* dgl = reinterpret_cast<float*>(Wsm + (MMA ? 0 : KSM) * NT);
  float* xn = dgl + BMAX * R;  // GRU: the n gate's input-side gradient (dgl holds the recurrent side)
  float* red = xn + (CELL == GRU ? BMAX * U : 0);
  int* lens = reinterpret_cast<int*>(red + BMAX * WPC * U);
  // MMA: [2*BMAX][LDG], 16-byte aligned rows (ldmatrix)
  TW* dgs = reinterpret_cast<TW*>((reinterpret_cast<uintptr_t>(lens + BMAX) + 15) & ~uintptr_t(15));

  // ---- W_hh rows of this CTA's units (compiled row r = g*U + uu <-> canonical row g*Hr + u0 + uu), columns
  // 2 tid, 2 tid + 1 (consecutive threads read consecutive columns: coalesced). Padded rows / columns read as 0.
  // MMA: the same rows, transposed, as A fragments (load_wt_fragments: staged [KT*16][H + 8] as they lie in W_hh).
  const TW* W = p.whh[dir];
  Pair wreg[KREG > 0 && !MMA ? KREG : 1];
  uint32_t wa[MMA ? MTW : 1][KT][4];
  if constexpr (MMA) {
    load_wt_fragments<TW, H, U, R, KT, MTW, NT>(wa, reinterpret_cast<TW*>(smem4), W, Hr, u0, warp, tid, lane);
    const TW zero = S::from_f(0.f);  // the staging buffer is dgl / red / dgs now
    for (int i = tid; i < 2 * BMAX * LDG; i += NT) dgs[i] = zero;
  } else {
    const TW zero = S::from_f(0.f);
    const int k0 = 2 * tid;
    auto ld = [&](int r, int k) -> TW {
      const int g = r / U, u = u0 + r % U;
      return u < Hr && k < Hr ? W[size_t(g * Hr + u) * Hr + k] : zero;
    };
#pragma unroll
    for (int r = 0; r < KREG; ++r) wreg[r] = S::from_f2(S::to_f(ld(r, k0)), S::to_f(ld(r, k0 + 1)));
    for (int r = KREG; r < R; ++r) Wsm[(r - KREG) * NT + tid] = S::from_f2(S::to_f(ld(r, k0)), S::to_f(ld(r, k0 + 1)));
  }
  for (int i = tid; i < BMAX * R; i += NT) dgl[i] = 0.f;  // columns past B stay 0 (the share's padded chunk)
  for (int i = tid; i < BMAX; i += NT) lens[i] = i < B ? (p.lengths ? p.lengths[bl + i] : T) : 0;

  // Cell-phase role: sequence cb, unit cu (consecutive threads: consecutive units of one sequence).
  const int cb = tid / U, cu = tid % U;
  const int gu = u0 + cu;
  const bool cell_thread = cb < B;
  const bool p_live = cell_thread && gu < Hr;
  float carried = 0.f, dc = 0.f;  // this thread's unit, for all T steps
  if (p_live) {
    const size_t g = size_t(bl + cb) * Hr + gu;
    carried = p.dhy[dir] ? S::to_f(p.dhy[dir][g]) : 0.f;
    if (CELL == LSTM) dc = p.dcy[dir] ? S::to_f(p.dcy[dir][g]) : 0.f;
  }
  __syncthreads();  // lens, dgl

  using In = BwdIn<G, TW>;
  In nx = bwd_load_in<CELL, TW>(p, dir, 0, bl + cb, gu, p_live ? lens[cb] : 0, p_live);
  float* part = p.part[dir] + size_t(group) * 2 * C * BS * H;
  unsigned* counter = p.counter[dir] + group * kBwdCounterStride;
  // Reduction role: column slot rs of each pass, share rc, float4 rv of the U units.
  const int rj = tid % TPC, rs = tid / TPC, rv = rj % NV, rc = rj / NV, rw = rj / 32;

  for (int k = 0; k <= T; ++k) {
    // ---- 1. the shares of this CTA's units, written by every CTA at step k-1 ----
    float a_sum = 0.f;
    if (k > 0) {
      if (tid == 0)
        while (ld_acquire_gpu(counter) < unsigned(C) * unsigned(k)) {
        }
      __syncthreads();
      const float* src = part + size_t(k & 1) * C * BS * H + size_t(rc) * BS * H + u0 + 4 * rv;
      float4 v[NPASS];
#pragma unroll
      for (int q = 0; q < NPASS; ++q) {
        const int b = q * CPP + rs;
        v[q] = b < B ? __ldcg(reinterpret_cast<const float4*>(src + size_t(b) * H)) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int q = 0; q < NPASS; ++q) {
        if (q * CPP >= B) break;
#pragma unroll
        for (int o = NV; o < 32; o <<= 1) {  // lanes of the same float4 of the units: shares rc in a fixed tree
          v[q].x += __shfl_xor_sync(0xffffffffu, v[q].x, o);
          v[q].y += __shfl_xor_sync(0xffffffffu, v[q].y, o);
          v[q].z += __shfl_xor_sync(0xffffffffu, v[q].z, o);
          v[q].w += __shfl_xor_sync(0xffffffffu, v[q].w, o);
        }
        const int b = q * CPP + rs;
        if (lane < NV && b < B) *reinterpret_cast<float4*>(red + (b * WPC + rw) * U + 4 * rv) = v[q];
      }
      __syncthreads();
      if (cell_thread) {
        float a0 = 0.f, a1 = 0.f;  // two chains, fixed order
#pragma unroll
        for (int w = 0; w < WPC; w += 2) {
          a0 += red[(cb * WPC + w) * U + cu];
          a1 += red[(cb * WPC + w + 1) * U + cu];
        }
        a_sum = a0 + a1;
      }
    }
    const float dh_tot = carried + a_sum;

    // ---- 2. cell phase ----
    if (k == T) {  // final pass: the gradients of hx and cx
      if (p_live) {
        const size_t g = size_t(bl + cb) * Hr + gu;
        if (p.dhx[dir]) p.dhx[dir][g] = S::from_f(dh_tot);
        if (CELL == LSTM && p.dcx[dir]) p.dcx[dir][g] = S::from_f(dc);
      }
      break;
    }
    const In in = bwd_in_ready<CELL, TW>(nx);
    int t_out = 0;  // real time of this step's reserve rows
    nx = bwd_load_in<CELL, TW>(p, dir, k + 1, bl + cb, gu, p_live ? lens[cb] : 0, p_live);
    if (cell_thread) {
      float dgx[G], dgr[G], carry, dc_new;
      bwd_cell<CELL, TW>(in, dh_tot, dc, p.clip, p_live, dgx, dgr, carry, dc_new);
      carried = carry;
      dc = dc_new;
      t_out = in.t;
#pragma unroll
      for (int g = 0; g < G; ++g) dgl[cb * R + g * U + cu] = dgr[g];
      if (CELL == GRU) xn[cb * U + cu] = dgx[2];
      if constexpr (MMA) {
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const TW hi = S::from_f(dgr[g]);
          dgs[(2 * cb) * LDG + g * U + cu] = hi;
          dgs[(2 * cb + 1) * LDG + g * U + cu] = S::from_f(dgr[g] - S::to_f(hi));
        }
      }
    }
    __syncthreads();

    // ---- 3. this CTA's share for every unit (FFMA: columns 2 tid, 2 tid + 1, sequences in chunks of 4) ----
    if constexpr (MMA) {
      // n8 tile j = sequences 4j .. 4j+3 (hi, lo rows); the thread's c0 / c1 are hi / lo of sequence 4j + tc at unit
      // row gr of each m-tile, c2 / c3 at row gr + 8: summed in registers, stored to the share.
      float* dst = part + size_t((k + 1) & 1) * C * BS * H + size_t(rank) * BS * H;
      const int gr = lane >> 2, tc = lane & 3;
      for (int j = 0; j < BMAX / 4; ++j) {
        if (4 * j >= B) break;  // uniform
        float acc[MTW][4];
#pragma unroll
        for (int i = 0; i < MTW; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;
#pragma unroll
        for (int kt = 0; kt < KT; ++kt) {
          uint32_t b0r, b1r;
          mma::ldsm_x2(b0r, b1r, dgs + (j * 8 + (lane & 7)) * LDG + kt * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
          for (int i = 0; i < MTW; ++i) mma::mma16816<TW>(acc[i], wa[i][kt], b0r, b1r);
        }
        const int sq = 4 * j + tc;
        if (sq < B) {
#pragma unroll
          for (int i = 0; i < MTW; ++i) {
            float* d = dst + size_t(sq) * H + (warp * MTW + i) * 16 + gr;
            __stcg(d, __fadd_rn(acc[i][0], acc[i][1]));
            __stcg(d + 8, __fadd_rn(acc[i][2], acc[i][3]));
          }
        }
      }
    } else {
      float* dst = part + size_t((k + 1) & 1) * C * BS * H + size_t(rank) * BS * H + 2 * tid;
      // Sequences b0 .. b0 + NQ - 1: NQ = 4, and a rest of 1 or 2 one sequence at a time. Until session 50 every
      // chunk multiplied 4 sequences, so B = 1 did 4x the FMAs and loads it needed: its share product took 1794
      // cycles of a 5590-cycle float32 LSTM step, as long as B = 4's (phase profile, H100). A third instantiation,
      // NQ = 2, made the LSTM kernel spill. Each sequence's sums are the same, in the same order, whatever NQ.
      auto chunk = [&](int b0, auto nq) {
        constexpr int NQ = decltype(nq)::value;
        float2 acc[NQ];
#pragma unroll
        for (int q = 0; q < NQ; ++q) acc[q] = make_float2(0.f, 0.f);
#pragma unroll
        for (int r = 0; r < R; r += 4) {
          float2 w[4];
#pragma unroll
          for (int i = 0; i < 4; ++i)
            w[i] = S::to_f2(r + i < KREG ? wreg[r + i < KREG ? r + i : 0] : Wsm[(r + i - KREG) * NT + tid]);
#pragma unroll
          for (int q = 0; q < NQ; ++q) {
            const float4 d = *reinterpret_cast<const float4*>(dgl + (b0 + q) * R + r);
            acc[q].x = fmaf(w[0].x, d.x, acc[q].x);
            acc[q].y = fmaf(w[0].y, d.x, acc[q].y);
            acc[q].x = fmaf(w[1].x, d.y, acc[q].x);
            acc[q].y = fmaf(w[1].y, d.y, acc[q].y);
            acc[q].x = fmaf(w[2].x, d.z, acc[q].x);
            acc[q].y = fmaf(w[2].y, d.z, acc[q].y);
            acc[q].x = fmaf(w[3].x, d.w, acc[q].x);
            acc[q].y = fmaf(w[3].y, d.w, acc[q].y);
          }
        }
#pragma unroll
        for (int q = 0; q < NQ; ++q)
          if (b0 + q < B) __stcg(reinterpret_cast<float2*>(dst + size_t(b0 + q) * H), acc[q]);
      };
      int b0 = 0;
      for (; b0 + 4 <= B; b0 += 4) chunk(b0, std::integral_constant<int, 4>{});
      if (B - b0 == 3) {
        chunk(b0, std::integral_constant<int, 4>{});
      } else {
        for (; b0 < B; ++b0) chunk(b0, std::integral_constant<int, 1>{});
      }
    }
    __syncthreads();
    if (tid == 0) red_release_gpu_add(counter, 1u);
    // This step's reserve rows, after the arrival (off the exchange's critical path; dgl / xn are next written in
    // the next step's cell phase, after two more __syncthreads).
    if (p_live) {
      float dgx[G], dgr[G];
#pragma unroll
      for (int g = 0; g < G; ++g) dgx[g] = dgr[g] = dgl[cb * R + g * U + cu];
      if (CELL == GRU) dgx[2] = xn[cb * U + cu];
      bwd_store_dG<CELL, TW>(p, dir, t_out, bl + cb, gu, dgx, dgr);
    }
  }
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
