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
// 4-stage cp.async pipeline (Pipe, StepPipe; rows padded to 72 halves: the 8 rows an ldmatrix phase reads fall in
// distinct bank groups). After the loop the accumulators go to shared memory as float32 [MB][NB + 8] (reusing the
// pipeline buffers), and each thread runs the cell (lstm_unit / gru_unit / rnn_unit, the code of the GEMM +
// pointwise path) on one (sequence, unit) with gh(j) = row hi + row lo of that column: same float operations in the
// same order as the pointwise kernels, only the product's own summation order differs from cuBLAS's.
// Padding: rows past M, units past H and k past K are zero-filled by cp.async (src-size 0), so they add 0.
// Requirements: H % 8 == 0 (16-byte k chunks; mma_step_applies), W_hh and the first state slot 16-byte aligned
// (FwdRun checks both pointers in standard_forward.cu; every slot is then aligned, a slot being B * 2H elements).
// Deterministic: fixed summation order, no atomics.
#pragma once

#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

#include "mma_sync.cuh"
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

namespace mma {

// The k pipeline: BK columns of k per stage (BK / 16 m16n8k16 steps per warp), ST stages in shared memory, ST - 1 of
// them in flight while one is multiplied. Rows are padded by 8 halves (BK + 8: a row stride of 16 bytes mod 128, so
// the 8 rows an ldmatrix phase reads fall in distinct bank groups). Any BK gives the same k order of the mma steps,
// so the same bits.
template <int BK_, int ST_>
struct Pipe {
  static constexpr int BK = BK_, ST = ST_, LDS = BK_ + 8;
  static_assert(BK % 16 == 0 && ST >= 2, "pipeline: whole k16 steps, two stages at least");
};
// The step kernel's pipeline: 4 stages of 64. Session 29, run 1 (H100, float16, graph replay, µs/step) measured
// 32 x 4 (the first form), 64 x 4, 64 x 8, 128 x 4 and 64 x 6 on every tile the rule picks: 64 x 4 was the fastest
// or within 2% on all rows (LSTM B = 16 H = 1024 8.78 -> 6.51, B = 64 H = 512 6.24 -> 5.28); the deeper ones lost
// again what the fewer iterations won (docs/performance.md, session 29).
using StepPipe = Pipe<64, 4>;

template <int CELL>  // 0 LSTM, 1 GRU linear-before-reset, 2 RNN
struct Gates {
  static constexpr int value = CELL == 0 ? 4 : (CELL == 1 ? 3 : 1);
};

// Block shape: MB rows of A, UB units, WM warps along M (G along N); PP its k pipeline.
template <int CELL, int MB, int UB, typename PP>
struct Tile {
  static constexpr int G = Gates<CELL>::value;
  static constexpr int WM = G == 1 ? MB / 16 : 2;
  static constexpr int NWARP = WM * G;
  static constexpr int NTHREADS = NWARP * 32;
  static constexpr int NB = G * UB;
  static constexpr int TM = MB / WM;  // warp tile rows
  static constexpr int MT = TM / 16;  // m16 tiles per warp
  static constexpr int NT = UB / 8;   // n8 tiles per warp
  static constexpr int CLD = NB + 8;  // epilogue row stride (floats)
  static_assert(TM % 16 == 0 && UB % 8 == 0, "warp tile: whole m16 and n8 tiles");
  static constexpr int kBK = PP::BK, kStages = PP::ST, kLds = PP::LDS;
  static constexpr size_t pipe_bytes = size_t(kStages) * (MB + NB) * kLds * 2;
  static constexpr size_t epi_bytes = size_t(MB) * CLD * 4;
  static constexpr size_t smem_bytes = pipe_bytes > epi_bytes ? pipe_bytes : epi_bytes;
};

// p: the step (FwdStep as for the pointwise kernels; gh unused). W = W_hh [G*H, K]; K = H. terms: 2 (hi and lo
// rows) or 1 (hi only). M = B * terms. pdl: 1 where launched as a programmatic dependent of the previous step.
template <typename T, int CELL, int MB, int UB, typename PP>
__global__ void __launch_bounds__(Tile<CELL, MB, UB, PP>::NTHREADS)
    mma_fwd_kernel(const FwdStep<T, float> p, const T* __restrict__ W, int terms, int pdl) {
  using Cfg = Tile<CELL, MB, UB, PP>;
  constexpr int G = Cfg::G, NB = Cfg::NB, NTH = Cfg::NTHREADS, MT = Cfg::MT, NT = Cfg::NT, TM = Cfg::TM;
  constexpr int kBK = Cfg::kBK, kStages = Cfg::kStages, kLds = Cfg::kLds;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* stages = reinterpret_cast<T*>(smem_raw);      // [kStages][MB + NB][kLds]: A rows, then W rows
  float* Cs = reinterpret_cast<float*>(smem_raw);  // epilogue [MB][CLD], after the pipeline drained
  constexpr int kStageElems = (MB + NB) * kLds;

  const int H = p.H, K = p.Hout, M = p.B * terms;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp % Cfg::WM, wg = warp / Cfg::WM;
  const int u0 = blockIdx.x * UB, m0 = blockIdx.y * MB;

  // This thread's 16-byte chunks of a stage, fixed for the whole k loop (only k0 moves): chunk c is row r of the
  // stage (A row m0 + r, or W row g*H + u of tile column r - MB) at k offset kc. src: the row's element kc; lim:
  // the chunk is inside K while k0 < lim (0 for a padding row or a chunk past the table). Precomputed so that the
  // loop issues one add and one cp.async per chunk.
  constexpr int CH = kBK / 8;
  constexpr int NCH = (MB + NB) * CH;
  constexpr int CPT = (NCH + NTH - 1) / NTH;
  const T* csrc[CPT];
  int coff[CPT], clim[CPT];
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int i = tid + c * NTH;
    const int r = i / CH, kc = (i % CH) * 8;
    const T* row = nullptr;
    if (i < NCH) {
      if (r < MB) {
        const int m = m0 + r;  // split state: slot row m / terms (stride 2K), term m % terms (offset K)
        if (m < M) row = p.hin + (long long)(m / terms) * (2 * K) + (m % terms) * K;
      } else {
        const int n = r - MB, g = n / UB, u = u0 + n % UB;
        if (u < H) row = W + (long long)(g * H + u) * K;
      }
    }
    csrc[c] = row ? row + kc : W;
    coff[c] = r * kLds + kc;
    clim[c] = row ? K - kc : 0;
  }
  // parts: 1 the A (state) chunks, 2 the W chunks, 3 both.
  auto load_stage = [&](int s, int k0, int parts) {
    T* st = stages + s * kStageElems;
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int i = tid + c * NTH;
      if (i < NCH && (parts & (i / CH < MB ? 1 : 2))) {
        const bool ok = k0 < clim[c];
        cp_async16_zfill(st + coff[c], ok ? csrc[c] + k0 : W, ok ? 16 : 0);
      }
    }
  };

  // Programmatic dependent launch (pdl = 1: launch() made this block a dependent of the previous step): it may have
  // started while the previous step's grid still runs. Before pdl_wait() it reads only W_hh (never written by a
  // forward call): the first stages' W chunks; their A chunks (the state the previous step writes) follow it, in the
  // first stage's commit group. Without pdl, each stage's chunks go out together.
  const int KT = (K + kBK - 1) / kBK;
  if (pdl) {
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s)
      if (s < KT) load_stage(s, s * kBK, 2);
    pdl_wait();
  }
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < KT) load_stage(s, s * kBK, pdl ? 1 : 3);
    cp_async_commit();
  }

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

  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<kStages - 2>();  // slice kt has landed (this thread's copies) ...
    __syncthreads();               // ... and everyone's; slice kt-1's stage is free again
    {
      const int nk = kt + kStages - 1;
      if (nk < KT) load_stage(nk % kStages, nk * kBK, 3);
      cp_async_commit();
    }
    const T* as = stages + (kt % kStages) * kStageElems + (wm * TM) * kLds;
    const T* bs = stages + (kt % kStages) * kStageElems + (MB + wg * UB) * kLds;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) warp_k16<T, MT, NT>(acc, as + kk, kLds, bs + kk, kLds, lane);
  }
  cp_async_wait_all();
  // The next step's blocks may start now, while this one runs its cell. Not at the kernel's start: several blocks of
  // this kernel fit on an SM, so an early trigger lets the steps after it start and wait too, a chain of waiting grids
  // piled onto whatever SMs have room (session 27, run 2, float16 inference, against no dependent launch: triggered at
  // the start 0.85-1.9x the time, here 0.78-1.03x).
  if (pdl) pdl_trigger();
  __syncthreads();  // every warp is done with the pipeline buffers: Cs may overwrite them

  store_acc<MT, NT>(acc, Cs, Cfg::CLD, wm * TM, wg * UB, lane);
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
    if constexpr (CELL == 0)
      lstm_unit(p, b, u, gh);
    else if constexpr (CELL == 1)
      gru_unit(p, b, u, gh);
    else
      rnn_unit(p, b, u, gh);
  }
  (void)G;
}

// pdl: a programmatic dependent of the previous kernel on st (that kernel must be this layer and direction's previous
// step: the kernel reads W_hh before pdl_wait()).
template <typename T, int CELL, int MB, int UB, typename PP>
void launch(const FwdStep<T, float>& p, const T* W, int terms, bool pdl, int device, cudaStream_t st) {
  using Cfg = Tile<CELL, MB, UB, PP>;
  const dim3 grid((p.H + UB - 1) / UB, (p.B * terms + MB - 1) / MB);
  {
    static std::mutex m;
    static std::vector<int> done;
    allow_smem(reinterpret_cast<const void*>(&mma_fwd_kernel<T, CELL, MB, UB, PP>), device, Cfg::smem_bytes, m,
               done, true);
  }
  launch_step(&mma_fwd_kernel<T, CELL, MB, UB, PP>, grid, dim3(Cfg::NTHREADS), Cfg::smem_bytes, st, pdl, p, W, terms,
              pdl ? 1 : 0);
  OPENRNN_LAUNCH_CHECK("mma_fwd_kernel");
}

// Block shape for this problem: the largest of (128 rows, 32 units), (64, 16), (32, 16), (32, 8) that gives at least
// ~3/4 of a wave of blocks on an H100 (132 SMs), else the smallest (most blocks). Large tiles read each operand
// fewer times (L2 traffic ~ K * (M * N / NB + N * M / MB)); small ones keep the SMs busy when M is small.
template <typename T, int CELL>
void launch_cell(const FwdStep<T, float>& p, const T* W, int terms, bool pdl, int device, cudaStream_t st) {
  const long long M = static_cast<long long>(p.B) * terms;
  auto blocks = [&](int MB, int UB) { return ((M + MB - 1) / MB) * ((p.H + UB - 1) / UB); };
  if (blocks(128, 32) >= 100)
    launch<T, CELL, 128, 32, StepPipe>(p, W, terms, pdl, device, st);
  else if (blocks(64, 16) >= 100)
    launch<T, CELL, 64, 16, StepPipe>(p, W, terms, pdl, device, st);
  else if (blocks(32, 16) >= 100)
    launch<T, CELL, 32, 16, StepPipe>(p, W, terms, pdl, device, st);
  else
    launch<T, CELL, 32, 8, StepPipe>(p, W, terms, pdl, device, st);
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
inline bool use_mma_step(const StdDims& d, openrnn_data_type dt) {
  if (!mma_step_applies(d, dt)) return false;
  const int o = mma_override();
  if (o >= 0) return o == 1;
  const long long bh = static_cast<long long>(d.B) * d.H;
  if (d.H <= 512) return bh >= 8192 && bh <= 65536;
  return d.H <= 1024 && d.B <= 16;
}

// One step on the tensor-core kernel (T = __half or __nv_bfloat16); pdl: as mma::launch (the previous kernel on st is
// this layer and direction's previous step).
template <typename T>
void mma_forward_step(const StdDims& d, const FwdStep<T, float>& p, const T* W, int terms, bool pdl, int device,
                      cudaStream_t st) {
  if (d.lstm)
    mma::launch_cell<T, 0>(p, W, terms, pdl, device, st);
  else if (d.gru_lbr)
    mma::launch_cell<T, 1>(p, W, terms, pdl, device, st);
  else
    mma::launch_cell<T, 2>(p, W, terms, pdl, device, st);
}

}  // namespace cuda
}  // namespace openrnn
