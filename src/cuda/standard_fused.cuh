// STANDARD algorithm, fused recurrent step kernels: one launch per step computes this step's recurrent product for
// a tile of units and runs the cell's pointwise on it (LSTM without projection, GRU linear-before-reset, RNN; float32
// arithmetic, float32/float16/bfloat16 storage). They replace cuBLAS GEMM + pointwise kernel per step: one launch
// instead of two, no [B, G*H] round trip, and only two dependent global-memory round trips per step (the h tile into
// shared memory, the weight rows into registers), which is what a small-batch step costs.
// Deterministic: fixed butterfly reductions, no atomics.
//
// Tiling. A block owns R <= 16 weight rows and kFusedBT sequences; its 8 warps take two rows each. A lane holds
// float4 pieces of its two rows (k = kc + 128 i + 4 lane) in registers and multiplies them with the float32 tile of
// the right operand staged in shared memory ([kFusedBT][Kp], read as float4, conflict-free), then each (row,
// sequence) sum is reduced across the warp by shuffles. Forward: rows = the G gates of U = 16/G units, K = Hout,
// right operand = h_in. Backward: rows = 16 units of W_hh^T (a transposed copy made once per call), K = G*H, right
// operand = the previous step's recurrent-side pre-activation gradient.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

#include "standard_kernels.cuh"
#include "standard_plan.h"

namespace openrnn {
namespace cuda {

// OPENRNN_STD_FUSED (developer switch, read once): "0" never use the fused step kernels, "1" use them wherever they
// apply, unset/other: the rule of use_fused().
inline int fused_override() {
  static const int v = env_switch01("OPENRNN_STD_FUSED");
  return v;
}

constexpr int kFusedThreads = 256;
constexpr int kFusedBT = 8;        // sequences per block
constexpr int kFusedRows = 16;     // weight rows per block (8 warps x 2)
constexpr int kFusedMaxSmem = 200 * 1024;

// Units per block for G gates: G * units <= 16.
__host__ __device__ constexpr int fused_units(int G) { return G == 4 ? 4 : (G == 3 ? 5 : 16); }
inline int fused_kp(int K) { return (K + 3) & ~3; }
inline size_t fused_smem(int K) { return static_cast<size_t>(kFusedBT) * fused_kp(K) * sizeof(float); }

// 4 consecutive elements w[k..k+3] as float (0 past K or for a null row). VEC: K % 4 == 0 and the rows are aligned
// to 4 elements, so one 16-byte (float32) or 8-byte (16-bit types) load.
template <typename T, bool VEC>
__device__ __forceinline__ float4 load4(const T* w, int k, int K) {
  if (!w || k >= K) return make_float4(0.f, 0.f, 0.f, 0.f);
  if constexpr (VEC) {
    if constexpr (sizeof(T) == 4) {
      return *reinterpret_cast<const float4*>(w + k);
    } else {
      const uint2 raw = *reinterpret_cast<const uint2*>(w + k);
      const T* e = reinterpret_cast<const T*>(&raw);
      return make_float4(to_f(e[0]), to_f(e[1]), to_f(e[2]), to_f(e[3]));
    }
  } else {
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = k + i < K ? static_cast<float>(to_f(w[k + i])) : 0.f;
    return make_float4(v[0], v[1], v[2], v[3]);
  }
}

__device__ __forceinline__ float dot4(float4 a, float4 b) {
  return fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, a.w * b.w)));
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// gsum[r * kFusedBT + j] = sum_k row(r)[k] * hsm[j * Kp + k] for r < 16 (row(r) null: 0), j < kFusedBT.
template <typename T, bool VEC, typename RowFn>
__device__ __forceinline__ void tile_gemv(RowFn row, int K, const float* hsm, int Kp, float* gsum) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const T* w0 = row(warp);
  const T* w1 = row(warp + 8);
  float a0[kFusedBT], a1[kFusedBT];
#pragma unroll
  for (int j = 0; j < kFusedBT; ++j) a0[j] = a1[j] = 0.f;
  for (int kc = 0; kc < K; kc += 512) {
    float4 x[4], y[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = kc + i * 128 + lane * 4;
      x[i] = load4<T, VEC>(w0, k, K);
      y[i] = load4<T, VEC>(w1, k, K);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = kc + i * 128 + lane * 4;
      if (k < K) {
#pragma unroll
        for (int j = 0; j < kFusedBT; ++j) {
          const float4 h = *reinterpret_cast<const float4*>(hsm + j * Kp + k);
          a0[j] += dot4(x[i], h);
          a1[j] += dot4(y[i], h);
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kFusedBT; ++j) {
    const float s0 = warp_sum(a0[j]), s1 = warp_sum(a1[j]);
    if (lane == 0) {
      gsum[warp * kFusedBT + j] = s0;
      gsum[(warp + 8) * kFusedBT + j] = s1;
    }
  }
}

// Stages h_in of sequences b0 .. b0 + BT - 1 as float32 [BT][Kp] in shared memory (zeros past K and past B; split
// states summed by h_prev): one element per sequence per round, the BT loads of a round in flight together (session
// 32; a loop over flat indices had run four at a time, each round an L2 round trip). nthreads: the block's threads.
template <int BT, typename T>
__device__ __forceinline__ void stage_h(const FwdStep<T, float>& p, float* hsm, int b0, int K, int Kp, int nthreads) {
  for (int k = threadIdx.x; k < Kp; k += nthreads) {
    float v[BT];
#pragma unroll
    for (int j = 0; j < BT; ++j) v[j] = (k < K && b0 + j < p.B) ? p.h_prev(b0 + j, k) : 0.f;
#pragma unroll
    for (int j = 0; j < BT; ++j) hsm[j * Kp + k] = v[j];
  }
}

template <typename T, int CELL, bool VEC>  // CELL: 0 LSTM, 1 GRU linear-before-reset, 2 RNN
__global__ void __launch_bounds__(kFusedThreads) fused_fwd_kernel(const FwdStep<T, float> p, const T* __restrict__ W) {
  constexpr int G = CELL == 0 ? 4 : (CELL == 1 ? 3 : 1);
  constexpr int U = fused_units(G);
  extern __shared__ __align__(16) float hsm[];  // [kFusedBT][Kp]: h_in of this block's sequences, float32
  __shared__ float gsum[kFusedRows * kFusedBT];
  const int H = p.H, K = p.Hout, Kp = (K + 3) & ~3;
  const int u0 = blockIdx.x * U, b0 = blockIdx.y * kFusedBT;
  stage_h<kFusedBT>(p, hsm, b0, K, Kp, kFusedThreads);
  __syncthreads();
  tile_gemv<T, VEC>(
      [&](int r) -> const T* {
        const int g = r / U, u = u0 + r % U;
        return (r < G * U && u < H) ? W + (long long)(g * H + u) * K : nullptr;
      },
      K, hsm, Kp, gsum);
  __syncthreads();
  const int tid = threadIdx.x;
  if (tid < U * kFusedBT) {
    const int uu = tid / kFusedBT, j = tid % kFusedBT;
    const int u = u0 + uu, b = b0 + j;
    if (u < H && b < p.B) {
      auto gh = [&](int r) { return gsum[((r / H) * U + uu) * kFusedBT + j]; };
      cell_unit<CELL>(p, b, u, gh);
    }
  }
}

// ---- wide forward step (session 32) ---------------------------------------------------------------------------
// The same product and cell as fused_fwd_kernel, tiled for K (= Hout) of 256-3200, 16 sequences per tile: a block owns
// NW units (one warp per unit: its G gate rows) and kWideBT = 16 sequences, so that W_hh is read once per step for up
// to 16 sequences (fused_fwd_kernel's 8-sequence tiles read it twice at B = 16: 128 MB per step from HBM at H = 2048).
// The h tile [16][Kp] float32 is staged with all of a thread's loads in flight (fused_fwd_kernel's staging loop ran
// four loads at a time, each waiting on L2). A lane holds two float4 pieces of each of its G rows per k block of 256
// (k = kc + 128 i + 4 lane) and accumulates G x 16 (row, sequence) partial sums by FMA; the warp then reduces them by
// a butterfly reduce-scatter (62 shuffles for 64 sums instead of 320) and puts the sums in shared memory; after a
// block barrier the block's threads run the cell on (sequence, unit) pairs, units fastest, with its inputs
// (CellInputs) and the first k block of W loaded before the staging. Deterministic: fixed summation order, no atomics.
constexpr int kWideBT = 16;
__host__ __device__ constexpr int wide_np(int G) { return G == 1 ? 16 : 64; }  // G x 16 sums padded to a power of 2
inline size_t wide_smem(int K) { return static_cast<size_t>(kWideBT) * fused_kp(K) * sizeof(float); }

// Sums v[NP] (NP a power of two, 16..64) across the warp. After it, lane l holds in v[i] (i < max(NP / 32, 1)) the
// warp total of index i + max(NP / 32, 1) * (l >> s), s = 5 - min(5, log2 NP), reduced in a fixed order.
template <int NP, int L = 0>
__device__ __forceinline__ void warp_reduce_scatter(float (&v)[NP], int lane) {
  if constexpr (L < 5) {
    constexpr int o = 16 >> L, n = NP >> L;
    if constexpr (n >= 2) {
      const bool up = (lane & o) != 0;
#pragma unroll
      for (int i = 0; i < n / 2; ++i) {
        const float send = up ? v[i] : v[i + n / 2];
        const float keep = up ? v[i + n / 2] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
      }
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
    }
    warp_reduce_scatter<NP, L + 1>(v, lane);
  }
}

template <typename T, int CELL, bool VEC, int NW>  // CELL: 0 LSTM, 1 GRU linear-before-reset, 2 RNN
__global__ void __launch_bounds__(NW * 32) fused_fwd_wide_kernel(const FwdStep<T, float> p, const T* __restrict__ W,
                                                                 bool hvec) {
  constexpr int G = CELL == 0 ? 4 : (CELL == 1 ? 3 : 1);
  constexpr int NP = wide_np(G), NT = NW * 32;
  extern __shared__ __align__(16) float hsm[];  // [kWideBT][Kp]: h_in of this block's sequences, float32
  __shared__ float gsum[NW][NP + 1];  // + 1: the cell reads a column (one unit per thread) without bank conflicts
  const int H = p.H, K = p.Hout, Kp = (K + 3) & ~3;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // Sequence tiles fastest: the blocks that read the same W_hh rows run together, so that at B > 16 the rows come
  // from HBM once and from L2 for the other tiles.
  const int u = blockIdx.y * NW + warp, b0 = blockIdx.x * kWideBT;
  const T* wr[G];
#pragma unroll
  for (int g = 0; g < G; ++g) wr[g] = W + (long long)(g * H + (u < H ? u : 0)) * K;
  // Before the staging (neither depends on it): the cell's inputs of this thread's (sequence, unit) pair and the
  // first k block of the warp's weight rows, so that their round trips overlap the staging's. The cell runs on
  // (sequence cj, unit cu) pairs with units fastest across the block's threads, so that its loads and stores (x W_ih
  // rows, c, h, y, acts: unit-contiguous) coalesce over NW units. (Lanes < 16 of each warp taking its unit's 16
  // sequences, H elements apart, was 2-17% slower: session 32, run 12.)
  const int cu = threadIdx.x % NW, cj = threadIdx.x / NW;
  const int ucell = blockIdx.y * NW + cu;
  const bool cell_lane = ucell < H && cj < kWideBT && b0 + cj < p.B;
  CellInputs<CELL> in;
  in.load(p, b0 + cj, ucell, cell_lane);
  float4 w[G][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int g = 0; g < G; ++g) w[g][i] = load4<T, VEC>(u < H ? wr[g] : nullptr, i * 128 + lane * 4, K);
  // Stage h: hvec (float32 states, Hout % 4 == 0, 16-byte aligned rows): one float4 per sequence per thread per
  // round, all 16 in flight; else one element per sequence (split states are summed by h_prev).
  if (hvec) {
    for (int c = threadIdx.x; c < Kp / 4; c += NT) {
      float4 v[kWideBT];
#pragma unroll
      for (int j = 0; j < kWideBT; ++j)
        v[j] = b0 + j < p.B ? *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(p.hin) + p.hrow(b0 + j) +
                                                               4 * c)
                            : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int j = 0; j < kWideBT; ++j) *reinterpret_cast<float4*>(hsm + j * Kp + 4 * c) = v[j];
    }
  } else {
    stage_h<kWideBT>(p, hsm, b0, K, Kp, NT);
  }
  __syncthreads();
  if (u < H) {  // whole warps; the block barrier below is reached by all
    float acc[NP];
#pragma unroll
    for (int i = 0; i < NP; ++i) acc[i] = 0.f;
    for (int kc = 0; kc < K; kc += 256) {
      if (kc > 0) {
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int g = 0; g < G; ++g) w[g][i] = load4<T, VEC>(wr[g], kc + i * 128 + lane * 4, K);
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int k = kc + i * 128 + lane * 4;
        if (k < K) {
#pragma unroll
          for (int j = 0; j < kWideBT; ++j) {
            const float4 h = *reinterpret_cast<const float4*>(hsm + j * Kp + k);
#pragma unroll
            for (int g = 0; g < G; ++g) {
              float& a = acc[g * kWideBT + j];
              a = fmaf(w[g][i].x, h.x, a);
              a = fmaf(w[g][i].y, h.y, a);
              a = fmaf(w[g][i].z, h.z, a);
              a = fmaf(w[g][i].w, h.w, a);
            }
          }
        }
      }
    }
    warp_reduce_scatter<NP>(acc, lane);
    constexpr int NF = NP >= 32 ? NP / 32 : 1;
    constexpr int SH = NP >= 32 ? 0 : (NP == 16 ? 1 : 2);
#pragma unroll
    for (int i = 0; i < NF; ++i) {
      const int idx = i + NF * (lane >> SH);
      if (idx < G * kWideBT) gsum[warp][idx] = acc[i];
    }
  }
  __syncthreads();
  if (cell_lane) in.run(p, b0 + cj, ucell, [&](int r) { return gsum[cu][(r / H) * kWideBT + cj]; });
}

// Backward step. For this block's 16 units u and kFusedBT sequences b it first forms the gradient w.r.t. the state
// after step t,  dh_next[b][u] = E[b][u] + sum_j dGn[b][j] W_hh[j][u]  (E: the carried part the previous kernel wrote
// into p.dh_next; dGn: the recurrent-side pre-activation gradient of the previously processed step, null on the
// first processed step; Wt = W_hh^T [H, G*H]), then runs the cell's backward on it, writing dG of step t and the new
// carried part p.dh_prev. The caller adds dG W_hh of the last processed step after the loop (one GEMM) for dhx.
template <typename T, int CELL, bool VEC>  // CELL: 0 LSTM (no projection), 1 GRU linear-before-reset, 2 RNN
__global__ void __launch_bounds__(kFusedThreads) fused_bwd_kernel(const BwdStep<T, float> p, const T* __restrict__ Wt,
                                                                  const T* __restrict__ dGn, bool dvec) {
  constexpr int G = CELL == 0 ? 4 : (CELL == 1 ? 3 : 1);
  extern __shared__ __align__(16) float hsm[];  // [kFusedBT][Kp]: dGn rows of this block's sequences
  __shared__ float gsum[kFusedRows * kFusedBT];
  const int H = p.H, K = G * H, Kp = (K + 3) & ~3;
  const int u0 = blockIdx.x * kFusedRows, b0 = blockIdx.y * kFusedBT;
  if (dGn) {
    // Staging: 4 consecutive elements per sequence per round (load4: one vector load where VEC), the kFusedBT
    // loads in flight together (session 32; the loop over flat indices ran four scalar loads at a time, and at
    // K = G*H = 4096 each thread waited through 32 such rounds).
    for (int k = 4 * threadIdx.x; k < Kp; k += 4 * kFusedThreads) {
      float4 v[kFusedBT];
#pragma unroll
      for (int j = 0; j < kFusedBT; ++j) {
        const T* row = b0 + j < p.B ? dGn + (long long)(b0 + j) * K : nullptr;
        v[j] = dvec ? load4<T, VEC>(row, k, K) : load4<T, false>(row, k, K);
      }
#pragma unroll
      for (int j = 0; j < kFusedBT; ++j) *reinterpret_cast<float4*>(hsm + j * Kp + k) = v[j];
    }
    __syncthreads();
    tile_gemv<T, VEC>([&](int r) -> const T* { return u0 + r < H ? Wt + (long long)(u0 + r) * K : nullptr; }, K,
                      hsm, Kp, gsum);
  } else {
    for (int e = threadIdx.x; e < kFusedRows * kFusedBT; e += kFusedThreads) gsum[e] = 0.f;
  }
  __syncthreads();
  const int tid = threadIdx.x;
  if (tid < kFusedRows * kFusedBT) {
    const int uu = tid / kFusedBT, j = tid % kFusedBT;
    const int u = u0 + uu, b = b0 + j;
    if (u < H && b < p.B) {
      const float dhn = p.dh_next[(long long)b * H + u] + gsum[uu * kFusedBT + j];
      cell_bwd_unit<CELL>(p, b, u, dhn);
    }
  }
}

// ---- host side -------------------------------------------------------------------------------------------------

// OPENRNN_STD_FUSED_WIDE (developer switch, read once): "0" never use fused_fwd_wide_kernel, "1" wherever the fused
// forward step runs and its h tile fits (any type; for float32 it also replaces the 8-sequence step's table of where
// the forward fuses by the wide step's, fused_fwd_rule), unset/other: the rule of use_wide_fwd().
inline int wide_override() {
  static const int v = env_switch01("OPENRNN_STD_FUSED_WIDE");
  return v;
}
inline bool use_wide_fwd(const StdDims& d, openrnn_data_type dt) {
  if (wide_smem(d.Hout) > kFusedMaxSmem) return false;
  const int o = wide_override();
  if (o >= 0) return o == 1;
  // Session 32 run 3 (H100, graph, µs/step, fused forced, 8-sequence step -> wide step): H = 256 inference B = 4
  // LSTM 4.18 -> 3.84, B = 16 5.02 -> 4.75, B = 64 11.17 -> 6.94 (GRU 8.92 -> 5.93); training B = 64 LSTM 24.69 ->
  // 22.14, B = 16 15.18 -> 15.25; H = 1024 / 2048 at B = 1-8 inference 10-28% faster. float32 only: 16-bit types
  // take it only through the switch (tested so; never timed).
  return dt == OPENRNN_DATA_FLOAT && d.B >= 2 && d.Hout >= 256;
}

// Where the fused kernels apply: LSTM without projection, GRU linear-before-reset, RNN, float32 arithmetic (float64
// problems keep cuBLAS), the staged operand within kFusedMaxSmem. Where they win (measured, docs/performance.md):
// small batches, where a step is launch- and latency-bound; cuBLAS (tensor cores for float16/bfloat16) wins on large
// B*H. OPENRNN_STD_FUSED=0/1 overrides the rule (within the applicability limits).
// Measured on an H200 (2026-11-21, T=100, one layer, LSTM and GRU, against cuBLAS GEMM + pointwise in the same run):
// float32 B=16: fused 8.8 vs 11.4 us/step (H=512), 23.7 vs 27.9 (H=1024), training 27.7 vs 30.3 / 59.6 vs 64.0;
// float32 B=64: fused loses (25.1 vs 20.6, 75 vs 44). float16/bfloat16 B=16 H=512: 8.4 vs 12.9 (training 24.3 vs
// 25.8); H=1024 or B=64: cuBLAS on tensor cores wins (12.8 vs 20.9 at B=16 H=1024). Since session 45 the 16-bit
// Hopper step (standard_wgmma.cuh, use_wgmma_step) takes 16-bit LSTM / GRU at H = 64-512 below B * H = 8192 (all of
// this rule's 16-bit region there but H = 512 B = 16, which mma.sync takes; H = 16-48 too since session 46), and the
// step loop checks it first: the fused step still runs H % 8 != 0, unaligned operands, LSTM at H = 8 above B = 16,
// and 16-bit RNN cells at H = 8 and at H = 512 with B < 3 (mma.sync takes their others since sessions 46-47,
// standard_mma.cuh; the Hopper step GRU at H = 8 up to B = 256 and LSTM up to B = 16 since session 47).
inline bool fused_rule(const StdDims& d, openrnn_data_type dt) {
  const int o = fused_override();
  if (o >= 0) return o == 1;
  // float32 B=32 H=1024 (H100, 2026-11-21): fused 41.3 µs/step, cuDNN STANDARD 33.9; cuBLAS with the K split ran
  // B=64 H=1024 in 37.6, so B=32 with H > 512 goes to cuBLAS (B=32 itself not timed there; not a grid row).
  // B in (32, 64] with H <= 256 (session 31, run 9, H100, graph, µs/step, cuBLAS + pointwise -> fused): B=64 H=256
  // training LSTM 31.66 -> 25.40, GRU 28.16 -> 20.49; inference LSTM 10.78 -> 10.79, GRU 10.47 -> 8.92. At H=512,
  // and at B=128 (inference; training within 7%) and B=256, cuBLAS stays faster.
  if (dt == OPENRNN_DATA_FLOAT)
    return d.B <= 16 ? d.Hout <= 1024 : d.B <= 32 ? d.Hout <= 512 : d.B <= 64 && d.Hout <= 256;
  return d.B <= 16 && d.Hout <= 512;
}
inline bool fused_applies(const StdDims& d, openrnn_data_type dt) {
  return dt != OPENRNN_DATA_DOUBLE && !d.proj && !d.gru_rb;
}
// The forward step's rule: fused_rule, and for float32 where the wide step (fused_fwd_wide_kernel) runs: B <= 32 with
// H <= 2048, B <= 64 with H <= 512 (GRU 1024), B <= 128 with H <= 256 (GRU 512), B <= 256 with H <= 256; RNN follows
// LSTM (not timed). Measured on the H100 (session 32, graph, inference, µs/step, cuBLAS GEMM + pointwise, k split at
// B >= 32 -> wide step; docs/performance.md):
//   run 2 (first version): B = 16 H = 2048 LSTM 80.56 -> 45.29, GRU 78.94 -> 35.34; B = 32 H = 1024 LSTM 25.92 ->
//     21.55; B = 64 H = 512 LSTM 17.64 -> 13.69;
//   run 5 (second version): B = 128 H = 256 LSTM 12.76 -> 9.62, GRU 11.47 -> 8.48;
//   runs 12-13 (the cell over unit-contiguous threads): B = 256 H = 256 LSTM 15.76 -> 14.06, GRU 14.16 -> 12.35;
//   run 15 (two processes): B = 32 H = 2048 LSTM 76.5 -> 71.4, GRU 62.2 -> 57.7; B = 64 H = 1024 GRU 31.8 -> 30.0
//     (LSTM 34.9 -> 36.6: not taken); B = 128 H = 512 GRU 18.9 -> 18.3 (LSTM 20.9 -> 21.7: not taken).
// cuBLAS stays faster at B = 64 H = 2048 (111 vs 134) and at larger B * H: the wide step reads W_hh once per 16
// sequences, and its product runs on CUDA cores.
// At B = 1 cuBLAS's GEMV-shaped GEMM beats both fused steps from H = 1024 (run 3, inference: LSTM 7.51 vs 9.02 wide,
// 10.43 eight-sequence; H = 2048 GRU 23.80 vs 25.48).
// Session 62 (H200, run 3, graph, float32, cuBLAS GEMM + pointwise -> the fused step forced, best of two processes)
// widened it past B = 64, where cuBLAS runs these small-N GEMMs on slow kernels (ncu: sgemm_largek at 12 µs per step
// for H = 32 B = 128): inference at H = 32 B = 65-256 LSTM 14.0-14.8 -> 3.4-4.0, GRU 13.5-14.1 -> 2.9-3.5, RNN tanh
// 12.5-12.9 -> 2.6-2.7; RNN tanh -31% to -80% at H = 32-384 up to B = 256 (H >= 256: up to B = 128); LSTM H = 272-384
// B = 80-96 -9% to -43%. Taken where inference gained, in round edges: not where it lost (GRU H = 96-192 B = 256
// +11% to +47%, LSTM B = 256 at H = 64-192 +26% to +73%, H = 128 B = 128 +8%, H = 192 B = 96 +5%, H = 272 B = 128
// +10%), nor LSTM H = 272 B = 112 (-33%), where H = 320-384 gained 1-9%.
inline bool fused_fwd_rule(const StdDims& d, openrnn_data_type dt) {
  if (fused_override() >= 0 || dt != OPENRNN_DATA_FLOAT) return fused_rule(d, dt);
  if (d.B == 1 && d.Hout >= 1024) return false;
  if (use_wide_fwd(d, dt))
    return d.B <= 32    ? d.Hout <= 2048
           : d.B <= 64  ? d.Hout <= (d.gru_lbr ? 1024 : 512)
           : d.B <= 128 ? d.Hout <= (d.gru_lbr ? 512 : (d.rnn || d.B <= 96) ? 384 : 256)
                        : d.B <= 256 && d.Hout <= 256;
  if (fused_rule(d, dt)) return true;
  // Here H < 256 and B > 64.
  if (d.rnn) return d.B <= 256;
  if (d.gru_lbr) return d.B <= (d.Hout <= 64 ? 256 : d.Hout <= 192 ? 128 : 64);
  return d.B <= (d.Hout <= 32 ? 256 : d.Hout <= 96 ? 128 : d.Hout <= 128 ? 96 : 64);
}
// The backward step's rule: fused_rule, and for float32 past B = 64 up to B = 128 with H <= 384 and up to B = 256
// with H <= 192 (session 62, run 3: training with both steps fused, every measured row of that region -6% to -68%
// but LSTM B = 256 H = 192 +7% and GRU -2%, where the forward alone lost 9 / 5 µs of it: the backward gained 6).
inline bool fused_bwd_rule(const StdDims& d, openrnn_data_type dt) {
  if (fused_rule(d, dt)) return true;
  if (fused_override() >= 0 || dt != OPENRNN_DATA_FLOAT || d.B <= 64) return false;
  return d.B <= 128 ? d.Hout <= 384 : d.B <= 256 && d.Hout <= 192;
}
inline bool use_fused_fwd(const StdDims& d, openrnn_data_type dt) {
  return fused_applies(d, dt) && fused_smem(d.Hout) <= kFusedMaxSmem && fused_fwd_rule(d, dt);
}
inline bool use_fused_bwd(const StdDims& d, openrnn_data_type dt) {
  return fused_applies(d, dt) && fused_smem(d.GH) <= kFusedMaxSmem && fused_bwd_rule(d, dt);
}

// Raises a kernel's dynamic shared-memory limit once per device (static + dynamic above 48 KB needs the opt-in): to
// `bytes`, or what the device allows per block beyond the kernel's static shared memory (at least 1 KB) if less.
// m / done: the caller's statics (one pair per kernel instantiation).
// carveout (>= 0): also set the kernel's preferred shared-memory carveout (percent of the SM's shared memory + L1;
// the driver takes at least what a block needs). The mma.sync step kernels ask for the largest
// (cudaSharedmemCarveoutMaxShared), so that a programmatic dependent's blocks (the next step's) may start beside this
// step's (session 29, run 5); where their grid is one wave, the forward's launches ask for the smallest instead
// (one_wave_carveout), which takes precedence. The Hopper step kernel sets its carveout per launch only.
inline void allow_smem(const void* kernel, int device, size_t bytes, std::mutex& m, std::vector<int>& done,
                       int carveout = -1) {
  std::lock_guard<std::mutex> lock(m);
  for (int d : done)
    if (d == device) return;
  int optin = 0;
  OPENRNN_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes fa{};
  OPENRNN_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));  // static + dynamic must stay within the opt-in
  const size_t room = static_cast<size_t>(optin) - std::max<size_t>(fa.sharedSizeBytes, 1024);
  const int limit = static_cast<int>(std::min(bytes, room));
  OPENRNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, limit));
  if (carveout >= 0)
    OPENRNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
  done.push_back(device);
}

// The preferred shared-memory carveout of one step launch (percent of the SM's 256 KB; the rest is L1): where the grid
// is one wave of one block per SM (blocks <= SMs), the smallest that holds a block (cudaSharedmemCarveoutMaxL1; the
// driver still takes what a block needs), else none (the kernel's attribute, or the driver's choice). forced >= -1
// (env_carveout, standard_plan.h) overrides it. Without it the split is whatever the driver picks, and that depends
// on what ran before: the same mma.sync row measured 6.5 or 8.1 µs/step from one process to the next (sessions 29-31).
//   Hopper step, session 30 run 8 (H100, float16 inference, graph, µs/step, none -> MaxL1 on every launch):
//     B = 64 H = 1024 LSTM 11.13 -> 10.11, GRU 9.88 -> 8.81 (128 blocks); B = 256 H = 512 (256 blocks) LSTM
//     9.31 -> 14.01, GRU 8.22 -> 12.69 (one block per SM in two waves): hence "one wave" only.
//   mma.sync forward step, session 31 runs 4-5 (max-shared attribute -> MaxL1 per launch): LSTM B = 16 H = 1024
//     inference 8.10 -> 6.64 in a process where it ran slow; training B = 16 H = 1024 16.86 -> 15.47, B = 64 H = 512
//     15.90 -> 14.94; GRU B = 64 H = 512 inference 6.25 -> 5.97; every other row within 1%.
inline int one_wave_carveout(long long blocks, int sms, int forced) {
  if (forced >= -1) return forced;
  return blocks <= sms ? static_cast<int>(cudaSharedmemCarveoutMaxL1) : -1;
}

template <typename T, int CELL, bool VEC>
void launch_fused_fwd(const FwdStep<T, float>& p, const T* W, int device, cudaStream_t st) {
  const int U = fused_units(CELL == 0 ? 4 : (CELL == 1 ? 3 : 1));
  const dim3 grid((p.H + U - 1) / U, (p.B + kFusedBT - 1) / kFusedBT);
  const size_t smem = fused_smem(p.Hout);
  {  // static + dynamic shared memory above 48 KB needs the opt-in; set once per device for every size.
    static std::mutex m;
    static std::vector<int> done;
    allow_smem(reinterpret_cast<const void*>(&fused_fwd_kernel<T, CELL, VEC>), device, kFusedMaxSmem, m, done);
  }
  fused_fwd_kernel<T, CELL, VEC><<<grid, kFusedThreads, smem, st>>>(p, W);
  OPENRNN_LAUNCH_CHECK("fused_fwd_kernel");
}

// Warps (units) per block of the wide step: 16, 8 or 4, the most that still gives about one block per SM.
inline int wide_warps(int H, int ytiles, int sms) {
  const long long units = static_cast<long long>(H) * ytiles;
  return units >= 16LL * (sms - sms / 8) ? 16 : units >= 8LL * (sms - sms / 8) ? 8 : 4;
}

template <typename T, int CELL, bool VEC, int NW>
void launch_fused_fwd_wide(const FwdStep<T, float>& p, const T* W, int device, cudaStream_t st) {
  const dim3 grid((p.B + kWideBT - 1) / kWideBT, (p.H + NW - 1) / NW);  // sequence tiles fastest (kernel)
  const size_t smem = wide_smem(p.Hout);
  {
    static std::mutex m;
    static std::vector<int> done;
    allow_smem(reinterpret_cast<const void*>(&fused_fwd_wide_kernel<T, CELL, VEC, NW>), device, kFusedMaxSmem, m,
               done);
  }
  const bool hvec = std::is_same<T, float>::value && p.Hout % 4 == 0 &&
                    reinterpret_cast<uintptr_t>(p.hin) % 16 == 0;
  fused_fwd_wide_kernel<T, CELL, VEC, NW><<<grid, NW * 32, smem, st>>>(p, W, hvec);
  OPENRNN_LAUNCH_CHECK("fused_fwd_wide_kernel");
}

template <typename T, int CELL, bool VEC>
void launch_fused_fwd_wide(const FwdStep<T, float>& p, const T* W, int device, int sms, cudaStream_t st) {
  switch (wide_warps(p.H, (p.B + kWideBT - 1) / kWideBT, sms)) {
    case 16: return launch_fused_fwd_wide<T, CELL, VEC, 16>(p, W, device, st);
    case 8: return launch_fused_fwd_wide<T, CELL, VEC, 8>(p, W, device, st);
    default: return launch_fused_fwd_wide<T, CELL, VEC, 4>(p, W, device, st);
  }
}

template <typename T, int CELL, bool VEC>
void launch_fused_bwd(const BwdStep<T, float>& p, const T* Wt, const T* dGn, int device, cudaStream_t st) {
  const int G = CELL == 0 ? 4 : (CELL == 1 ? 3 : 1);
  const dim3 grid((p.H + kFusedRows - 1) / kFusedRows, (p.B + kFusedBT - 1) / kFusedBT);
  const size_t smem = dGn ? fused_smem(G * p.H) : 0;
  {
    static std::mutex m;
    static std::vector<int> done;
    allow_smem(reinterpret_cast<const void*>(&fused_bwd_kernel<T, CELL, VEC>), device, kFusedMaxSmem, m, done);
  }
  // dGn's rows may take the vector loads (VEC: K % 4 == 0) where its base is aligned to 4 elements: it lies in the
  // caller's reserve space, which need not be.
  const bool dvec = reinterpret_cast<uintptr_t>(dGn) % (4 * sizeof(T)) == 0;
  fused_bwd_kernel<T, CELL, VEC><<<grid, kFusedThreads, smem, st>>>(p, Wt, dGn, dvec);
  OPENRNN_LAUNCH_CHECK("fused_bwd_kernel");
}

// One fused forward step: picks the cell and the vector-load variant (rows 4-element aligned).
template <typename T>
void fused_forward_step(const StdDims& d, const FwdStep<T, float>& p, const T* W, int device, int sms,
                        cudaStream_t st) {
  const bool vec = d.Hout % 4 == 0 && reinterpret_cast<uintptr_t>(W) % (4 * sizeof(T)) == 0;
  constexpr openrnn_data_type dt = std::is_same<T, float>::value      ? OPENRNN_DATA_FLOAT
                                   : std::is_same<T, __half>::value ? OPENRNN_DATA_HALF
                                                                    : OPENRNN_DATA_BFLOAT16;
  if (use_wide_fwd(d, dt)) {
    if (d.lstm) {
      vec ? launch_fused_fwd_wide<T, 0, true>(p, W, device, sms, st)
          : launch_fused_fwd_wide<T, 0, false>(p, W, device, sms, st);
    } else if (d.gru_lbr) {
      vec ? launch_fused_fwd_wide<T, 1, true>(p, W, device, sms, st)
          : launch_fused_fwd_wide<T, 1, false>(p, W, device, sms, st);
    } else {
      vec ? launch_fused_fwd_wide<T, 2, true>(p, W, device, sms, st)
          : launch_fused_fwd_wide<T, 2, false>(p, W, device, sms, st);
    }
    return;
  }
  if (d.lstm) {
    vec ? launch_fused_fwd<T, 0, true>(p, W, device, st) : launch_fused_fwd<T, 0, false>(p, W, device, st);
  } else if (d.gru_lbr) {
    vec ? launch_fused_fwd<T, 1, true>(p, W, device, st) : launch_fused_fwd<T, 1, false>(p, W, device, st);
  } else {
    vec ? launch_fused_fwd<T, 2, true>(p, W, device, st) : launch_fused_fwd<T, 2, false>(p, W, device, st);
  }
}

// One fused backward step; Wt = W_hh^T [H, G*H] in the workspace (256-byte aligned).
template <typename T>
void fused_backward_step(const StdDims& d, const BwdStep<T, float>& p, const T* Wt, const T* dGn, int device,
                         cudaStream_t st) {
  const bool vec = d.GH % 4 == 0;
  if (d.lstm) {
    vec ? launch_fused_bwd<T, 0, true>(p, Wt, dGn, device, st) : launch_fused_bwd<T, 0, false>(p, Wt, dGn, device, st);
  } else if (d.gru_lbr) {
    vec ? launch_fused_bwd<T, 1, true>(p, Wt, dGn, device, st) : launch_fused_bwd<T, 1, false>(p, Wt, dGn, device, st);
  } else {
    vec ? launch_fused_bwd<T, 2, true>(p, Wt, dGn, device, st) : launch_fused_bwd<T, 2, false>(p, Wt, dGn, device, st);
  }
}

}  // namespace cuda
}  // namespace openrnn
