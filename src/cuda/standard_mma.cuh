// STANDARD algorithm, 16-bit tensor-core step kernel: one launch per step computes this step's recurrent product on
// tensor cores (mma.sync m16n8k16, float16 or bfloat16 operands, float32 accumulation) for a tile of state rows and
// units, and runs the cell's pointwise on it in the same kernel (LSTM without projection, GRU linear-before-reset,
// RNN). It replaces cuBLAS GEMM + pointwise kernel per step for float16 / bfloat16 storage: one launch instead of
// two, and the product never goes through memory as float32 [2B, G*H] (a cuBLAS GEMM writes it and the pointwise
// kernel reads it back, with the float32 input projection: 3x the bytes cuDNN moves, which rounds both to 16 bits;
// docs/performance.md, "16-bit rows at H >= 1024").
//
// Operands. A = the state slot read as M rows of K = H columns: split states (DESIGN.md: states carried in float32)
// are [B, 2H] slots read as [2B, H] (row 2b = hi_b, 2b+1 = lo_b, terms = 2: standard_kernels.cuh, Split); reduced-
// state math reads hi only (terms = 1, row b at b * 2H). W = W_hh [G*H, H] row-major: rows are k-contiguous, the
// ".col" operand of mma as stored (no transposed copy).
//
// Tiling. A block owns MB rows of A (MB / terms sequences) and UB units: the N = G*UB columns {g*H + u0 + j}, so
// every gate of its units is in the block and the cell update is local. Warps: WM along M times G along N (warp
// (wm, g) computes rows [wm*TM, (wm+1)*TM) of gate g's UB columns). K is walked in BK = 64 slices through a
// 4-stage cp.async pipeline (KPipe; rows padded to 72 halves: the 8 rows an ldmatrix phase reads fall in distinct
// bank groups). After the loop the accumulators go to shared memory as float32 [MB][NB + 8] (reusing the
// pipeline buffers), and each thread runs the cell (lstm_unit / gru_unit / rnn_unit, the code of the GEMM +
// pointwise path) on one (sequence, unit) with gh(j) = row hi + row lo of that column: same float operations in the
// same order as the pointwise kernels, only the product's own summation order differs from cuBLAS's.
// Padding: rows past M, units past H and k past K are zero-filled by cp.async (src-size 0), so they add 0.
// Requirements: H % 8 == 0 (16-byte k chunks; mma_step_applies), W_hh and the first state slot 16-byte aligned
// (FwdRun checks both pointers in standard_forward.cu; every slot is then aligned, a slot being B * 2H elements).
// Deterministic: fixed summation order, no atomics.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "mma_sync.cuh"
#include "persistent_common.cuh"  // cluster barrier, distributed shared memory
#include "standard_fused.cuh"  // allow_smem
#include "standard_kernels.cuh"
#include "standard_plan.h"

namespace openrnn {
namespace cuda {

// OPENRNN_STD_MMA (developer switch, read once): "0" never use the tensor-core step kernel, "1" use it wherever it
// applies, unset/other: the rule of use_mma_step().
inline int mma_override() {
  static const int v = env_switch01("OPENRNN_STD_MMA");
  return v;
}
// OPENRNN_STD_MMA_ROT (developer switch, read once): which of the tensor-core step kernels here start each block's k
// walk at a block-dependent slice (KPipe's rot): a mask, 1 the forward step, 2 the backward step; "0" none. Unset or
// another value: both (3). The Hopper step (standard_wgmma.cuh) keeps its walk from k = 0: the same start measured
// 1-4% slower there (docs/performance.md, session 59, run 6; dev/lab/std_hopper_kwalk_rot.diff).
inline int mma_rot_mask() {
  static const int v = env_mask("OPENRNN_STD_MMA_ROT", 3);
  return v;
}

namespace mma {

// The step kernel's k pipeline: BK = 64 columns of k per stage (4 m16n8k16 steps per warp), 4 stages in shared
// memory, 3 of them in flight while one is multiplied. Rows are padded by 8 halves (a row stride of 16 bytes mod 128,
// so the 8 rows an ldmatrix phase reads fall in distinct bank groups). Any BK gives the same k order of the mma
// steps, so the same bits. Session 29, run 1 (H100, float16, graph replay, µs/step) measured
// 32 x 4 (the first form), 64 x 4, 64 x 8, 128 x 4 and 64 x 6 on every tile the rule picks: 64 x 4 was the fastest
// or within 2% on all rows (LSTM B = 16 H = 1024 8.78 -> 6.51, B = 64 H = 512 6.24 -> 5.28); the deeper ones lost
// again what the fewer iterations won (docs/performance.md, session 29).
constexpr int kBK = 64, kStages = 4, kLds = kBK + 8;

// A block's cp.async k pipeline: STG stages in shared memory (`stages`), each ROWS rows of BK k values at row stride
// LDS: the block's A rows [0, MA), then its W rows; KT = ceil(K / BK) slices. This thread's 16-byte chunks of a stage
// are fixed for the whole loop (only k0 moves): chunk c is row r at k offset kc; src: the row's element kc (row(r)
// gives the row's first element, nullptr for a padding row); lim: the chunk is inside K while k0 < lim (0 for a
// padding row). Precomputed so that the loop issues one add and one cp.async per chunk; chunks past K or of padding
// rows are zero-filled, so they add 0.
// rot: the block walks its KT slices starting at slice rot % KT and wrapping (slice i of the walk is k0 = ((i + rot) %
// KT) * BK). The blocks of a step that share operand rows (every block of a row of tiles reads the same state rows)
// would otherwise all ask L2 for the same lines at the same moment; a block-dependent start spreads them over KT
// slices. It changes only the order in which the block's k slices are summed (fixed per block: deterministic).
// Session 59 (H200, runs 4-5, A/B in one library): 16-bit B = 16 H = 1024 inference -4.5% to -15% (128 blocks share
// the state rows, KT = 16), training -3% to -5%, B = 16 H = 512 training -2% to -5%; no row slower beyond noise.
template <typename T, int ROWS, int MA, int BK, int LDS, int STG, int NTH>
struct KPipe {
  static constexpr int CH = BK / 8, NCH = ROWS * CH, CPT = (NCH + NTH - 1) / NTH, STAGE = ROWS * LDS;
  const T* src[CPT];
  int off[CPT], lim[CPT];
  const T* dummy;  // a valid address for the zero-filling copies
  T* stages;
  int tid, KT, rot;

  template <typename RowFn>
  __device__ __forceinline__ KPipe(T* smem, int thread, int K, const T* valid, RowFn row, int start = 0)
      : dummy(valid), stages(smem), tid(thread), KT((K + BK - 1) / BK), rot(KT > 0 ? start % KT : 0) {
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int i = tid + c * NTH;
      const int r = i / CH, kc = (i % CH) * 8;
      const T* rp = i < NCH ? row(r) : nullptr;
      src[c] = rp ? rp + kc : valid;
      off[c] = r * LDS + kc;
      lim[c] = rp ? K - kc : 0;
    }
  }
  // Slice i of the walk: its first k.
  __device__ __forceinline__ int k_of(int i) const { return (i + rot < KT ? i + rot : i + rot - KT) * BK; }
  // Stage s gets slice k0; parts: 1 the A chunks, 2 the W chunks, 3 both.
  __device__ __forceinline__ void load(int s, int k0, int parts) const {
    T* st = stages + s * STAGE;
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int i = tid + c * NTH;
      if (i < NCH && (parts & (i / CH < MA ? 1 : 2))) {
        const bool ok = k0 < lim[c];
        cp_async16_zfill(st + off[c], ok ? src[c] + k0 : dummy, ok ? 16 : 0);
      }
    }
  }
  // The first STG - 1 slices in flight. Programmatic dependent launch (pdl = 1: the block may have started while the
  // previous step's grid still runs): before pdl_wait() only the W rows are read (the caller's W is never written by
  // the step before), the first stages' W chunks; their A chunks (what the previous step writes) follow it, in the
  // first stage's commit group. Without pdl, each stage's chunks go out together.
  __device__ __forceinline__ void prologue(int pdl) const {
    if (pdl) {
#pragma unroll
      for (int s = 0; s < STG - 1; ++s)
        if (s < KT) load(s, k_of(s), 2);
      pdl_wait();
    }
#pragma unroll
    for (int s = 0; s < STG - 1; ++s) {
      if (s < KT) load(s, k_of(s), pdl ? 1 : 3);
      cp_async_commit();
    }
  }
  // Every slice in k order: wait until it has landed, refill the stage freed by the slice before it, mul(stage).
  // Ends with all copies complete; the caller syncs before reusing the stages.
  template <typename Mul>
  __device__ __forceinline__ void loop(Mul mul) const {
    for (int kt = 0; kt < KT; ++kt) {
      cp_async_wait<STG - 2>();  // slice kt has landed (this thread's copies) ...
      __syncthreads();           // ... and everyone's; slice kt-1's stage is free again
      const int nk = kt + STG - 1;
      if (nk < KT) load(nk % STG, k_of(nk), 3);
      cp_async_commit();
      mul(static_cast<const T*>(stages + (kt % STG) * STAGE));
    }
    cp_async_wait_all();
  }
};

template <int CELL>  // 0 LSTM, 1 GRU linear-before-reset, 2 RNN
struct Gates {
  static constexpr int value = CELL == 0 ? 4 : (CELL == 1 ? 3 : 1);
};

// Block shape: MB rows of A, UB units, WM warps along M (G along N): PW product warps, then XW warps that only load
// stages and run the cell (block_warps() below). A block of product warps only was short of threads for its copies:
// at the (32, 8) tile GRU's 6 warps issued 3 16-byte copies per thread per stage where LSTM's 8 issue 2, and the RNN
// cells' 2 warps at the tiles of 32 rows 5-6 (session 60, runs 2-3).
template <int CELL, int MB, int UB, int XW = 0>
struct Tile {
  static constexpr int G = Gates<CELL>::value;
  static constexpr int WM = G == 1 ? MB / 16 : 2;
  static constexpr int PW = WM * G;
  static constexpr int NWARP = PW + XW;
  static constexpr int NTHREADS = NWARP * 32;
  static constexpr int NB = G * UB;
  static constexpr int TM = MB / WM;  // warp tile rows
  static constexpr int MT = TM / 16;  // m16 tiles per warp
  static constexpr int NT = UB / 8;   // n8 tiles per warp
  static constexpr int CLD = NB + 8;  // epilogue row stride (floats)
  static_assert(TM % 16 == 0 && UB % 8 == 0, "warp tile: whole m16 and n8 tiles");
  static constexpr size_t pipe_bytes = size_t(kStages) * (MB + NB) * kLds * 2;
  static constexpr size_t epi_bytes = size_t(MB) * CLD * 4;
  static constexpr size_t smem_bytes = pipe_bytes > epi_bytes ? pipe_bytes : epi_bytes;
};

// p: the step (FwdStep as for the pointwise kernels; gh unused). W = W_hh [G*H, K]; K = H. terms: 2 (hi and lo
// rows) or 1 (hi only). M = B * terms. pdl: 1 where launched as a programmatic dependent of the previous step. rot: 1
// where block (x, y) starts its k walk at slice x + y (KPipe), 0 at slice 0.
template <typename T, int CELL, int MB, int UB, int XW>
__global__ void __launch_bounds__(Tile<CELL, MB, UB, XW>::NTHREADS)
    mma_fwd_kernel(const FwdStep<T, float> p, const T* __restrict__ W, int terms, int pdl, int rot) {
  using Cfg = Tile<CELL, MB, UB, XW>;
  constexpr int G = Cfg::G, NB = Cfg::NB, NTH = Cfg::NTHREADS, MT = Cfg::MT, NT = Cfg::NT, TM = Cfg::TM;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* stages = reinterpret_cast<T*>(smem_raw);      // [kStages][MB + NB][kLds]: A rows, then W rows
  float* Cs = reinterpret_cast<float*>(smem_raw);  // epilogue [MB][CLD], after the pipeline drained

  const int H = p.H, K = p.Hout, M = p.B * terms;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp % Cfg::WM, wg = warp / Cfg::WM;
  const int u0 = blockIdx.x * UB, m0 = blockIdx.y * MB;

  // The stage's rows: A row m0 + r (r < MB), then W row g*H + u of tile column r - MB.
  const KPipe<T, MB + NB, MB, kBK, kLds, kStages, NTH> pipe(stages, tid, K, W, [&](int r) -> const T* {
    if (r < MB) {
      const int m = m0 + r;  // split state: slot row m / terms (stride 2 hsp), term m % terms (offset hsp)
      return m < M ? p.hin + (long long)(m / terms) * (2 * p.hsp) + (m % terms) * p.hsp : nullptr;
    }
    const int n = r - MB, g = n / UB, u = u0 + n % UB;
    return u < H ? W + (long long)(g * H + u) * K : nullptr;
  }, rot ? static_cast<int>(blockIdx.x + blockIdx.y) : 0);
  pipe.prologue(pdl);

  // Split state (terms == 2): the cell's other inputs (gx, LSTM's c or GRU's h) of this thread's elements
  // (sequence, unit) = tid + i * NTH, into registers before the main loop so that the loads complete under it.
  const int nseq = MB / terms, b0 = m0 / terms;
  constexpr int E = ((MB / 2) * UB + NTH - 1) / NTH;
  CellInputs<CELL> in[E];
  if (terms == 2) {
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const int e = tid + i * NTH, b = b0 + e / UB, u = u0 + e % UB;
      in[i].load(p, b, u, e < nseq * UB && b < p.B && u < H);
    }
  }

  float acc[MT][NT][4];
  zero_acc(acc);

  const bool product = warp < Cfg::PW;  // warp-uniform
  pipe.loop([&](const T* st) {
    if (!product) return;
    const T* as = st + (wm * TM) * kLds;
    const T* bs = st + (MB + wg * UB) * kLds;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) warp_k16<T, MT, NT>(acc, as + kk, kLds, bs + kk, kLds, lane);
  });
  // The next step's blocks may start now, while this one runs its cell. Not at the kernel's start: several blocks of
  // this kernel fit on an SM, so an early trigger lets the steps after it start and wait too, a chain of waiting grids
  // piled onto whatever SMs have room (session 27, run 2, float16 inference, against no dependent launch: triggered at
  // the start 0.85-1.9x the time, here 0.78-1.03x).
  if (pdl) pdl_trigger();
  __syncthreads();  // every warp is done with the pipeline buffers: Cs may overwrite them

  if (product) store_acc<MT, NT>(acc, Cs, Cfg::CLD, wm * TM, wg * UB, lane);
  __syncthreads();

  // Cell: thread -> (sequence bl, unit ul), units fastest (coalesced gx / state / y accesses); gh(j) = row hi + row lo
  // (split state) of the column of gate row j = g*H + u.
  if (terms == 2) {
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const int e = tid + i * NTH, bl = e / UB, ul = e % UB, b = b0 + bl, u = u0 + ul;
      if (e >= nseq * UB || b >= p.B || u >= H) continue;
      const float* c0 = Cs + (2 * bl) * Cfg::CLD + ul;
      in[i].run(p, b, u, [c0, H](int j) {
        const float* c = c0 + (j / H) * UB;  // j = g*H + u: gate g's column of this unit
        return c[0] + c[Cfg::CLD];
      });
    }
    return;
  }
  for (int e = tid; e < nseq * UB; e += NTH) {
    const int bl = e / UB, ul = e % UB, b = b0 + bl, u = u0 + ul;
    if (b >= p.B || u >= H) continue;
    const float* c0 = Cs + bl * Cfg::CLD + ul;
    auto gh = [c0, H](int j) { return c0[(j / H) * UB]; };
    cell_unit<CELL>(p, b, u, gh);
  }
  (void)G;
}

// pdl: a programmatic dependent of the previous kernel on st (that kernel must be this layer and direction's previous
// step: the kernel reads W_hh before pdl_wait()). sms: the device's SM count (the launch's carveout).
template <typename T, int CELL, int MB, int UB, int XW>
void launch_xw(const FwdStep<T, float>& p, const T* W, int terms, bool pdl, int device, int sms, cudaStream_t st) {
  using Cfg = Tile<CELL, MB, UB, XW>;
  const dim3 grid((p.H + UB - 1) / UB, (p.B * terms + MB - 1) / MB);
  {
    static std::mutex m;
    static std::vector<int> done;
    allow_smem(reinterpret_cast<const void*>(&mma_fwd_kernel<T, CELL, MB, UB, XW>), device, Cfg::smem_bytes, m, done,
               cudaSharedmemCarveoutMaxShared);
  }
  // OPENRNN_STD_MMA_CARVEOUT (developer switch, read once): a percent for every launch instead of the rule's, -1 none.
  static const int forced = env_carveout("OPENRNN_STD_MMA_CARVEOUT");
  StepLaunch how;
  how.pdl = pdl;
  how.carveout = one_wave_carveout(static_cast<long long>(grid.x) * grid.y, sms, forced);
  launch_step_ex(&mma_fwd_kernel<T, CELL, MB, UB, XW>, grid, dim3(Cfg::NTHREADS), Cfg::smem_bytes, st, how, p, W, terms,
                 pdl ? 1 : 0, mma_rot_mask() & 1);
  OPENRNN_LAUNCH_CHECK("mma_fwd_kernel");
}

// Warps that only load and run the cell, for a block of at least NW warps in all (0: none). Tiles of 128 rows keep
// their product warps (plus GRU's 2 of session 60): their LSTM / GRU blocks hold 164 registers a thread, and the rule
// never picks them.
template <int CELL, int MB, int UB, int NW>
constexpr int extra_warps() {
  constexpr int pw = Tile<CELL, MB, UB>::PW;
  if (MB >= 128) return CELL == 1 && NW > 0 ? 2 : 0;
  return NW > pw ? NW - pw : 0;
}
// The block's warps in all, per cell and tile: the fastest of 8, 12 and 16 in session 60's run 3, or the fewer where two
// were within noise (GRU at (32, 8), RNN at (64, 16)) (H200, float16, graph, µs/step, best of two alternating
// processes; against blocks of product warps only, inference / training):
// - (32, 16) tiles, 12 warps: LSTM B = 64 H = 512 -17.5% / -8.3%, B = 128 H = 256 -20.9% / -9.5%; GRU -17.3% / -6.8%
//   and -18.1% / -6.8% (8 warps: -12.4% and -15.5% inference); RNN tanh B = 64 H = 512 -46.4% / -26.1%.
// - (32, 8) tiles: LSTM keeps its 8 (12 warps +5% to +6% at B = 16 H = 512 / 1024: 2 copies a thread either way, more
//   warps at the barriers); GRU 8 (B = 16 H = 512 -11.5%, 12 warps -5.4%); RNN 12 (B = 16 H = 256 -37.6% / -20.6%).
// - (64, 16) tiles: LSTM 16 (B = 256 H = 256 -11.8% / -5.1%; 12 warps -0.5%); RNN 12 (-28.8% / -14.1%); GRU 8 (the
//   rule gives GRU this tile only off the measured rows).
template <int CELL, int MB, int UB>
constexpr int block_warps() {
  if (MB == 32 && UB == 16) return 12;
  if (MB == 32) return CELL == 2 ? 12 : 8;
  if (MB == 64) return CELL == 0 ? 16 : (CELL == 2 ? 12 : 8);
  return 8;
}
// OPENRNN_STD_MMA_WARPS (developer switch, read once): 0 (product warps only: GRU's 6-warp and the RNN cells' 2- to
// 4-warp blocks of before session 60), 8, 12 or 16 (every tile of at most 64 rows at least that many warps); unset or
// anything else: block_warps().
template <typename T, int CELL, int MB, int UB>
void launch(const FwdStep<T, float>& p, const T* W, int terms, bool pdl, int device, int sms, cudaStream_t st) {
  static const int nw = [] {  // -1 unless the switch is exactly 0, 8, 12 or 16
    const char* e = std::getenv("OPENRNN_STD_MMA_WARPS");
    int n = -1;
    return e && std::sscanf(e, "%d", &n) == 1 && (n == 0 || n == 8 || n == 12 || n == 16) ? n : -1;
  }();
  if (nw == 0)
    launch_xw<T, CELL, MB, UB, extra_warps<CELL, MB, UB, 0>()>(p, W, terms, pdl, device, sms, st);
  else if (nw == 8)
    launch_xw<T, CELL, MB, UB, extra_warps<CELL, MB, UB, 8>()>(p, W, terms, pdl, device, sms, st);
  else if (nw == 12)
    launch_xw<T, CELL, MB, UB, extra_warps<CELL, MB, UB, 12>()>(p, W, terms, pdl, device, sms, st);
  else if (nw == 16)
    launch_xw<T, CELL, MB, UB, extra_warps<CELL, MB, UB, 16>()>(p, W, terms, pdl, device, sms, st);
  else
    launch_xw<T, CELL, MB, UB, extra_warps<CELL, MB, UB, block_warps<CELL, MB, UB>()>()>(p, W, terms, pdl, device,
                                                                                         sms, st);
}

// Block shape for this problem: the largest of (128 rows, 32 units), (64, 16), (32, 16), (32, 8) that gives at least
// ~3/4 of a wave of blocks on an H100 (132 SMs), else the smallest (most blocks). Large tiles read each operand
// fewer times (L2 traffic ~ K * (M * N / NB + N * M / MB)); small ones keep the SMs busy when M is small.
template <typename T, int CELL>
void launch_cell(const FwdStep<T, float>& p, const T* W, int terms, bool pdl, int device, int sms, cudaStream_t st) {
  const long long M = static_cast<long long>(p.B) * terms;
  auto blocks = [&](int MB, int UB) { return ((M + MB - 1) / MB) * ((p.H + UB - 1) / UB); };
  if (blocks(128, 32) >= 100)
    launch<T, CELL, 128, 32>(p, W, terms, pdl, device, sms, st);
  else if (blocks(64, 16) >= 100)
    launch<T, CELL, 64, 16>(p, W, terms, pdl, device, sms, st);
  else if (blocks(32, 16) >= 100)
    launch<T, CELL, 32, 16>(p, W, terms, pdl, device, sms, st);
  else
    launch<T, CELL, 32, 8>(p, W, terms, pdl, device, sms, st);
}

// ---- backward ---------------------------------------------------------------------------------------------------
//
// One backward step on tensor cores, the fused kernel's work (standard_fused.cuh, fused_bwd_kernel) with the product on
// mma.sync: for step t, dh_next[b][u] = E[b][u] + sum_j dGn[b][j] W_hh[j][u] (E: the carried part the previous step
// wrote into p.dh_next; dGn [B, K = G*H]: the recurrent-side pre-activation gradient of the previously processed step,
// null on the first; Wt = W_hh^T [H, K], the copy the fused path makes once per call), then the cell's backward on it
// (lstm_bwd_unit / gru_bwd_unit / rnn_bwd_unit), writing dG of step t and the new carried part p.dh_prev.
//
// Tiling. A block owns MB sequences (M = B rows of dGn), UB units (UB / 8 n8 column tiles of Wt rows) and a slice
// of k: the product is thin (M <= 64, N = UB) and deep (K = G*H: 4096 at LSTM H = 1024). The KS blocks of a
// thread-block cluster (KS > 1) share the tile's (sequences, units) and split K in KS slices of KC = ceil(K / KS)
// (rounded up to 8: whole 16-byte chunks); within a block the KW = 16 warps split the block's slice again: a stage
// holds BK = 512 columns of k (256 where a stage has more than 48 rows, to stay within shared memory), warp w
// multiplies columns [BKW w, BKW (w + 1)) of every stage (BKW = BK / KW = 32 or 16). The 16 partial tiles are summed
// in shared memory in warp order; with KS > 1 each block then sums 1/KS of the tile's elements over the KS blocks'
// sums in rank order, read through distributed shared memory, and runs the cell on them (fixed orders:
// deterministic). Wider tiles read
// dG fewer times (operand traffic ~ K (B H / UB + B H / MB) over all blocks), but that traffic does not bound the
// step: wider tiles and splits of 4 measured slower (session 30, run 1; the shapes kept are listed at BwdShapes).
// 4 stages: at MB <= 32 and K <= 2048 the whole K is in flight at once. Rows are padded by 8 halves (conflict-free
// ldmatrix, as the forward's).
// Requirements: H % 8 == 0, dGn and Wt 16-byte aligned (the caller checks).
// KW = 16 since session 61 (8 before): each thread issues half the copies of a stage (3-5 16-byte copies instead of
// 6-10), for twice the partial tiles to sum (the sums' order changed with it). Run 1 (H200, float16 training, graph,
// best of two alternating processes): of the 19 rule rows measured (LSTM / GRU / RNN tanh, B = 16-64, H = 256-1024),
// 14 faster by 1.0-7.2% (RNN tanh and B = 32-64 the most), 4 within 1% (B = 16 H = 1024, LSTM B = 16 H = 512), GRU
// B = 16 H = 512 +5.2% against a noisy baseline (its two processes 6.6% apart). Run 2 (three processes a side): the
// same within 1.3 points, GRU B = 16 H = 512 +1.5% (its baseline 2.7% apart), RNN tanh B = 64 H = 512 +1.3%.
// OPENRNN_STD_MMA_BWD_KW=8 (developer switch, read once) runs the blocks of 8 warps.
constexpr int kBwdKW = 16, kBwdStages = 4;

template <int MB_, int UB_, int KS_, int KW_ = kBwdKW>
struct BwdTile {
  static constexpr int MB = MB_, UB = UB_, KS = KS_, KW = KW_;
  static constexpr int NTH = KW * 32;
  static constexpr int ROWS = MB + UB;
  static constexpr int MT = MB / 16, NT = UB / 8;
  static constexpr int BK = ROWS > 48 ? 256 : 512, BKW = BK / KW, LDS = BK + 8;
  static_assert(BKW % 16 == 0, "whole k16 steps per warp");
  static constexpr size_t pipe_bytes = size_t(kBwdStages) * ROWS * LDS * 2;
  static constexpr size_t red_bytes = size_t(KW) * MB * UB * 4;  // the warps' partial tiles
  static constexpr size_t smem_bytes = pipe_bytes > red_bytes ? pipe_bytes : red_bytes;
  static_assert(MB % 16 == 0 && UB % 8 == 0, "whole m16 / n8 tiles");
  static_assert(KS >= 1 && KS <= 8 && (MB * UB) % KS == 0, "a portable cluster; whole element shares");
};

template <typename T, int CELL, typename Cfg>
__global__ void __launch_bounds__(Cfg::NTH)
    mma_bwd_kernel(const BwdStep<T, float> p, const T* __restrict__ Wt, const T* __restrict__ dGn, int pdl, int rot) {
  constexpr int NTH = Cfg::NTH, MB = Cfg::MB, UB = Cfg::UB, KS = Cfg::KS, MT = Cfg::MT, NT = Cfg::NT;
  constexpr int BKW = Cfg::BKW, BK = Cfg::BK, LDS = Cfg::LDS, G = Gates<CELL>::value;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* stages = reinterpret_cast<T*>(smem_raw);      // [kBwdStages][MB + UB][LDS]: dGn rows, then Wt rows
  float* red = reinterpret_cast<float*>(smem_raw);  // [KW][MB][UB], after the pipeline drained
  const int H = p.H, K = G * H;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int ks = KS > 1 ? static_cast<int>(blockIdx.x) % KS : 0;  // the rank in the cluster (clusters along x)
  const int u0 = static_cast<int>(blockIdx.x) / KS * UB, b0 = blockIdx.y * MB;
  const int KC = KS > 1 ? ((K + KS - 1) / KS + 7) / 8 * 8 : K;  // this block's k slice: [kb, kb + KL)
  const int kb = ks * KC, KL = K - kb < KC ? (K - kb > 0 ? K - kb : 0) : KC;

  float acc[MT][NT][4];
  zero_acc(acc);
  if (dGn) {
    const KPipe<T, MB + UB, MB, BK, LDS, kBwdStages, NTH> pipe(stages, tid, KL, Wt, [&](int r) -> const T* {
      if (r < MB) return b0 + r < p.B ? dGn + (long long)(b0 + r) * K + kb : nullptr;
      return u0 + r - MB < H ? Wt + (long long)(u0 + r - MB) * K + kb : nullptr;
    }, rot ? static_cast<int>(blockIdx.x) / KS + static_cast<int>(blockIdx.y) : 0);
    pipe.prologue(pdl);  // before pdl_wait() only Wt (written before the first step) is read; dGn after it
    pipe.loop([&](const T* st) {
      const T* as = st + warp * BKW;
      const T* bs = as + MB * LDS;
#pragma unroll
      for (int kk = 0; kk < BKW; kk += 16) warp_k16<T, MT, NT>(acc, as + kk, LDS, bs + kk, LDS, lane);
    });
  } else if (pdl) {
    pdl_wait();
  }
  if (pdl) pdl_trigger();
  __syncthreads();  // the pipeline buffers are free: the partial tiles may overwrite them
  store_acc<MT, NT>(acc, red + warp * MB * UB, UB, 0, 0, lane);
  __syncthreads();

  // Element e = (sequence bl, unit ul), units fastest; the warps' partial sums in warp order.
  auto warp_sum = [&](int e) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < Cfg::KW; ++w) sum += red[w * MB * UB + e];
    return sum;
  };
  auto cell = [&](int e, float sum) {
    const int b = b0 + e / UB, u = u0 + e % UB;
    if (b < p.B && u < H) cell_bwd_unit<CELL>(p, b, u, p.dh_next[(long long)b * H + u] + sum);
  };
  if constexpr (KS == 1) {
    for (int e = tid; e < MB * UB; e += NTH) cell(e, warp_sum(e));
  } else {
    // Each block's sum goes to its red[0] (in place: a thread reads and writes only its own elements), the cluster
    // barrier publishes them, and block ks takes elements [ks * MB * UB / KS, (ks + 1) * MB * UB / KS), summing the
    // KS blocks' values in rank order. The second barrier keeps every block's shared memory alive until all remote
    // reads are done (arrive after reading, wait before exit: the cell work runs in between).
    constexpr int CH = MB * UB / KS, PER = (CH + NTH - 1) / NTH;
    if (dGn)
      for (int e = tid; e < MB * UB; e += NTH) red[e] = warp_sum(e);
    persist::cluster_arrive_release();
    persist::cluster_wait_acquire();
    float sum[PER];
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int e = ks * CH + i * NTH + tid;
      sum[i] = 0.f;
      if (dGn && i * NTH + tid < CH)
#pragma unroll
        for (int q = 0; q < KS; ++q) sum[i] += persist::ld_dsmem(persist::map_dsmem(red + e, q));
    }
    persist::cluster_arrive_release();
#pragma unroll
    for (int i = 0; i < PER; ++i)
      if (i * NTH + tid < CH) cell(ks * CH + i * NTH + tid, sum[i]);
    persist::cluster_wait_acquire();
  }
}

template <typename T, int CELL, typename Cfg>
void launch_bwd(const BwdStep<T, float>& p, const T* Wt, const T* dGn, bool pdl, int device, cudaStream_t st) {
  const dim3 grid((p.H + Cfg::UB - 1) / Cfg::UB * Cfg::KS, (p.B + Cfg::MB - 1) / Cfg::MB);
  {
    static std::mutex m;
    static std::vector<int> done;
    allow_smem(reinterpret_cast<const void*>(&mma_bwd_kernel<T, CELL, Cfg>), device, Cfg::smem_bytes, m, done,
               cudaSharedmemCarveoutMaxShared);
  }
  // OPENRNN_STD_MMA_BWD_CARVEOUT (developer switch, read once): a per-launch carveout (percent). Unset: none, the
  // max-shared attribute holds. MaxL1 per launch measured within noise of it on every training row (session 31,
  // run 5), so the backward keeps the attribute.
  static const int forced = env_carveout("OPENRNN_STD_MMA_BWD_CARVEOUT");
  StepLaunch how;
  how.pdl = pdl;
  how.cluster = static_cast<unsigned>(Cfg::KS);
  how.carveout = forced >= 0 ? forced : -1;
  launch_step_ex(&mma_bwd_kernel<T, CELL, Cfg>, grid, dim3(Cfg::NTH), Cfg::smem_bytes, st, how, p, Wt, dGn,
                 pdl ? 1 : 0, (mma_rot_mask() >> 1) & 1);
  OPENRNN_LAUNCH_CHECK("mma_bwd_kernel");
}

// The block shapes built, as (MB, UB, KS), and the one a problem gets: rows per block the fewest whole m16 tiles
// that hold B, at most 64 (more blocks along B beyond that); 8 units without a k split, except at B <= 16 with
// 512 < H <= 1024: 16 units, K split over a cluster of 2. Session 30, run 1 (H100, float16 training, graph replay,
// µs/step, (16, 8, 1) -> (16, 16, 2)): B = 16 H = 1024 LSTM 18.05 -> 16.99, GRU 15.53 -> 14.09; at H = 512 it is
// 5% slower for LSTM (8.92 -> 9.41), 3% faster for GRU. Wider tiles and splits measured there and not kept (each
// slower on every row it was meant for; docs/performance.md, session 30): (16, 32, 4), (64, 16, 2), (64, 32, 4),
// (64, 16, 4), (32, 32, 4). OPENRNN_STD_MMA_BWD_TILE="MB,UB,KS" (developer switch, read once) forces one of the
// built shapes everywhere; any other value is ignored.
struct BwdShape {
  int mb, ub, ks;
  size_t smem;
};
template <typename Cfg>
constexpr BwdShape bwd_shape() {
  return {Cfg::MB, Cfg::UB, Cfg::KS, Cfg::smem_bytes};
}
using BwdShapes = std::tuple<BwdTile<16, 8, 1>, BwdTile<32, 8, 1>, BwdTile<64, 8, 1>, BwdTile<16, 16, 2>>;
template <size_t... I>
inline std::vector<BwdShape> bwd_shape_list(std::index_sequence<I...>) {
  return {bwd_shape<std::tuple_element_t<I, BwdShapes>>()...};
}
inline const BwdShape* bwd_forced_shape() {
  static const BwdShape* forced = [] {
    static const std::vector<BwdShape> all = bwd_shape_list(std::make_index_sequence<std::tuple_size_v<BwdShapes>>());
    const char* v = std::getenv("OPENRNN_STD_MMA_BWD_TILE");
    int mb = 0, ub = 0, ks = 0;
    if (!v || std::sscanf(v, "%d,%d,%d", &mb, &ub, &ks) != 3) return static_cast<const BwdShape*>(nullptr);
    for (const BwdShape& s : all)
      if (s.mb == mb && s.ub == ub && s.ks == ks) return &s;
    return static_cast<const BwdShape*>(nullptr);
  }();
  return forced;
}
// clusters: the device launches thread-block clusters (compute capability >= 9.0); else no k split.
inline BwdShape bwd_shape_for(int B, int H, bool clusters) {
  const BwdShape* f = bwd_forced_shape();
  if (f && (clusters || f->ks == 1)) return *f;
  if (B <= 16) return H > 512 && clusters ? bwd_shape<BwdTile<16, 16, 2>>() : bwd_shape<BwdTile<16, 8, 1>>();
  if (B <= 32) return bwd_shape<BwdTile<32, 8, 1>>();
  return bwd_shape<BwdTile<64, 8, 1>>();
}
// The shared memory a block of that shape needs (99.8 KB at B <= 16 with 8 units, 133 KB with 16, 166 KB at B <= 32,
// 152 KB beyond): the caller keeps the CUDA-core kernel on devices that allow less per block.
inline size_t bwd_smem(int B, int H, bool clusters) { return bwd_shape_for(B, H, clusters).smem; }

template <typename T, int CELL, size_t I = 0>
void launch_bwd_shape(const BwdShape& s, const BwdStep<T, float>& p, const T* Wt, const T* dGn, bool pdl, int device,
                      cudaStream_t st) {
  if constexpr (I < std::tuple_size_v<BwdShapes>) {
    using Cfg = std::tuple_element_t<I, BwdShapes>;
    static const int kw = env_int("OPENRNN_STD_MMA_BWD_KW");
    if (s.mb == Cfg::MB && s.ub == Cfg::UB && s.ks == Cfg::KS) {
      if (kw == 8)
        launch_bwd<T, CELL, BwdTile<Cfg::MB, Cfg::UB, Cfg::KS, 8>>(p, Wt, dGn, pdl, device, st);
      else
        launch_bwd<T, CELL, Cfg>(p, Wt, dGn, pdl, device, st);
    }
    else
      launch_bwd_shape<T, CELL, I + 1>(s, p, Wt, dGn, pdl, device, st);
  }
}
template <typename T, int CELL>
void launch_bwd_cell(const BwdStep<T, float>& p, const T* Wt, const T* dGn, bool pdl, bool clusters, int device,
                     cudaStream_t st) {
  launch_bwd_shape<T, CELL>(bwd_shape_for(p.B, p.H, clusters), p, Wt, dGn, pdl, device, st);
}

}  // namespace mma

// Where the tensor-core step applies: float16 / bfloat16, LSTM without projection, GRU linear-before-reset, RNN,
// H % 8 == 0, W_hh 16-byte aligned (the caller checks the pointer).
inline bool mma_step_applies(const StdDims& d, openrnn_data_type dt) {
  return (dt == OPENRNN_DATA_HALF || dt == OPENRNN_DATA_BFLOAT16) && !d.proj && !d.gru_rb && d.H % 8 == 0;
}
// Measured rule (docs/performance.md, "16-bit tensor-core step kernel"); OPENRNN_STD_MMA=0/1 overrides it within
// mma_step_applies. It takes precedence over the CUDA-core fused kernel, which keeps B * H < 8192 at H <= 512.
// H100, float16 inference, T = 100, µs/step, previous path -> this kernel (bench/results/gpu-h100-mma-ab-*.csv):
// H <= 512 with 8192 <= B * H <= 65536: 7.9-16.6 -> 5.3-11.2 (1.0-2.6x); H = 1024 with B <= 16: 10.9-12.2 ->
// 9.0-11.3 (0.97-1.33x). It loses where the operand traffic through L2 bounds the step (every block reads its
// rows of the state and of W_hh once per step): B * H >= 131072 at H = 512 (0.80x), H = 1024 with B >= 32
// (0.56-0.91x), and H = 2048 at every B (W_hh is 32 MB; 0.5-0.8x on the H200). Below B * H = 8192 at H <= 512 the
// fused CUDA-core kernel is as fast or faster (0.90-0.99x). Measured again with the 64 x 4 pipeline (session 29,
// run 1 and 4, float16, graph replay): the rule's rows gained 5-27%; outside it the other paths stay faster (B = 64
// H = 1024 11.6-12.1 against the Hopper kernel's 9.8-11.0, B = 256 H = 512 13-15 against 8.2-9.2, B = 16 H = 2048
// 17.2-21.3 against cuBLAS + pointwise 10.3-12.5).
// The region for every cell (the whole rule until session 46; the reduced state's base).
inline bool mma_step_region(const StdDims& d) {
  const long long bh = static_cast<long long>(d.B) * d.H;
  if (d.H <= 512) return bh >= 8192 && bh <= 65536;
  return d.H <= 1024 && d.B <= 16;
}
// RNN cells (tanh / relu) also take it below B * H = 8192 from H = 64, except at H = 512 with B < 4, and at H = 256 up
// to B = 512 (session 46, run 7, H100, float16, beside cuDNN STANDARD, graph, best of two alternating processes,
// µs/step, the rule's path -> this kernel). Below B * H = 8192 (the CUDA-core fused step to B = 16, cuBLAS + pointwise
// above): H = 64-256 inference -3% to -43% (tanh H = 64 B = 64 4.39 -> 2.52), training -2% to -21%; H = 512 B = 4-8 -3%
// to -12%, but B = 1 +2% to +3.5% in both modes. Beyond B * H = 65536 (cuBLAS + pointwise): H = 256 B = 512 inference
// -6.5% / -16%, training -2% / -4%; H = 512 B = 256-512 +8% to +36%. LSTM and GRU keep the region above: the Hopper
// step (standard_wgmma.cuh) takes theirs below B * H = 8192, and the RNN cells lose on it everywhere.
// Session 47 (run 1, same method, no comparator) measured the edges: at H = 16-48 (B = 1-256) this kernel wins
// everywhere below B * H = 8192 (inference -16% to -42%, relu H = 16 B = 256 4.36 -> 2.52; training -9% to -22%); at
// H = 512 it wins from B = 3 (-4.6% inference, -2.5% training) and loses at B = 1-2 (+2% to +5%).
// LSTM and GRU at H = 1024 (B <= 16) leave the region to cuBLAS + pointwise in both modes (one forward path keeps
// inference bitwise equal to training's forward). Session 70, run 2 (H200, graph, one openrnn-bench process per row
// with openrnn timed first, so outside STANDARD's slow state; two alternating processes per side; µs/step, mma.sync ->
// cuBLAS step, cuDNN STANDARD in brackets): B = 16 inference LSTM float16 7.00 -> 6.50 (6.77), bfloat16 7.01 -> 6.47
// (6.75), GRU float16 6.63 -> 6.42 (6.53), bfloat16 6.67 -> 6.42 (6.50); training -2.7% to -4.1%; LSTM float16 B = 4
// / 8 6.62 / 6.73 -> 6.19 / 6.26. In the slow state (session 69: a process that has run 8 kernels on other streams,
// for example any cuDNN RNN call) each kernel costs ~0.35 µs more, and the cuBLAS step launches two per step against
// mma.sync's one; session 67 measured the cuBLAS step there at +0.7% to +2.8% (LSTM) and up to +8% (GRU).
// OPENRNN_STD_MMA=1 restores mma.sync. H = 513-1023 and the RNN cells keep mma.sync (not measured this way).
inline bool cublas_step_over_mma(const StdDims& d) { return (d.lstm || d.gru_lbr) && d.H == 1024; }
inline bool use_mma_step(const StdDims& d, openrnn_data_type dt) {
  if (!mma_step_applies(d, dt)) return false;
  const int o = mma_override();
  if (o >= 0) return o == 1;
  if (d.rnn && d.H <= 512) {
    const long long bh = static_cast<long long>(d.B) * d.H;
    if (bh < 8192) return d.H >= 16 && (d.H <= 256 || d.B >= 3);  // H = 8: not measured
    if (d.H == 256 && d.B <= 512) return true;
  }
  return mma_step_region(d) && !cublas_step_over_mma(d);
}
// OPENRNN_MATH_ALLOW_REDUCED_STATE (the product takes h rounded once: M = B, not 2B): the region above (without the
// RNN regions and the H = 1024 exception, both measured with the float32 state only) minus H = 512 with
// B * H > 32768, where cuBLAS + pointwise runs instead (session 34 run 8, H100, float16 inference, graph, no cuDNN in
// the process, µs/step mma -> cuBLAS: B = 128 LSTM 7.36 -> 6.45, GRU 7.15 -> 6.45; B = 256 LSTM 11.81 -> 8.42, GRU
// 11.27 -> 7.41). The Hopper step is not taken in this mode unless forced (standard_forward.cu): it never
// won there (H = 512 B = 256 LSTM 12.24, H = 1024 B = 128 15.56 against cuBLAS's 8.42 and 9.98). Session 35 ran the
// narrower bound of run 8 (mma only up to B * H = 32768 at every H): beside cuDNN it lost H = 256 B = 256 (GRU 5.90
// -> 6.64, LSTM 6.03 -> 6.79) and GRU H = 1024 B = 16 (6.08 -> 6.72) to cuBLAS, so H = 256 and H = 1024 keep the rule
// above (docs/performance.md, session 35).
inline bool use_mma_step_reduced(const StdDims& d, openrnn_data_type dt) {
  if (!mma_step_applies(d, dt)) return false;
  const int o = mma_override();
  if (o >= 0) return o == 1;
  if (!mma_step_region(d)) return false;
  const long long bh = static_cast<long long>(d.B) * d.H;
  return !(d.H > 256 && d.H <= 512 && bh > 32768);
}

// One step on the tensor-core kernel (T = __half or __nv_bfloat16); pdl, sms: as mma::launch (pdl: the previous
// kernel on st is this layer and direction's previous step).
template <typename T>
void mma_forward_step(const StdDims& d, const FwdStep<T, float>& p, const T* W, int terms, bool pdl, int device,
                      int sms, cudaStream_t st) {
  if (d.lstm)
    mma::launch_cell<T, 0>(p, W, terms, pdl, device, sms, st);
  else if (d.gru_lbr)
    mma::launch_cell<T, 1>(p, W, terms, pdl, device, sms, st);
  else
    mma::launch_cell<T, 2>(p, W, terms, pdl, device, sms, st);
}

// OPENRNN_STD_MMA_BWD (developer switch, read once): "0" never use the tensor-core backward step kernel, "1" use it
// wherever it applies, unset/other: the rule of use_mma_bwd().
inline int mma_bwd_override() {
  static const int v = env_switch01("OPENRNN_STD_MMA_BWD");
  return v;
}
// Where the tensor-core backward step applies: as the forward's (mma_step_applies). The caller also needs dGn and
// W_hh^T 16-byte aligned. Measured rule (session 29, run 12, H100, float16 training, graph replay, µs/step, against
// the previous path: the CUDA-core fused kernel at B <= 16 with H <= 512, else cuBLAS GEMM + pointwise): it wins at
// B = 16 (H = 256 14.1 -> 8.4 LSTM, 12.5 -> 7.8 GRU; H = 512 19.2 -> 8.8, 16.5 -> 9.4; H = 1024 19.0 -> 18.0,
// 17.0 -> 15.5) and at B = 64 H = 256 (11.2 -> 11.0, 10.1 -> 9.3). It loses where its one n8 column of units per
// block reads dG once per 8 units: B = 64 at H = 512 (15.8 -> 17.0) and H = 1024 (25.8 -> 34.4), B = 256 (1.1-2.4x
// slower), B = 16 H = 2048 (29.9 -> 46.0).
// Session 46 (run 9, H100, float16 training, graph, no comparator, best of two alternating processes, µs/step, the
// rule's path (cuBLAS GEMM + pointwise there) -> this kernel) widened it where it won:
// - H = 64 / 128 at B = 128 / 256: -1% to -11% (RNN tanh H = 64 B = 128 6.54 -> 5.85; LSTM H = 128 -1.1% / +0.7%,
//   even);
// - RNN cells at H = 256, B = 128 / 256: -6.1% / -1.7%;
// - H = 384 / 512 at B = 32: -3% to -16% (LSTM H = 384 11.58 -> 9.99); RNN cells there also at B = 64: -9%.
// It still loses at H = 384 / 512 from B = 64 for LSTM / GRU (+1% to +9%), from B = 128 for RNN cells (+3% to +4%),
// and at B = 256 for LSTM / GRU at H = 256 (+9% to +16%).
// Session 47 (run 1, same method) measured the rest of its edges:
// - H = 16-48 at B = 96-512 (the old bound was B = 64): -2% to -12% for LSTM, GRU and RNN tanh; H = 64 at B = 384 /
//   512: -1% to -11% (LSTM -2.6% / -1.0%, RNN tanh -11% / -8.5%). H = 8 keeps B <= 64 (not measured).
// - H = 128 at B = 384 / 512: RNN tanh -4.1% / -2.3%, LSTM and GRU +2.4% to +6.6%.
// - H = 640 / 768 / 1024 at B = 20-32: B = 20 -2.7% to -5.2% everywhere; B = 24 -1.6% to -1.9% at H = 640 / 768,
//   +0.3% / +3.8% at H = 1024 (GRU / LSTM); B = 32 +3.5% to +13%.
inline bool use_mma_bwd(const StdDims& d, openrnn_data_type dt) {
  if (!mma_step_applies(d, dt)) return false;
  const int o = mma_bwd_override();
  if (o >= 0) return o == 1;
  if (d.H >= 16 && d.H <= 64) return d.B <= 512;  // larger B not measured
  if (d.H > 64 && (d.H <= 128 || (d.rnn && d.H <= 256))) return d.B <= (d.rnn && d.H <= 128 ? 512 : 256);
  if (d.H <= 256) return d.B <= 64;
  if (d.H <= 512) return d.B <= (d.rnn ? 64 : 32);
  if (d.H <= 768) return d.B <= 24;
  return d.B <= 20 && d.H <= 1024;
}

// One backward step on the tensor-core kernel; pdl: as mma_forward_step; clusters: as mma::bwd_shape_for.
template <typename T>
void mma_backward_step(const StdDims& d, const BwdStep<T, float>& p, const T* Wt, const T* dGn, bool pdl,
                       bool clusters, int device, cudaStream_t st) {
  if (d.lstm)
    mma::launch_bwd_cell<T, 0>(p, Wt, dGn, pdl, clusters, device, st);
  else if (d.gru_lbr)
    mma::launch_bwd_cell<T, 1>(p, Wt, dGn, pdl, clusters, device, st);
  else
    mma::launch_bwd_cell<T, 2>(p, Wt, dGn, pdl, clusters, device, st);
}

}  // namespace cuda
}  // namespace openrnn
