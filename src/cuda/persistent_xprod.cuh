// The input projection inside a persistent forward launch (session 38): the producer CTAs' code. The library runs it
// in v10's float32 tile of one at H = 512 (persistent_fwd_v10.cuh, which also holds the consumers' side: waiting for
// a chunk before reading its projections), and since session 39 in v6's float32 tile of one at H = 256 for B = 1, one
// direction (persistent_kernels_v6.cuh, xprod_plan: session 38's first v6 version had lost, dev/lab/v6_xprod.diff).
#pragma once

#include "persistent_common.cuh"
#include "persistent_plan.h"  // kXprodCounter

namespace openrnn {
namespace cuda {
namespace persist {

// ---- the input projection inside the launch (session 38) ----------------------------------------------------------
// Why. At float32 B = 1 the input projection x W_ih^T (M = T * B = 100 rows) is a cuBLAS GEMM before the persistent
// kernel, latency-bound at ~11 µs (H = 256) / ~19 µs (H = 512) per call (session 36, ncu at boost clocks), and the
// kernel starts only when it ends. v10's tile of one at H = 512 leaves 68 of an H100's 132 SMs idle. Producer CTAs
// on some of them (extra CTAs of the same cooperative launch, in clusters of their own) compute the projection in
// chunks of steps while the recurrence runs, and count each chunk; the consumers read a chunk once it is counted.
// Producer q of P owns the NC = xprod_cols(G*Hr, P) flattened columns [q NC, q NC + nc) (column g*Hr + j: row
// g*Hr + j of W_ih), their W_ih rows held in shared memory for the launch (Ws [NC][LW]); per chunk of CH consumer
// steps (CH * B <= kXprodRows rows r = (t - t0) * B + b, the input row te * B + b with te the step's time index, as
// the consumer's), it stages the rows (Xs [kXprodRows][LW], zero past the sequence or the chunk), multiplies them in
// 4 x 4 register tiles (rows 4 tr + i, columns 4 tc + j) over a k split of KSP = NT / tiles slices, sums the KSP
// partials (Red [KSP][kXprodRows][NC]) in fixed order into xproj (float32 FMA: strict, deterministic), and thread 0
// adds 1 to the counter with a release (cumulative over the CTA's stores through the barrier).
constexpr int kXprodRows = 8;  // (step, sequence) rows per chunk: small, so that the first chunk is ready early
__host__ __device__ constexpr int xprod_cols(int ncol, int P) { return ((ncol + P - 1) / P + 3) / 4 * 4; }
__host__ __device__ constexpr int xprod_ld(int Il) { return (Il + 3) / 4 * 4 + 4; }
// The producer's shared memory in bytes (for up to NT = 512 threads: Red holds 16 partials per thread).
__host__ __device__ constexpr size_t xprod_smem(int ncol, int P, int Il) {
  return (size_t(xprod_cols(ncol, P)) * xprod_ld(Il) + size_t(kXprodRows) * xprod_ld(Il) + 512 * 16) * 4;
}

template <int G, int NT = 512>
__device__ __noinline__ void xprod_producer(const float* __restrict__ xin, const float* __restrict__ wih,
                                            float* __restrict__ xproj, unsigned* ready, const int* __restrict__ lengths,
                                            int T, int B, int Hr, int Hx, int Il, int q, int P, int CH, bool reverse,
                                            float* sm) {
  constexpr int R = kXprodRows, NW = NT / 32;  // NT: the launch's threads per CTA (512, or v6's 256)
  static_assert(R == 8, "two 4-row tiles (tr below)");
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int ncol = G * Hr, NC = xprod_cols(ncol, P), c0 = q * NC, nc = max(0, min(NC, ncol - c0));
  const int Ilp = (Il + 3) & ~3, LW = xprod_ld(Il);
  float* const Ws = sm;
  float* const Xs = Ws + size_t(NC) * LW;
  float* const Red = Xs + R * LW;
  // W_ih rows c0 .. c0 + nc (one contiguous block), a warp per row; zeros past nc and Il
  for (int cl = warp; cl < NC; cl += NW)
    for (int k = lane; k < Ilp; k += 32) Ws[cl * LW + k] = cl < nc && k < Il ? wih[size_t(c0 + cl) * Il + k] : 0.f;
  const int tiles = (R / 4) * (NC / 4), KSP = NT / tiles, kper = ((Ilp + KSP - 1) / KSP + 3) & ~3;
  const int ks = tid / tiles, tile = tid % tiles, tr = tile & 1, tc = tile >> 1;
  const int k0 = min(Ilp, ks * kper), k1 = min(Ilp, k0 + kper);
  const int nchunks = (T + CH - 1) / CH;
  for (int c = 0; c < nchunks; ++c) {
    const int t0 = c * CH;
    for (int r = warp; r < R; r += NW) {  // the chunk's input rows, a warp per row
      const int t = t0 + r / B, b = r % B;
      const int len = r < CH * B && t < T ? (lengths ? lengths[b] : T) : 0;
      const float* xr = t < len ? xin + (size_t(reverse ? len - 1 - t : t) * B + b) * Il : nullptr;
      for (int k = lane; k < Ilp; k += 32) Xs[r * LW + k] = xr && k < Il ? xr[k] : 0.f;
    }
    __syncthreads();  // Ws (first chunk) and Xs complete; the previous chunk's Red reads done
    if (ks < KSP) {
      float acc[4][4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
      for (int k = k0; k < k1; k += 4) {
        float4 xa[4], wa[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) xa[i] = *reinterpret_cast<const float4*>(Xs + (4 * tr + i) * LW + k);
#pragma unroll
        for (int j = 0; j < 4; ++j) wa[j] = *reinterpret_cast<const float4*>(Ws + (4 * tc + j) * LW + k);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            acc[i][j] = fmaf(xa[i].x, wa[j].x, acc[i][j]);
            acc[i][j] = fmaf(xa[i].y, wa[j].y, acc[i][j]);
            acc[i][j] = fmaf(xa[i].z, wa[j].z, acc[i][j]);
            acc[i][j] = fmaf(xa[i].w, wa[j].w, acc[i][j]);
          }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) Red[(ks * R + 4 * tr + i) * NC + 4 * tc + j] = acc[i][j];
    }
    __syncthreads();
    for (int o = tid; o < R * nc; o += NT) {
      const int r = o / nc, cl = o % nc, t = t0 + r / B, b = r % B;
      const int len = r < CH * B && t < T ? (lengths ? lengths[b] : T) : 0;
      if (t >= len) continue;
      float v = Red[r * NC + cl];
      for (int k = 1; k < KSP; ++k) v = __fadd_rn(v, Red[(k * R + r) * NC + cl]);
      const int col = c0 + cl, g = col / Hr, j = col - g * Hr;
      xproj[(size_t(reverse ? len - 1 - t : t) * B + b) * (G * Hx) + g * Hx + j] = v;
    }
    __syncthreads();  // every store of the chunk before thread 0's release; Xs / Red free for the next chunk
    if (tid == 0) {
      if (c == 0) pdl_wait();  // the prep kernel zeroed the counter
      red_release_gpu_add(ready, 1u);
    }
  }
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
