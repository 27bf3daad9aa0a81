// PERSISTENT forward kernel v7, the tensor-core kernel for float16 / bfloat16 at medium and large batch: one
// cooperative launch runs all T steps of one layer, both directions when D = 2 (blockIdx.y). LSTM and GRU
// (linear-before-reset).
//
// Why a third kernel. v4 and v6 multiply with FFMA (float32 CUDA cores); at B >= 16 in 16-bit their step is bound by
// that arithmetic (v4 float16 LSTM H = 1024 B = 64: 28.9 µs/step, cuDNN's tensor-core persistent kernel 7.9). v7
// runs the product on tensor cores with the tile code of STANDARD's 16-bit step kernel (standard_mma.cuh: mma.sync
// m16n8k16, float32 accumulation, ldmatrix), but the block's W_hh slice stays in shared memory for the whole
// sequence instead of being streamed through L2 every step, and there is one launch per layer, not per step.
//
// Decomposition. The state h_{t-1} of the whole batch is exchanged through global memory (L2) as STANDARD's split
// 16-bit rows (DESIGN.md: states carried in float32, split hi = round(h), lo = round(h - hi)): buffer j of hg is
// [B][2*Hr] TW, read as the matrix [2B, Hr] (row 2b = hi_b, row 2b+1 = lo_b). A group of C = ceil(Hr/UB) blocks
// owns MB rows of that matrix (MB/2 sequences); block `ut` of the group owns the UB units [ut*UB, (ut+1)*UB) and
// holds their G*UB rows of W_hh [G*Hr, Hr] (all gates: the cell update is local) in shared memory, rows padded to
// Kp + 8 halves (Kp = Hr rounded up to 64; conflict-free ldmatrix). Warps: 2 along M times G along N, as in
// standard_mma.cuh.
//
// Per step t:
//  1. the thread's input projections of step t (registers; issued before the wait, so they land during it);
//  2. thread 0 waits until the group's arrival counter reaches C*(t+1) (ld.acquire spin), __syncthreads;
//  3. product: the block's MB rows of h_{t-1} stream from L2 through a STAGES-deep cp.async ring (BK = 64 columns
//     per stage), multiplied by the resident W slice (float32 accumulators); accumulators -> Cs [MB][G*UB + 8];
//  4. cell: thread -> (sequence, unit) elements, fixed for the whole sequence, so c and h (float32) live in its
//     registers; gh = hi row + lo row of the column; h_t split into hg[(t+1)&1];
//  5. __syncthreads, thread 0: red.release.gpu add on the group's counter; then the step's other global writes (y,
//     the training reserve, h_n / c_n), which no other block waits for.
// Before step 0 each block writes h0 of its (sequences, units) into hg[0] and arrives once (round 0).
// Why the double buffer is safe: block X writes hg[(t+1)&1] at step t; the group's readers of that buffer read it at
// step t-1, and X passed round t, i.e. every block of the group arrived after finishing step t-1 (its cp.async
// reads completed before its arrival). Groups never wait on each other (their rows are independent); a cooperative
// launch makes every block co-resident or fails (never deadlocks).
//
// Semantics are v4's (FwdParams, persistent_common.cuh): ragged lengths carry the state past len and zero-fill y,
// direction 1 runs each sequence from its own last step, cell clipping, and with TRAIN the same entries of
// STANDARD's reserve. Differences: the recurrent product takes h as hi + lo (22 bits; v4: the float32 h), as
// STANDARD's 16-bit GEMM path does, and the kernel needs Hr % 8 == 0 (16-byte cp.async chunks of the state rows), no
// padded units: Hr is the real hidden size; p.H (the compiled size) is only xproj's gate stride.
// Deterministic: fixed summation order, no atomics on data.
#pragma once

#include "cuda_common.cuh"
#include "mma_sync.cuh"
#include "persistent_common.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, int MB, int UB>
struct FwdConfigV7 {
  static constexpr int G = CellTraits<CELL>::G;
  static_assert(G == 4 || G == 3, "v7 is built for LSTM and GRU");
  static constexpr int WM = 2;            // warps along M
  static constexpr int NWARP = WM * G;    // warp (wm, g): rows [wm*TM, (wm+1)*TM) of gate g's UB columns
  static constexpr int NT = NWARP * 32;
  static constexpr int NB = G * UB;       // block columns
  static constexpr int TM = MB / WM, MT = TM / 16, NTL = UB / 8;
  static_assert(TM % 16 == 0 && UB % 8 == 0, "warp tile: whole m16 and n8 tiles");
  // Ring depth: as many bytes in flight as fit beside the W slice with 2 blocks per SM at H = 1024 (MB <= 64).
  static constexpr int STAGES = MB <= 32 ? 6 : 3;
  static constexpr int BK = 64, LDA = 72;  // A stage rows padded to 144 bytes (conflict-free ldmatrix)
  static constexpr int CLD = NB + 8;
  static constexpr int NSEQ = MB / 2;
  static constexpr int EPT = (NSEQ * UB + NT - 1) / NT;  // cell elements per thread
  // Blocks per SM the registers are budgeted for: 2, except the largest tile, whose shared memory (W slice of 16
  // units) allows one per SM at H = 512 and up anyway, and whose 32 accumulators per thread spill at 128 registers.
  static constexpr int MINB = MB * UB >= 2048 ? 1 : 2;
  __host__ __device__ static int kp(int Hr) { return (Hr + BK - 1) / BK * BK; }
  __host__ __device__ static int ldw(int Hr) { return kp(Hr) + 8; }
  // Shared memory: W slice [NB][ldw] TW | A ring [STAGES][MB][LDA] TW | Cs [MB][CLD] float | lens int [NSEQ].
  static size_t smem_bytes(int Hr) {
    return size_t(NB) * ldw(Hr) * 2 + size_t(STAGES) * MB * LDA * 2 + size_t(MB) * CLD * 4 + size_t(NSEQ) * 4;
  }
};

// The cell of one (sequence, unit) at a valid step: x = input projections, bx / bh = the biases of its G gate rows,
// sg = the recurrent sums; updates h and c (float32, carried in registers), returns the activations (and GRU's
// W_hn h + b_hn in sn) for the training reserve. The arithmetic is pinned with explicit roundings (__fadd_rn /
// __fmul_rn / __fmaf_rn): the compiler may not contract it differently in the inference and training instantiations,
// which must agree bit for bit (it did, for GRU at MB >= 64, before the pinning).
template <int CELL>
__device__ __forceinline__ void v7_cell(const float* x, const float* bx, const float* bh, const float* sg, float clip,
                                        float& h, float& c, float* act, float& sn) {
  if (CELL == LSTM) {
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      const float pre = __fadd_rn(__fadd_rn(__fadd_rn(x[g], bx[g]), sg[g]), bh[g]);
      act[g] = g == 2 ? fast_tanh(pre) : fast_sigmoid(pre);
    }
    float cn = __fmaf_rn(act[1], c, __fmul_rn(act[0], act[2]));
    if (clip > 0.f) cn = fminf(fmaxf(cn, -clip), clip);
    c = cn;
    h = __fmul_rn(act[3], fast_tanh(cn));
  } else {
    act[0] = fast_sigmoid(__fadd_rn(__fadd_rn(__fadd_rn(x[0], bx[0]), sg[0]), bh[0]));
    act[1] = fast_sigmoid(__fadd_rn(__fadd_rn(__fadd_rn(x[1], bx[1]), sg[1]), bh[1]));
    sn = __fadd_rn(sg[2], bh[2]);
    act[2] = fast_tanh(__fmaf_rn(act[0], sn, __fadd_rn(x[2], bx[2])));
    h = __fmaf_rn(act[1], h, __fmul_rn(__fsub_rn(1.f, act[1]), act[2]));
  }
}

// The global writes of one (sequence b, unit u) at step t (len: the sequence's length): y (zero at padding steps),
// h_n / c_n at the last step, and with TRAIN this step's entries of STANDARD's reserve at real time rt (as v4:
// padding steps zeros, the carried state in the forward direction's slot; the reverse direction's slots len..T hold
// h0 / c0 already).
template <int CELL, typename TW, bool TRAIN>
__device__ __forceinline__ void v7_outputs(const FwdParams<TW>& p, int dir, int t, int len, int b, int u, float h,
                                           float c, const float* act, float sn) {
  constexpr int G = CellTraits<CELL>::G;
  const int B = p.B, Hr = p.Hr, T = p.T;
  const bool valid = t < len, reverse = dir == 1;
  const int te = reverse ? len - 1 - t : t;
  const int yt = valid ? te : t;
  p.y[(size_t(yt) * B + b) * (p.D * Hr) + dir * Hr + u] = Store<TW>::from_f(valid ? h : 0.f);
  if (t == T - 1) {
    store_final(p.hy[dir], p.hn[dir], size_t(b) * Hr + u, h);
    if (CELL == LSTM) store_final(p.cy[dir], p.cn[dir], size_t(b) * Hr + u, c);
  }
  if constexpr (TRAIN) {
    const size_t row = size_t(valid ? te : t) * B + b;
    float* ap = p.rs_acts[dir] + row * (G * Hr) + u;
#pragma unroll
    for (int g = 0; g < G; ++g) ap[g * Hr] = act[g];
    if (CELL == GRU) p.rs_hn[dir][row * Hr + u] = sn;
    const int slot = !reverse ? t + 1 : (valid ? te : -1);
    if (slot >= 0) {
      const size_t srow = size_t(slot) * B + b;
      store_state(p.rs_hs[dir] + srow * (kStateSlots<TW> * Hr) + u, Hr, h);
      if (CELL == LSTM) p.rs_cs[dir][srow * Hr + u] = c;
    }
  }
}

template <int CELL, typename TW, int MB, int UB, bool TRAIN = false>
__global__ void __launch_bounds__(FwdConfigV7<CELL, MB, UB>::NT, FwdConfigV7<CELL, MB, UB>::MINB) persist_fwd_v7_kernel(const FwdParams<TW> p) {
  using Cfg = FwdConfigV7<CELL, MB, UB>;
  using S = Store<TW>;
  constexpr int G = Cfg::G, NT = Cfg::NT, NB = Cfg::NB, TM = Cfg::TM, MT = Cfg::MT, NTL = Cfg::NTL;
  constexpr int STAGES = Cfg::STAGES, BK = Cfg::BK, LDA = Cfg::LDA, CLD = Cfg::CLD, NSEQ = Cfg::NSEQ;
  constexpr int EPT = Cfg::EPT;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp % Cfg::WM, wg = warp / Cfg::WM;
  const int dir = blockIdx.y;
  const bool reverse = dir == 1;
  const int T = p.T, B = p.B, Hr = p.Hr, Hx = p.H, C = p.C;
  const int ut = blockIdx.x % C, group = blockIdx.x / C;
  const int u0 = ut * UB, m0 = group * MB, b0 = m0 / 2, M = 2 * B;
  const int Kp = Cfg::kp(Hr), LDW = Cfg::ldw(Hr), KT = Kp / BK;
  const size_t hbuf = size_t(B) * 2 * Hr;  // one exchange buffer, elements

  extern __shared__ __align__(16) unsigned char smem_raw[];
  TW* Ws = reinterpret_cast<TW*>(smem_raw);                     // [NB][LDW]
  TW* As = Ws + size_t(NB) * LDW;                               // [STAGES][MB][LDA]
  float* Cs = reinterpret_cast<float*>(As + STAGES * MB * LDA);  // [MB][CLD]
  int* lens = reinterpret_cast<int*>(Cs + MB * CLD);             // [NSEQ]

  // ---- W slice, once
  stage_w_rows<TW, NT>(Ws, LDW, p.whh[dir], Hr, u0, UB, NB, NB, Kp, tid);  // one round trip (session 20)
  pdl_wait();  // what the prep kernel writes (biases, h0 / c0, counters, hg) is read or written from here on
  for (int i = tid; i < NSEQ; i += NT) {
    const int b = b0 + i;
    lens[i] = b < B ? (p.lengths ? p.lengths[b] : T) : 0;
  }

  // ---- this thread's cell elements e = tid + i*NT -> (sequence b0 + e / UB, unit u0 + e % UB) ----
  float hreg[EPT], creg[EPT], gbx[EPT][G], gbh[EPT][G];
  TW* const hx = reinterpret_cast<TW*>(p.hg[dir]);
#pragma unroll
  for (int i = 0; i < EPT; ++i) {
    const int e = tid + i * NT, b = b0 + e / UB, u = u0 + e % UB;
    const bool live = e < NSEQ * UB && b < B && u < Hr;
    hreg[i] = live ? p.h0[dir][size_t(b) * Hr + u] : 0.f;
    creg[i] = live && CELL == LSTM ? p.c0[dir][size_t(b) * Hr + u] : 0.f;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      gbx[i][g] = live ? p.bx[dir][g * Hr + u] : 0.f;
      gbh[i][g] = live ? p.bh[dir][g * Hr + u] : 0.f;
    }
    if (live) store_state(hx + size_t(b) * 2 * Hr + u, Hr, hreg[i]);  // round 0: h0 into buffer 0
  }
  unsigned* counter = p.flags[dir] + group;
  __syncthreads();
  if (tid == 0) red_release_gpu_add(counter, 1u);

  // This thread's 16-byte chunks of an A stage, fixed for the whole launch: chunk c = row r of the block (matrix
  // row m0 + r: sequence (m0 + r) / 2, term (m0 + r) % 2) at k offset kc. roff: element offset in a buffer; lim: the
  // chunk is inside Hr while k0 < lim (0 for rows past 2B).
  constexpr int NCH = MB * (BK / 8);
  constexpr int CPT = (NCH + NT - 1) / NT;
  int roff[CPT], coff[CPT], clim[CPT];
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int i = tid + c * NT, r = i / (BK / 8), kc = (i % (BK / 8)) * 8, m = m0 + r;
    const bool ok = i < NCH && m < M;
    roff[c] = ok ? (m / 2) * (2 * Hr) + (m % 2) * Hr + kc : 0;
    coff[c] = r * LDA + kc;
    clim[c] = ok ? Hr - kc : 0;
  }

  const float* xp = p.xproj[dir];
  for (int t = 0; t < T; ++t) {
    // 1. input projections of this step (0 where not needed)
    float xv[EPT][G];
#pragma unroll
    for (int i = 0; i < EPT; ++i) {
      const int e = tid + i * NT, bl = e / UB, b = b0 + bl, u = u0 + e % UB;
      const bool live = e < NSEQ * UB && b < B && u < Hr;
      const int len = live ? lens[bl] : 0;
      const int te = t >= len ? 0 : (reverse ? len - 1 - t : t);
      const float* row = xp + (size_t(te) * B + b) * (G * Hx) + u;
#pragma unroll
      for (int g = 0; g < G; ++g) xv[i][g] = t < len ? row[g * Hx] : 0.f;
    }
    // 2. wait for h_{t-1} of every unit of this group's rows
    if (tid == 0)
      while (ld_acquire_gpu(counter) < unsigned(C) * unsigned(t + 1)) {
      }
    __syncthreads();

    // 3. product [MB rows of h_{t-1}] x [W slice]^T
    const TW* base = hx + size_t(t & 1) * hbuf;
    auto load_stage = [&](int s, int k0) {
      TW* st = As + s * MB * LDA;
#pragma unroll
      for (int c = 0; c < CPT; ++c) {
        if (tid + c * NT < NCH) {
          const bool ok = k0 < clim[c];
          cp_async16_zfill(st + coff[c], ok ? base + roff[c] + k0 : base, ok ? 16 : 0);
        }
      }
    };
    float acc[MT][NTL][4];
    mma::zero_acc(acc);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < KT) load_stage(s, s * BK);
      cp_async_commit();
    }
    for (int kt = 0; kt < KT; ++kt) {
      cp_async_wait<STAGES - 2>();  // slice kt landed (this thread's copies) ...
      __syncthreads();              // ... and everyone's; slice kt-1's stage is free again
      {
        const int nk = kt + STAGES - 1;
        if (nk < KT) load_stage(nk % STAGES, nk * BK);
        cp_async_commit();
      }
      const TW* as = As + (kt % STAGES) * MB * LDA + (wm * TM) * LDA;
      const TW* bs = Ws + size_t(wg * UB) * LDW + kt * BK;
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) mma::warp_k16<TW, MT, NTL>(acc, as + kk, LDA, bs + kk, LDW, lane);
    }
    cp_async_wait_all();
    mma::store_acc<MT, NTL>(acc, Cs, CLD, wm * TM, wg * UB, lane);
    __syncthreads();

    // 4. cell (v7_cell). The exchange stores go first; the step's other global writes follow the arrival (off the
    // critical path).
    TW* hnext = hx + size_t((t + 1) & 1) * hbuf;
    float act[EPT][G], sn[EPT];
#pragma unroll
    for (int i = 0; i < EPT; ++i) {
      const int e = tid + i * NT, bl = e / UB, ul = e % UB, b = b0 + bl, u = u0 + ul;
#pragma unroll
      for (int g = 0; g < G; ++g) act[i][g] = 0.f;
      sn[i] = 0.f;
      if (!(e < NSEQ * UB && b < B && u < Hr)) continue;
      if (t < lens[bl]) {
        const float* cc = Cs + (2 * bl) * CLD + ul;
        float sg[G];
#pragma unroll
        for (int g = 0; g < G; ++g) sg[g] = __fadd_rn(cc[g * UB], cc[CLD + g * UB]);  // hi row + lo row
        v7_cell<CELL>(xv[i], gbx[i], gbh[i], sg, p.clip, hreg[i], creg[i], act[i], sn[i]);
      }
      store_state(hnext + size_t(b) * 2 * Hr + u, Hr, hreg[i]);
    }
    // 5. publish h_t: every thread's exchange stores, then one release arrival (cumulative over the block's stores
    // through the barrier).
    __syncthreads();
    if (tid == 0) red_release_gpu_add(counter, 1u);
    // 6. the step's outputs
#pragma unroll
    for (int i = 0; i < EPT; ++i) {
      const int e = tid + i * NT, bl = e / UB, b = b0 + bl, u = u0 + e % UB;
      if (!(e < NSEQ * UB && b < B && u < Hr)) continue;
      v7_outputs<CELL, TW, TRAIN>(p, dir, t, lens[bl], b, u, hreg[i], creg[i], act[i], sn[i]);
    }
  }
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
