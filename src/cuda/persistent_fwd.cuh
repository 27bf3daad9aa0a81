// PERSISTENT forward kernel: one launch runs all T steps of one layer, both directions when D = 2 (blockIdx.y).
// The library ships lab version v4 (dev/lab/README.md: versions, predictions, measured timings, phase profiles;
// v3, its predecessor, is kept in dev/lab/persist_fwd_v3.cuh).
//
// Decomposition. A "group" of C CTAs owns one batch tile of BT sequences and all H hidden units: CTA `rank` owns
// the U = H/C units [rank*U, (rank+1)*U) and so the R = G*U rows {g*H + u} of W_hh (every gate of its units: the
// cell update is local). Warp w owns the k-range [w*KPW, (w+1)*KPW) of the H columns (split-K over NW warps), lane l
// owns rows {l, l+32, ...} (RPT of them). KREG of each thread's k per row stay in registers and KSM = KPW - KREG in
// shared memory for the whole sequence (W_hh is read from DRAM once per launch). Input projections W_ih x for all
// steps come from one GEMM before the launch ([T, B, G*H] float32).
//
// Per step t, per batch chunk of BC columns (v4):
//  1. matvec: acc[row][bc] = sum_k W[row][k] h_{t-1}[bc][k] over the warp's k-range (h from shared memory as
//     warp-uniform float4 broadcasts); partials -> red[w][bc][row]; __syncthreads.
//  2. gate phase, R*BC threads (thread = one gate row of one column, so every warp of the CTA works at B=1 instead
//     of v3's single warp): add the NW partials (fixed order), the input projection (a plain global load issued one
//     chunk ahead into a register: no shared-memory staging, no cp.async wait before the barrier) and the biases,
//     apply the gate's activation, store it to gs[bc][row]; __syncthreads.
//  3. cell phase, U*BC threads per copy, NCOPY = min(NT / (U*BC), C) identical copies (cluster mode): each copy
//     combines the gates into c_t and h_t (the same float operations in the same order: bitwise equal values);
//     copy 0 writes c, y, h_n, c_n (and hg in grid mode), copy k pushes h_t into the CTAs k, k+NCOPY, ... of the
//     cluster (one or two remote stores per thread instead of C in series). c is double-buffered by step parity
//     (cs[t&1] read by every copy, cs[(t+1)&1] written by copy 0) so the copies never race on it.
//
// Publishing h_t (template GRID):
//  * cluster mode: the group is one thread-block cluster; every CTA keeps h_{t-1} for the whole tile in
//    hs[2][BTpad][H] (double-buffered by step parity); the cell-phase copies store h_t into hs[(t+1)&1] of all C
//    CTAs with st.async, each store completing its 4 bytes on that CTA's mbarrier mbar[(t+1)&1], and a CTA starts
//    step t+1 when its own mbar[(t+1)&1] phase completes (all C*U*nb values of h_t have landed), the exchange of v6
//    (persistent_fwd_v6.cuh has the argument for the double buffers and the re-arm). Until session 12 this was
//    st.shared::cluster + one barrier.cluster arrive.release / wait.acquire per step; the release alone costs ~550
//    ns per step on an H100 (dev/lab/exchange_bench.cu). GRU_RB's mid-step exchange of r * h goes the same way
//    (below).
//    Clusters never wait on each other: any number of batch tiles is deadlock-free (extra tiles run in waves).
//  * grid mode (W_hh too big for one cluster, e.g. H = 1024): the group is C CTAs of a cooperative launch (several
//    groups = batch tiles when they fit); h_t goes to a global [2][B][H] buffer, then each CTA adds 1 to its group's
//    arrival counter (after __threadfence) and, before step t+1, waits (ld.acquire) for C*(t+1) arrivals and
//    streams h_t chunk by chunk from L2 with cp.async. The cooperative launch fails instead of deadlocking when the
//    grid cannot be co-resident.
// One barrier per step suffices with double buffers: a writer at step t writes buffer (t+1)&1, which readers last
// read at step t-1, and the writer passed the step t-1 barrier, which every reader reached only after step t-1.
// With the mbarrier exchange the writer instead received all of h_{t-1}, which every CTA pushed after its step t-1
// matvec (behind that chunk's __syncthreads). The CTA's own shared data (red, gs, cs) never relied on the cluster
// barrier: each buffer is rewritten only behind a __syncthreads that its readers have passed.
// Within a step, red, gs and the grid-mode h chunks are protected by the two __syncthreads of each chunk (a buffer
// written in chunk c+1 was last read before chunk c's second __syncthreads).
//
// Hidden sizes below the compiled H (p.Hr < H): the units [Hr, H) are padding. Their W_hh rows and columns and
// their biases read as 0, their input projections are never loaded, and the cell phase forces their h and c to
// exactly 0 (not computed: with zero inputs LSTM would give 0 too, but xproj's padded columns are not written by
// the library, so nothing is read from them). A padded unit therefore contributes 0 * 0 to every real unit's sum
// and the real units get the same numbers as at the compiled size; padded units are never written to y, h_n, c_n.
//
// GRU reset-before (CELL == GRU_RB, cluster mode only): n = tanh(W_in x + b_in + b_hn + W_hn (r * h_{t-1})) needs
// this step's r before the n rows' product. Per chunk: 1. the matvec of the r and z rows only (rows lane + 32 j with
// j < JRZ = 2U/32: U % 16 == 0 keeps them apart from the n rows), 2. gate phase of r and z, 2b. the cell-phase copies
// push r * h_{t-1} of their units into rh[b][H] of every CTA (st.async, completing on the receiver's rbar[j&1] for
// the step's and chunk's phase j = t*nchunk + c) and wait for the CTA's own phase, 2c. the matvec of the n rows on rh,
// its partial sums added in a third gate phase; 3. the cell phase as for GRU. rh is single-buffered: a writer at step
// t+1 has received all of h_t, which every CTA pushed after its step t reads of rh. The two rbar alternate so that
// the data of phase j+1 (sent by a CTA that has all of phase j) never lands in a phase j still waiting for a slower
// producer. Until session 12: two barrier.cluster per step.
//
// Ragged lengths: at steps t >= len[b] the state is carried unchanged and y[t][b] is zero-filled; direction 1 runs
// each sequence from its own last step (t_eff = len-1-t). Determinism: fixed summation order, no atomics on data.
#pragma once

#include "persistent_common.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID>
struct FwdConfigV4 {
  using Pair = typename Store<TW>::Pair;
  static constexpr int G = CellTraits<CELL>::G;
  static constexpr int U = R / G;
  static constexpr int H = NW * KPW;
  static constexpr int NT = NW * 32;
  static constexpr int RPT = (R + 31) / 32;
  static constexpr int KSM = KPW - KREG;
  static_assert(R % G == 0 && U % 4 == 0, "R must hold whole units, U a multiple of 4");
  static_assert(KREG % 4 == 0 && KSM % 4 == 0, "k slices are walked 4 at a time");
  static_assert(R * BC <= NT, "one gate-phase thread per (row, column)");
  static constexpr bool RB = CELL == GRU_RB;
  // Cluster mode (MB) exchanges h by st.async + mbarrier (two mbarriers at the start of shared memory; GRU_RB two more
  // for r * h); grid mode keeps its counter.
  static constexpr bool MB = !GRID;
  static constexpr int NBAR = MB ? (RB ? 4 : 2) : 0;  // mbarriers (8 B each) before the W_hh slice
  static constexpr int JRZ = RB ? 2 * U / 32 : RPT;  // rows lane + 32 j, j < JRZ: the r and z rows (GRU_RB)
  static_assert(!RB || (!GRID && (2 * U) % 32 == 0 && R % 32 == 0), "GRU_RB: cluster mode, U % 16 == 0");

  // Shared memory, in this order: mbar [NBAR] | W_hh slice (pairs) | red [2][NW][BC][R] |
  // hs [2][hs_rows][H] | gs [BC][R + U]
  // (GRU keeps the n gate's recurrent part in the extra U) | cs [2][rows_pad][U] (LSTM) | rh [rows_pad][H] (GRU_RB)
  // | lens int [rows_pad].
  static size_t smem_bytes(int hs_rows, int rows_pad) {
    size_t w = size_t(NW) * (KSM / 2) * RPT * 32 * sizeof(Pair);
    size_t red = size_t(2) * NW * R * BC;
    size_t hs = size_t(2) * hs_rows * H;
    size_t gs = size_t(BC) * (R + U);
    size_t cs = CELL == LSTM ? size_t(2) * rows_pad * U : 0;
    size_t rh = RB ? size_t(rows_pad) * H : 0;
    return 8 * size_t(NBAR) + w + 4 * (red + hs + gs + cs + rh) + 4 * size_t(rows_pad);
  }
};

// TRAIN: also write STANDARD's reserve (FwdParams::rs_*); a separate instantiation, so inference carries no trace.
template <int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID, bool TRAIN = false>
__global__ void __launch_bounds__(NW * 32, 1) persist_fwd_v4_kernel(const FwdParams<TW> p) {
  using Cfg = FwdConfigV4<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
  using S = Store<TW>;
  using Pair = typename Cfg::Pair;
  constexpr int G = Cfg::G, U = Cfg::U, H = Cfg::H, NT = Cfg::NT, RPT = Cfg::RPT, KSM = Cfg::KSM;
  constexpr bool RB = Cfg::RB;
  constexpr int JRZ = Cfg::JRZ, WREG = KREG / 2 > 0 ? KREG / 2 : 1;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int dir = blockIdx.y;
  const bool reverse = dir == 1;
  const int T = p.T, B = p.B, Hr = p.Hr;
  const int rank = blockIdx.x % p.C, group = blockIdx.x / p.C;
  const int b0 = group * p.BT;
  const int nb = min(p.BT, B - b0);
  const int nchunk = (nb + BC - 1) / BC;
  const int rows_pad = nchunk * BC;
  const int hs_rows = GRID ? BC : rows_pad;
  const int u0 = rank * U;
  const bool prof = p.prof && blockIdx.x == 0 && blockIdx.y == 0 && tid == 0;

  extern __shared__ float4 smem4[];
  uint64_t* mbar = reinterpret_cast<uint64_t*>(smem4);  // [2], MB only: h
  uint64_t* rbar = mbar + 2;                             // [2], GRU_RB: r * h
  Pair* Wsm = reinterpret_cast<Pair*>(smem4 + Cfg::NBAR / 2);
  float* red = reinterpret_cast<float*>(Wsm + NW * (KSM / 2) * RPT * 32);
  float* hs = red + 2 * NW * R * BC;
  float* gs = hs + 2 * hs_rows * H;
  float* cs = gs + BC * (R + U);
  float* rhs = cs + (CELL == LSTM ? 2 * rows_pad * U : 0);
  int* lens = reinterpret_cast<int*>(rhs + (RB ? rows_pad * H : 0));

  // ---- W_hh slice into registers + shared memory (canonical [G*Hr, Hr]; padded rows / columns read as 0). Scalar
  // loads: with odd Hr a pair of k is not 8-byte aligned; this runs once per launch.
  const TW* W = p.whh[dir];
  Pair wreg[RPT][WREG];
  {
    const TW zero = S::from_f(0.f);
#pragma unroll
    for (int j = 0; j < RPT; ++j) {
      const int r = lane + 32 * j;
      const int gu = u0 + r % U;
      const bool ok = r < R && gu < Hr;
      const TW* src = W + (ok ? size_t((r / U) * Hr + gu) * Hr : 0);
      const int k0 = warp * KPW;
      auto ld = [&](int k) { return ok && k < Hr ? src[k] : zero; };
#pragma unroll
      for (int kk = 0; kk < KREG / 2; ++kk) {
        const TW a = ld(k0 + 2 * kk), b = ld(k0 + 2 * kk + 1);
        wreg[j][kk] = S::from_f2(S::to_f(a), S::to_f(b));
      }
      for (int kk = 0; kk < KSM / 2; ++kk) {
        const TW a = ld(k0 + KREG + 2 * kk), b = ld(k0 + KREG + 2 * kk + 1);
        Wsm[((warp * (KSM / 2) + kk) * RPT + j) * 32 + lane] = S::from_f2(S::to_f(a), S::to_f(b));
      }
    }
  }

  pdl_wait();  // what the prep kernel writes (biases, h0 / c0, counters) is read from here on

  // Gate-phase role: row gr of column gq (gate gg, unit gu); biases of that row.
  const bool gate_thread = tid < R * BC;
  const int gq = tid / R, gr = tid % R, gg = gr / U, gu = gr % U;
  const bool g_live = gate_thread && u0 + gu < Hr;
  const float gbx = g_live ? p.bx[dir][gg * Hr + u0 + gu] : 0.f;
  const float gbh = g_live ? p.bh[dir][gg * Hr + u0 + gu] : 0.f;
  // Cell-phase role: copy pk of (unit pu, column pbc).
  const int ncopy = GRID ? 1 : min(NT / (U * BC), p.C);
  const int pk = tid / (U * BC), pu = tid % U, pbc = (tid / U) % BC;
  const bool cell_thread = pk < ncopy;
  const bool p_live = u0 + pu < Hr;

  // ---- initial state ----
  const float* h0 = p.h0[dir];
  for (int i = tid; i < rows_pad; i += NT) lens[i] = i < nb ? (p.lengths ? p.lengths[b0 + i] : T) : 0;
  if (!GRID) {
    for (int i = tid; i < 2 * hs_rows * H; i += NT) {
      const int buf = i / (hs_rows * H), b = (i / H) % hs_rows, k = i % H;
      hs[i] = (buf == 0 && b < nb && h0 && k < Hr) ? h0[size_t(b0 + b) * Hr + k] : 0.f;
    }
  }
  if (RB)  // rows past nb are never pushed: their (discarded) products read zeros, not stale shared memory
    for (int i = tid; i < rows_pad * H; i += NT) rhs[i] = 0.f;
  if (CELL == LSTM) {
    for (int i = tid; i < U * rows_pad; i += NT) {
      const int b = i / U, u = i % U;
      cs[i] = (b < nb && p.c0[dir] && u0 + u < Hr) ? p.c0[dir][size_t(b0 + b) * Hr + u0 + u] : 0.f;
    }
  }
  __syncthreads();  // lens visible to every role

  const float* xp = p.xproj[dir];
  // Input projection of gate row gr, column gq of chunk c at step s (0 when not needed: padded unit, column past
  // the tile, step past the length). A plain load: issued a chunk ahead, it lands during the barrier / matvec.
  auto load_x = [&](int s, int c) -> float {
    const int b = c * BC + gq;
    if (!g_live || b >= nb) return 0.f;
    const int len = lens[b];
    if (s >= len) return 0.f;
    const int te = reverse ? len - 1 - s : s;
    return xp[(size_t(te) * B + b0 + b) * (G * H) + gg * H + u0 + gu];
  };
  float xv = load_x(0, 0);
  // MB: one phase of mbar[b] = every value of h pushed into this CTA at one step (C producers x U units x nb
  // columns); mbar[1] receives h_0 (pushed at step 0), mbar[0] h_1; pushes happen at steps 0 .. T-2.
  const unsigned step_bytes = unsigned(p.C) * U * unsigned(nb) * 4u;
  // GRU_RB: phase j = t*nchunk + c of rbar[j&1] = r * h of chunk c's rows (those below nb) from every CTA.
  const int rb_phases = RB ? T * nchunk : 0;
  auto rb_bytes = [&](int j) { return unsigned(p.C) * U * unsigned(min(BC, nb - (j % nchunk) * BC)) * 4u; };
  if (Cfg::MB && tid == 0) {
    mbar_pair_init(mbar);
    if (RB) mbar_pair_init(rbar);
    fence_mbar_init_cluster();
    mbar_pair_arm(mbar, 1, T - 1, [&](int) { return step_bytes; });
    mbar_pair_arm(rbar, 0, rb_phases, rb_bytes);
  }
  if (!GRID) {  // every CTA has initialised hs (and its mbarriers) before anyone pushes into it
    cluster_arrive_release();
    cluster_wait_acquire();
  } else {
    __syncthreads();
  }

  float* hg = GRID ? p.hg[dir] : nullptr;
  unsigned* counter = GRID ? p.flags[dir] + group : nullptr;
  // Grid mode: rows [c*BC, (c+1)*BC) of h_{t-1} -> hs[c & 1]: from hg with cp.async (zero-filled past nb), or at
  // t = 0 from h0 ([B, Hr], possibly odd Hr: plain loads, zero past Hr).
  auto load_chunk = [&](int c, const float* hsrc, bool from_h0) {
    float* dst = hs + (c & 1) * BC * H;
    if (from_h0) {
      for (int i = tid; i < BC * H; i += NT) {
        const int bb = c * BC + i / H, k = i % H;
        dst[i] = (bb < nb && hsrc && k < Hr) ? hsrc[size_t(b0 + bb) * Hr + k] : 0.f;
      }
      return;
    }
    for (int i = tid * 4; i < BC * H; i += NT * 4) {
      const int bb = c * BC + i / H;
      const bool ok = bb < nb;
      cp_async16_zfill(dst + i, ok ? hsrc + size_t(b0 + bb) * H + i % H : p.bx[dir], ok ? 16 : 0);
    }
    cp_async_commit();
  };

  for (int t = 0; t < T; ++t) {
    const float* hsrc = nullptr;
    if (GRID) {
      hsrc = t == 0 ? h0 : hg + size_t(t & 1) * B * H;
      if (t > 0 && tid == 0)
        while (ld_acquire_gpu(counter) < unsigned(p.C) * unsigned(t)) {
        }
      __syncthreads();
      load_chunk(0, hsrc, t == 0);
      cp_async_wait_all();
      __syncthreads();
    }
    if (Cfg::MB && t > 0) {
      // h_{t-1} is mbar[t&1]'s completion number (t-1)/2; then re-arm it for h_{t+1} (CTA scope: see
      // mbar_arrive_expect_tx_cta).
      mbar_wait_parity(&mbar[t & 1], ((t - 1) >> 1) & 1);
      if (tid == 0 && t + 1 <= T - 2) mbar_arrive_expect_tx_cta(&mbar[t & 1], step_bytes);
    }
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 0] = clock64();
    const int cbuf = t & 1;  // LSTM c: read cs[cbuf], write cs[cbuf ^ 1]

    for (int c = 0; c < nchunk; ++c) {
      const float* hcur = GRID ? hs + (c & 1) * BC * H : hs + size_t(t & 1) * hs_rows * H + c * BC * H;
      const int b = c * BC + pbc;
      const bool pw = cell_thread && b < nb;
      // h_{t-1} of this thread's unit, read before the next chunk's loads may overwrite the grid-mode buffer.
      const float hprev = pw ? hcur[pbc * H + u0 + pu] : 0.f;

      if (GRID && c + 1 < nchunk) load_chunk(c + 1, hsrc, t == 0);

      // ---- 1. matvec ----
      float acc[RPT][BC];
      const Pair* wsl = Wsm + warp * (KSM / 2) * RPT * 32 + lane;
      slice_matvec<TW, RPT, BC, KREG, KSM, WREG, 0, JRZ>(wreg, wsl, hcur + warp * KPW, H, acc);  // GRU_RB: r, z rows
      float* rd = red + (c & 1) * NW * R * BC;
#pragma unroll
      for (int j = 0; j < JRZ; ++j) {
        const int r = lane + 32 * j;
        if (r < R) {
#pragma unroll
          for (int q = 0; q < BC; ++q) rd[(warp * BC + q) * R + r] = acc[j][q];
        }
      }
      if (GRID && c + 1 < nchunk) cp_async_wait_all();
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 1] = clock64();
      __syncthreads();
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 2] = clock64();

      // ---- 2. gate phase (same float operations, same order as v3's pointwise code) ----
      // NW partial sums of gate row gr, column gq (fixed order, two chains: half the dependent-add latency).
      auto row_sum = [&]() {
        float a0 = 0.f, a1 = 0.f;
#pragma unroll
        for (int w = 0; w < NW; w += 2) {
          a0 += rd[(w * BC + gq) * R + gr];
          a1 += rd[((w + 1) * BC + gq) * R + gr];
        }
        return a0 + a1;
      };
      if (gate_thread && c * BC + gq < nb) {
        float* gd = gs + gq * (R + U);
        if (RB) {  // r, z now; n's input side (both of its biases: they sit outside r * h) for the cell phase
          gd[gr] = gg < 2 ? fast_sigmoid(xv + gbx + row_sum() + gbh) : xv + gbx;
        } else if (const float s = row_sum(); CELL == LSTM) {
          const float pre = xv + gbx + s + gbh;
          gd[gr] = gg == 2 ? fast_tanh(pre) : fast_sigmoid(pre);
        } else if (CELL == GRU) {
          if (gg < 2) {
            gd[gr] = fast_sigmoid(xv + gbx + s + gbh);
          } else {
            gd[gr] = xv + gbx;         // input side of n
            gd[R + gu] = s + gbh;      // recurrent side of n, multiplied by r in the cell phase
          }
        } else {
          const float a = xv + gbx + s + gbh;
          gd[gr] = CELL == RNN_TANH ? fast_tanh(a) : fmaxf(a, 0.f);
        }
      }
      // Next chunk's (or next step's first chunk's) input projection: in flight across the sync, cell phase and
      // barrier.
      if (c + 1 < nchunk) xv = load_x(t, c + 1);
      else if (t + 1 < T) xv = load_x(t + 1, 0);
      __syncthreads();
      if constexpr (RB) {
        // 2b. r * h_{t-1} of this copy's unit into rh of the cluster's CTAs (0 past the length, as STANDARD's
        // reserve); the training reserve keeps it (split) for the weight gradient of W_hn.
        if (pw) {
          const float* gd = gs + pbc * (R + U);
          const int len = lens[b];
          const bool valid = t < len;
          const float rhv = valid && p_live ? gd[pu] * hprev : 0.f;
          if constexpr (TRAIN) {
            if (pk == 0 && p_live) {
              const int rt = valid ? (reverse ? len - 1 - t : t) : t;  // the acts row (cell phase below)
              const size_t row = size_t(rt) * B + b0 + b;
              store_state(p.rs_rh[dir] + row * (Hr * kStateSlots<TW>) + u0 + pu, Hr, rhv);
            }
          }
          float* dst = rhs + b * H + u0 + pu;
          uint64_t* rb = &rbar[(t * nchunk + c) & 1];
          for (int q = pk; q < p.C; q += ncopy) st_async_f32(map_dsmem(dst, q), rhv, map_dsmem(rb, q));
        }
        {
          const int j = t * nchunk + c;
          mbar_wait_parity(&rbar[j & 1], (j >> 1) & 1);
          if (tid == 0 && j + 2 < rb_phases) mbar_arrive_expect_tx_cta(&rbar[j & 1], rb_bytes(j + 2));
        }
        __syncthreads();  // the CTA's own shared data as the cluster barrier ordered it before (gs, red)
        // 2c. the n rows' product on r * h, added to their gate rows.
        slice_matvec<TW, RPT, BC, KREG, KSM, WREG, JRZ, RPT>(wreg, wsl, rhs + c * BC * H + warp * KPW, H, acc);
#pragma unroll
        for (int j = JRZ; j < RPT; ++j) {
          const int r = lane + 32 * j;
          if (r < R) {
#pragma unroll
            for (int q = 0; q < BC; ++q) rd[(warp * BC + q) * R + r] = acc[j][q];
          }
        }
        __syncthreads();
        if (gate_thread && gg == 2 && c * BC + gq < nb) gs[gq * (R + U) + R + gu] = row_sum() + gbh;
        __syncthreads();
      }
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 3] = clock64();

      // ---- 3. cell phase ----
      if (pw) {
        const float* gd = gs + pbc * (R + U);
        const int len = lens[b];
        const bool valid = t < len;
        const int te = reverse ? len - 1 - t : t;
        float hnew = hprev;
        float cnew = 0.f, gn = 0.f;  // LSTM c_t, GRU n (kept for the training reserve)
        if (CELL == LSTM) {
          const float cprev = cs[(cbuf * rows_pad + b) * U + pu];
          cnew = cprev;
          if (valid) {
            cnew = gd[U + pu] * cprev + gd[pu] * gd[2 * U + pu];
            if (p.clip > 0.f) cnew = fminf(fmaxf(cnew, -p.clip), p.clip);
            hnew = gd[3 * U + pu] * fast_tanh(cnew);
          }
          if (!p_live) cnew = 0.f;
          if (pk == 0) {
            cs[((cbuf ^ 1) * rows_pad + b) * U + pu] = cnew;
            if (t == T - 1 && p_live) store_final(p.cy[dir], p.cn[dir], size_t(b0 + b) * Hr + u0 + pu, cnew);
          }
        } else if (CELL == GRU || CELL == GRU_RB) {  // GRU_RB: gd[R + pu] = W_hn (r * h), no r factor here
          if (valid) {
            const float r = RB ? 1.f : gd[pu], z = gd[U + pu];
            const float n = fast_tanh(gd[2 * U + pu] + r * gd[R + pu]);
            gn = n;
            hnew = (1.f - z) * n + z * hprev;
          }
        } else {
          if (valid) hnew = gd[pu];
        }
        if (!p_live) hnew = 0.f;
        if (pk == 0) {
          const int yt = valid ? te : t;
          if (p_live) {
            p.y[(size_t(yt) * B + b0 + b) * (p.D * Hr) + dir * Hr + u0 + pu] = S::from_f(valid ? hnew : 0.f);
            if (t == T - 1) store_final(p.hy[dir], p.hn[dir], size_t(b0 + b) * Hr + u0 + pu, hnew);
            if constexpr (TRAIN) {
              // Training: this step's entries of STANDARD's reserve, at real time rt (padding steps: zeros, and
              // the carried state in the forward direction's slot; the reverse direction's slots len..T were
              // filled with h0 / c0 before the launch, persistent_algo.cu).
              const int rt = valid ? te : t;
              const size_t row = size_t(rt) * B + b0 + b;
              float* ap = p.rs_acts[dir] + row * (G * Hr) + u0 + pu;
              if (CELL == LSTM) {
#pragma unroll
                for (int k = 0; k < 4; ++k) ap[k * Hr] = valid ? gd[k * U + pu] : 0.f;
              } else if (CELL == GRU || CELL == GRU_RB) {
                ap[0] = valid ? gd[pu] : 0.f;
                ap[Hr] = valid ? gd[U + pu] : 0.f;
                ap[2 * Hr] = valid ? gn : 0.f;
                if (!RB) p.rs_hn[dir][row * Hr + u0 + pu] = valid ? gd[R + pu] : 0.f;
              } else {
                ap[0] = valid ? hnew : 0.f;
              }
              const int slot = !reverse ? t + 1 : (valid ? te : -1);
              if (slot >= 0) {
                const size_t srow = size_t(slot) * B + b0 + b;
                store_state(p.rs_hs[dir] + srow * (Hr * kStateSlots<TW>) + u0 + pu, Hr, hnew);
                if (CELL == LSTM) p.rs_cs[dir][srow * Hr + u0 + pu] = cnew;
              }
            }
          }
          if (GRID) hg[size_t((t + 1) & 1) * B * H + size_t(b0 + b) * H + u0 + pu] = hnew;
        }
        if (Cfg::MB && t + 1 < T) {
          float* dst = hs + size_t((t + 1) & 1) * hs_rows * H + b * H + u0 + pu;
          uint64_t* nbar = &mbar[(t + 1) & 1];
          for (int q = pk; q < p.C; q += ncopy) st_async_f32(map_dsmem(dst, q), hnew, map_dsmem(nbar, q));
        }
      }
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 4] = clock64();
    }
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 5] = clock64();

    // ---- publish h_t (grid mode; cluster mode pushed it above and waits at the top of the next step) ----
    if (GRID) {
      __syncthreads();
      if (tid == 0) {
        __threadfence();
        atomicAdd(counter, 1u);
      }
    }
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 6] = clock64();
  }
  if (Cfg::MB) {  // every push into a CTA was waited for; keep the cluster alive until all CTAs are done
    cluster_arrive_release();
    cluster_wait_acquire();
  }
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
