// Tensor-core primitives shared by the 16-bit step kernel (standard_mma.cuh) and the persistent tensor-core forward
// (persistent_fwd_v7.cuh): ldmatrix from shared memory and mma.sync m16n8k16 with float32 accumulators (sm_80+),
// and the warp-tile steps both kernels run on them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace openrnn {
namespace cuda {
namespace mma {

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
// Four 8x8 matrices, each delivered transposed: lane l gets rows 2 (l % 4) and 2 (l % 4) + 1 of column l / 4.
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldsm_x2(uint32_t& r0, uint32_t& r1, const void* p) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(a));
}

// d += a (16x16, row) * b (16x8, col), float32 accumulators.
template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same<T, __half>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// One k16 slice of a warp's tile: acc[MT][NTL] += A (MT m16 tiles: rows [16 i, 16 i + 16) of `as`, row stride lda)
// x B^T (NTL n8 tiles: rows [8 j, 8 j + 8) of `bs`, row stride ldb), both k-contiguous at this slice's first column.
template <typename TW, int MT, int NTL>
__device__ __forceinline__ void warp_k16(float (&acc)[MT][NTL][4], const TW* as, int lda, const TW* bs, int ldb,
                                           int lane) {
  uint32_t a[MT][4], b[NTL][2];
#pragma unroll
  for (int i = 0; i < MT; ++i) ldsm_x4(a[i], as + (i * 16 + (lane & 15)) * lda + (lane >> 4) * 8);
#pragma unroll
  for (int j = 0; j + 1 < NTL; j += 2) {  // two n8 tiles per ldmatrix.x4: (n 0-7 | 8-15) x (k 0-7 | 8-15)
    uint32_t r[4];
    ldsm_x4(r, bs + (j * 8 + (lane & 7) + (lane >> 4) * 8) * ldb + ((lane >> 3) & 1) * 8);
    b[j][0] = r[0];
    b[j][1] = r[1];
    b[j + 1][0] = r[2];
    b[j + 1][1] = r[3];
  }
  if constexpr (NTL % 2 == 1)
    ldsm_x2(b[NTL - 1][0], b[NTL - 1][1], bs + ((NTL - 1) * 8 + (lane & 7)) * ldb + ((lane >> 3) & 1) * 8);
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NTL; ++j) mma16816<TW>(acc[i][j], a[i], b[j][0], b[j][1]);
}

template <int MT, int NTL>
__device__ __forceinline__ void zero_acc(float (&acc)[MT][NTL][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NTL; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
}

// Accumulators -> Cs (m16n8 fragment: c0,c1 at (row lane/4, cols 2*(lane%4) + 0/1), c2,c3 at row + 8); warp tile at
// rows r0, columns c0 of Cs (row stride ld).
template <int MT, int NTL>
__device__ __forceinline__ void store_acc(const float (&acc)[MT][NTL][4], float* Cs, int ld, int r0, int c0,
                                             int lane) {
  const int gr = lane >> 2, gc = (lane & 3) * 2;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NTL; ++j) {
      const int r = r0 + i * 16 + gr, c = c0 + j * 8 + gc;
      *reinterpret_cast<float2*>(Cs + r * ld + c) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(Cs + (r + 8) * ld + c) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
}

}  // namespace mma
}  // namespace cuda
}  // namespace openrnn
