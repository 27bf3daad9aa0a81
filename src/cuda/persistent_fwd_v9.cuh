// PERSISTENT forward kernel v9, the 16-bit small/medium-batch kernel on tensor cores: one cluster launch runs all T
// steps of one layer, both directions when D = 2 (blockIdx.y), for batch tiles of NBS sequences per cluster. LSTM
// and GRU (linear-before-reset), float16 / bfloat16 storage.
//
// Why a fourth kernel. v6 keeps W_hh on chip and exchanges h through distributed shared memory (cheap since session
// 12), but multiplies with FFMA: from B ~ 8 its step is bound by that arithmetic (16-bit LSTM H = 512 B = 16: 3.7-3.9
// µs/step against cuDNN's tensor-core PERSIST_STATIC 1.55). v7 multiplies on tensor cores but exchanges h through
// L2 with a GPU-scope release and reads W from shared memory each step. v9 takes v6's exchange and v7's mma.sync,
// and keeps W_hh in registers as ready-made A fragments, so a step reads only h from shared memory. (The kernel lab's
// "v8", v7's tile code in clusters of 16, lost to v7 everywhere in session 7: W read from shared memory each step, a
// release at cluster scope per step, and all of B in one cluster. dev/lab/README.md.)
//
// Decomposition. Cluster of C CTAs (C = 8 at H = 256, 16 at H = 512) per batch tile of nb <= NBS sequences (b0 =
// group * BT; the plan spreads B over every cluster that runs at once, since the exchange costs in proportion to nb:
// H100, 16-bit LSTM H = 512, one cluster, 1.43 µs/step at nb = 1, 1.88 at nb = 4). CTA `rank` owns the U = H / C = 32
// units [rank*U, (rank+1)*U) and their G*U rows of W_hh (row r = gate r / U of unit r % U), MTW = G*U/16 m16 tiles.
// The state of the tile is the matrix [N = 2*NBS][H] of split 16-bit rows (row 2s = hi of sequence s, row 2s+1 = lo;
// STANDARD's split: hi = round(h), lo = round(h - hi)), held by every CTA in hb[2][N][LDH] (double buffer). The
// product is S = W_slice [G*U, H] x hb^T [H, N] with mma.sync m16n8k16 (A = W row-major, B = h "col", float32
// accumulators); its columns 2s and 2s+1 land in the same thread (c0 / c1), so hi + lo is summed in registers.
// Warp w = (mg = w % MG, ks = w / MG) owns m-tiles [mg*MT, (mg+1)*MT) over the k range [ks*H/KS, (ks+1)*H/KS): A
// fragments MT x KTW x 4 registers, loaded once (LSTM: 16 warps, 64 registers of weights per thread at H = 512).
// MT = 2 and KS = 4 balance the step's shared-memory traffic (h fragments re-read by each of the MG m-groups, KS
// partial sums written and read back): ~12 KB per sequence of the tile at H = 512.
//
// Per step t:
//  1. the input projections of the thread's cell elements (registers; issued before the wait);
//  2. wait for h_{t-1}: phase of the CTA's own mbarrier bar[t&1] (nothing before step 0: every CTA loads h0 itself);
//  3. product: KTW k-tiles, h fragments by ldmatrix from hb[t&1]; the hi + lo sums -> part[t&1][KS][NBS][RL];
//  4. __syncthreads; cell: thread -> (sequence s = warp (+ NW), unit = lane), fixed for the launch, so c and h
//     (float32) live in its registers; gate sums = the KS partials in fixed order; v7_cell's pinned arithmetic;
//  5. push h_t: each warp (one sequence, 32 units) packs hi and lo of its units into 8 words of 16 bytes and stores
//     them with st.async into hb[(t+1)&1] of every CTA (lane group l/8 takes peers l/8, l/8 + 4, ...), completing on
//     that CTA's bar[(t+1)&1]; one phase = every unit of the nb real sequences = nb * H * 4 bytes;
//  6. the step's global writes (y, the training reserve, h_n / c_n: v7_outputs), off the critical path.
// No cluster barrier per step. Why nothing is overwritten early: CTA P pushes into Q's hb[(t+1)&1] at step t; Q last
// read that buffer in its step t-1 product, before the __syncthreads that precedes its own step t-1 push, which P
// needed to start step t. part[t&1], read by the cell at step t, is rewritten at step t+2, after every thread of Q
// passed step t+1's __syncthreads. (With one part buffer, rewritten at step t+1, the order would rest on the push's
// complete_tx and the wait alone: racecheck reported it, as it does not model that ordering.) The mbarrier phases
// as v6: bar[t&1] is re-armed at CTA scope after each wait, before this CTA's own push; a peer's bytes for the next
// phase cannot arrive before this CTA pushed. A final cluster barrier keeps the cluster alive until the last stores
// have landed.
//
// Semantics are v7's (FwdParams, persistent_common.cuh; v7_cell / v7_outputs): ragged lengths carry the state past
// len and zero-fill y, direction 1 runs each sequence from its own last step, cell clipping, with TRAIN the same
// entries of STANDARD's reserve; units [Hr, H) of the compiled size are padding (zero rows and columns of W, h = 0).
// The product takes h as hi + lo (22 bits), as v7 and STANDARD's 16-bit path do. Deterministic: fixed summation
// order, no atomics.
#pragma once

#include <cstring>

#include "mma_sync.cuh"
#include "persistent_common.cuh"
#include "persistent_fwd_v7.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, int H_, int C_, int NBS_>
struct FwdConfigV9 {
  static constexpr int G = CellTraits<CELL>::G;
  static_assert(G == 4 || G == 3, "v9 is built for LSTM and GRU");
  static constexpr int H = H_, C = C_, NBS = NBS_;
  static constexpr int U = H / C;
  static_assert(U == 32 && H % 64 == 0, "32 units per CTA: one warp per sequence in the cell and the push");
  static constexpr int RWS = G * U;   // W rows per CTA
  static constexpr int MTW = RWS / 16;  // m16 tiles per CTA (LSTM 8, GRU 6)
  static constexpr int MT = 2;        // m-tiles per warp
  static constexpr int MG = MTW / MT;  // m groups
  static constexpr int KS = 4;        // k split
  static constexpr int NW = MG * KS, NT = NW * 32;
  static constexpr int KT = H / 16, KTW = KT / KS;  // k16 tiles: all, per warp
  static_assert(KT % KS == 0, "k split");
  static constexpr int N = 2 * NBS, NTL = N / 8;  // state rows (hi / lo), n8 tiles
  static_assert(NBS % 4 == 0 && NBS <= 32, "tiles of 4, 8, 16, 20, 24, 28 or 32 sequences");
  // Two accumulator sets (even / odd k-tiles) where the warp has fewer than 4 independent mma chains.
  static constexpr int AS = MT * NTL >= 4 ? 1 : 2;
  static constexpr int LDH = H + 8;   // state row stride, halves (odd multiple of 16 bytes: conflict-free ldmatrix)
  static constexpr int RL = RWS + 8;  // partial-sum row stride, floats (= 8 mod 32: conflict-free stores)
  static constexpr int EPT = (NBS * U + NT - 1) / NT;  // cell elements per thread
  static constexpr int PUSH = C / 4;  // st.async per lane per step
  // Shared memory: hb [2][N][LDH] TW | part [2][KS][NBS][RL] float | bar [2] mbarriers; before the first step, the W
  // staging buffer [RWS][H + 8] TW at the same place (load_w_fragments).
  static constexpr size_t run_bytes() { return size_t(2) * N * LDH * 2 + size_t(2) * KS * NBS * RL * 4 + 16; }
  static constexpr size_t stage_bytes() { return w_stage_bytes(RWS, H); }
  static constexpr size_t smem_bytes() { return run_bytes() > stage_bytes() ? run_bytes() : stage_bytes(); }
};

// Bits of one 16-bit value.
template <typename TW>
__device__ __forceinline__ uint32_t bits16(TW v) {
  uint16_t r;
  memcpy(&r, &v, 2);
  return r;
}

// ---- shared by v9 and v10 (persistent_fwd_v10.cuh) ----

// The A fragments of a CTA's W_hh slice, loaded once: RWS rows (row r = gate r / U of unit u0 + r % U) x H columns,
// staged whole in shared memory (ws: [RWS][H + 8] TW, stage_w_rows: one round trip; rows of padded units and columns
// past Hr read as 0), each warp taking its MT m-tiles (from m-tile mg*MT) x KTW k-tiles (from k-tile ks*KTW) with
// ldmatrix as v7 does. (Loading the fragments straight from global memory kept every loaded half in a register at
// once: ptxas spilled. Staging 64 columns at a time, as before session 20, cost a memory round trip per chunk.) Every
// thread of the CTA calls it (it has __syncthreads).
template <typename TW, int H, int U, int RWS, int MT, int KTW, int NT>
__device__ __forceinline__ void load_w_fragments(uint32_t (&wa)[MT][KTW][4], TW* ws, const TW* W, int Hr, int u0,
                                                 int mg, int ks, int tid, int lane) {
  constexpr int LDS = w_stage_ld(H);
  stage_w_rows<TW, NT>(ws, LDS, W, Hr, u0, U, RWS, RWS, H, tid);
#pragma unroll
  for (int kk = 0; kk < KTW; ++kk)
#pragma unroll
    for (int i = 0; i < MT; ++i)
      mma::ldsm_x4(wa[i][kk], ws + ((mg * MT + i) * 16 + (lane & 15)) * LDS + (ks * KTW + kk) * 16 + (lane >> 4) * 8);
  __syncthreads();
}

template <int CELL, typename TW, int H_, int C_, int NBS, bool TRAIN = false>
__global__ void __launch_bounds__(FwdConfigV9<CELL, H_, C_, NBS>::NT, 1) persist_fwd_v9_kernel(const FwdParams<TW> p) {
  using Cfg = FwdConfigV9<CELL, H_, C_, NBS>;
  using S = Store<TW>;
  constexpr int G = Cfg::G, H = Cfg::H, C = Cfg::C, U = Cfg::U, MT = Cfg::MT, MG = Cfg::MG, KTW = Cfg::KTW;
  constexpr int N = Cfg::N, NTL = Cfg::NTL, AS = Cfg::AS, LDH = Cfg::LDH, RL = Cfg::RL, NW = Cfg::NW, NT = Cfg::NT;
  constexpr int EPT = Cfg::EPT, KS = Cfg::KS;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int gr = lane >> 2, tc = lane & 3;  // mma fragment coordinates
  const int mg = warp % MG, ks = warp / MG;
  const int dir = blockIdx.y;
  const bool reverse = dir == 1;
  const int T = p.T, B = p.B, Hr = p.Hr, Hx = p.H;
  const int rank = blockIdx.x % C, group = blockIdx.x / C;
  const int u0 = rank * U, b0 = group * p.BT;  // p.BT <= NBS: the plan spreads B over every cluster it can run
  const int nb = min(p.BT, B - b0);

  extern __shared__ __align__(16) unsigned char smem_raw[];
  TW* hb = reinterpret_cast<TW*>(smem_raw);                        // [2][N][LDH]
  float* part = reinterpret_cast<float*>(hb + 2 * N * LDH);           // [2][KS][NBS][RL]
  uint64_t* bar = reinterpret_cast<uint64_t*>(part + 2 * KS * NBS * RL);  // [2]
  const unsigned step_bytes = unsigned(nb) * H * 4u;  // one phase: hi + lo of every unit of the nb sequences

  // ---- A fragments of W_hh, once: m-tile mg*MT + i, k-tile ks*KTW + kk; the staging buffer sits where hb / part
  // will be (before they are initialised)
  uint32_t wa[MT][KTW][4];
  load_w_fragments<TW, H, U, Cfg::RWS, MT, KTW, NT>(wa, reinterpret_cast<TW*>(smem_raw), p.whh[dir], Hr, u0,
                                                              mg, ks, tid, lane);
  pdl_wait();  // what the prep kernel writes (biases, h0 / c0) is read from here on

  // ---- initial state: hb[0] = h0 split (zero past Hr / nb), hb[1] = 0 ----
  const float* h0 = p.h0[dir];
  for (int i = tid; i < 2 * N * LDH; i += NT) {
    const int buf = i / (N * LDH), n = (i / LDH) % N, k = i % LDH, s = n >> 1;
    float v = 0.f;
    if (buf == 0 && s < nb && k < Hr && h0) {
      const float h = h0[size_t(b0 + s) * Hr + k];
      v = (n & 1) ? h - S::to_f(S::from_f(h)) : h;
    }
    hb[i] = S::from_f(v);
  }

  // ---- this thread's cell elements: e = tid + i*NT -> sequence s = e / U (one per warp), unit u0 + lane ----
  const int u = u0 + lane;
  const bool ulive = u < Hr;
  float hreg[EPT], creg[EPT], gbx[EPT][G], gbh[EPT][G];
  int len[EPT];
#pragma unroll
  for (int i = 0; i < EPT; ++i) {
    const int s = warp + i * NW, b = b0 + s;
    const bool live = s < nb && ulive;
    len[i] = s < nb ? (p.lengths ? p.lengths[b] : T) : 0;
    hreg[i] = live && h0 ? h0[size_t(b) * Hr + u] : 0.f;
    creg[i] = live && CELL == LSTM && p.c0[dir] ? p.c0[dir][size_t(b) * Hr + u] : 0.f;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      gbx[i][g] = live ? p.bx[dir][g * Hr + u] : 0.f;
      gbh[i][g] = live && CELL == GRU && g == 2 ? p.bh[dir][g * Hr + u] : 0.f;  // b_hh of GRU's n gate only
    }
  }

  // bar[1] receives h_0 (pushed at step 0), bar[0] h_1; pushes happen at steps 0 .. T-2.
  if (tid == 0) {
    mbar_pair_init(bar);
    fence_mbar_init_cluster();
    mbar_pair_arm(bar, 1, T - 1, [&](int) { return step_bytes; });
  }
  // Every CTA of the cluster has initialised hb and its mbarriers before anyone pushes into it.
  cluster_arrive_release();
  cluster_wait_acquire();

  const float* xp = p.xproj[dir];
  for (int t = 0; t < T; ++t) {
    // 1. input projections of this step (0 where not needed)
    float xv[EPT][G];
#pragma unroll
    for (int i = 0; i < EPT; ++i) {
      const int s = warp + i * NW, b = b0 + s;
      const bool valid = s < nb && ulive && t < len[i];
      const int te = valid ? (reverse ? len[i] - 1 - t : t) : 0;
      const float* row = xp + (size_t(te) * B + (valid ? b : 0)) * (G * Hx) + u;
#pragma unroll
      for (int g = 0; g < G; ++g) xv[i][g] = valid ? row[g * Hx] : 0.f;
    }
    // 2. h_{t-1} is bar[t&1]'s completion number (t-1)/2
    if (t > 0) {
      mbar_wait_parity(&bar[t & 1], ((t - 1) >> 1) & 1);
      if (tid == 0 && t + 1 <= T - 2) mbar_arrive_expect_tx_cta(&bar[t & 1], step_bytes);  // for h_{t+1}
    }

    // 3. product: this warp's MT m-tiles x its k range x all N state rows. (All NTL n8 tiles, even those past the
    // tile's nb sequences: skipping them behind a run-time test cost up to 0.4 µs/step more than it saved, session 13.)
    {
      const TW* hc = hb + (t & 1) * N * LDH;
      float acc[AS][MT][NTL][4];
#pragma unroll
      for (int a = 0; a < AS; ++a) mma::zero_acc(acc[a]);
#pragma unroll
      for (int kk = 0; kk < KTW; ++kk) {
        const TW* bs = hc + (ks * KTW + kk) * 16;
        uint32_t bf[NTL][2];
#pragma unroll
        for (int j = 0; j + 1 < NTL; j += 2) {  // two n8 tiles per ldmatrix.x4 (as mma::warp_k16)
          uint32_t r[4];
          mma::ldsm_x4(r, bs + (j * 8 + (lane & 7) + (lane >> 4) * 8) * LDH + ((lane >> 3) & 1) * 8);
          bf[j][0] = r[0];
          bf[j][1] = r[1];
          bf[j + 1][0] = r[2];
          bf[j + 1][1] = r[3];
        }
        if constexpr (NTL % 2 == 1)
          mma::ldsm_x2(bf[NTL - 1][0], bf[NTL - 1][1],
                       bs + ((NTL - 1) * 8 + (lane & 7)) * LDH + ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < NTL; ++j)
            mma::mma16816<TW>(acc[kk % AS][i][j], wa[i][kk], bf[j][0], bf[j][1]);
      }
      // hi + lo (columns 2s, 2s+1 of one thread), then the accumulator sets, into part[t&1][ks][s][row]
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NTL; ++j) {
          float v[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            v[e] = acc[0][i][j][e];
#pragma unroll
            for (int a = 1; a < AS; ++a) v[e] = __fadd_rn(v[e], acc[a][i][j][e]);
          }
          const int row = (mg * MT + i) * 16 + gr, s = j * 4 + tc;
          float* pp = part + ((t & 1) * KS + ks) * NBS * RL + s * RL + row;
          pp[0] = __fadd_rn(v[0], v[1]);
          pp[8] = __fadd_rn(v[2], v[3]);
        }
    }
    __syncthreads();

    // 4-6. cell, push, outputs of each element
    TW* hnext = hb + ((t + 1) & 1) * N * LDH;
    uint64_t* nbar = &bar[(t + 1) & 1];
#pragma unroll
    for (int i = 0; i < EPT; ++i) {
      const int s = warp + i * NW, b = b0 + s;
      if (s >= nb) continue;  // warp-uniform
      float act[G], sn = 0.f;
#pragma unroll
      for (int g = 0; g < G; ++g) act[g] = 0.f;
      if (ulive && t < len[i]) {
        float sg[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const float* pp = part + (t & 1) * KS * NBS * RL + s * RL + g * U + lane;
          float v = pp[0];
#pragma unroll
          for (int k = 1; k < KS; ++k) v = __fadd_rn(v, pp[k * NBS * RL]);
          sg[g] = v;
        }
        v7_cell<CELL>(xv[i], gbx[i], gbh[i], sg, p.clip, hreg[i], creg[i], act, sn);
      }
      if (t + 1 < T) {
        // lane l: hi (l & 4 == 0) or lo word of units 8 (l & 3) .. +7, to peers l / 8, l / 8 + 4, ...
        const TW hi = S::from_f(hreg[i]);
        const TW lo = S::from_f(hreg[i] - S::to_f(hi));
        const uint32_t mine = bits16(hi) | bits16(lo) << 16;
        const int q = lane & 3, sh = (lane & 4) ? 16 : 0;
        uint32_t w[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const uint32_t x0 = __shfl_sync(0xffffffffu, mine, 8 * q + 2 * k);
          const uint32_t x1 = __shfl_sync(0xffffffffu, mine, 8 * q + 2 * k + 1);
          w[k] = ((x0 >> sh) & 0xffffu) | ((x1 >> sh) & 0xffffu) << 16;
        }
        const uint4 word = make_uint4(w[0], w[1], w[2], w[3]);
        const TW* dst = hnext + (2 * s + ((lane >> 2) & 1)) * LDH + u0 + 8 * q;
#pragma unroll
        for (int r = 0; r < Cfg::PUSH; ++r) {
          const uint32_t peer = uint32_t((lane >> 3) + 4 * r);
          st_async_v4(map_dsmem(dst, peer), word, map_dsmem(nbar, peer));
        }
      }
      if (ulive) v7_outputs<CELL, TW, TRAIN>(p, dir, t, len[i], b, u, hreg[i], creg[i], act, sn);
    }
  }
  cluster_arrive_release();
  cluster_wait_acquire();
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
