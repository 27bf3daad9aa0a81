// Host-callable building blocks shared by the CUDA algorithms: the row-major GEMM on cuBLAS and small elementwise
// kernels (state conversion, layout copies with padding, dropout masks, ones). Every function is stream-ordered,
// allocates nothing and never synchronises. T is a storage type: float, double, __half or __nv_bfloat16.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_common.cuh"
#include "openrnn/openrnn.h"

namespace openrnn {
namespace cuda {

// The numeric contract as cuBLAS types: operands in the storage type; compute in float32 (strict unless TF32 was
// allowed), float64 for float64. float16/bfloat16 run on tensor cores with float32 accumulation.
struct GemmSpec {
  cudaDataType_t ab = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  bool f64 = false;
};
GemmSpec gemm_spec(openrnn_data_type dt, openrnn_math_mode mm);

// Row-major C[M, N] = alpha * op(A)[M, K] * op(B)[K, N] + beta * C. lda/ldb/ldc are the row strides of the matrices
// as stored (A is stored [M, K] when !ta, [K, M] when ta). ctype: the storage type of C (the operand type, or float32
// for float32 results of float16/bfloat16 operands). Deterministic (cuBLAS, atomics off).
void gemm_rm(cublasHandle_t h, const GemmSpec& g, bool ta, bool tb, int M, int N, int K, double alpha, const void* A,
             long long lda, const void* B, long long ldb, double beta, void* C, cudaDataType_t ctype, long long ldc);

// `count` row-major GEMMs as gemm_rm, the i-th on A + i*sa, B + i*sb, C + i*sc (element strides; one cuBLAS
// strided-batched call). Used to split one product's K range into parts summed later (see standard_forward.cu).
void gemm_rm_batched(cublasHandle_t h, const GemmSpec& g, bool ta, bool tb, int M, int N, int K, double alpha,
                     const void* A, long long lda, long long sa, const void* B, long long ldb, long long sb,
                     double beta, void* C, cudaDataType_t ctype, long long ldc, long long sc, int count);

// One GEMM as gemm_rm poses it (row-major C [M, N] = op(A) op(B), swapped into cuBLAS's column-major terms) on
// cuBLASLt with an algorithm of a chosen tile: STANDARD's measured exceptions to cuBLAS's default pick (the 16-bit
// weight gradients with K split, standard_wgrad.cu; the recurrent step at B = 16 H = 2048, standard_forward.cu; and
// PERSISTENT's float32 input projection in whole waves, persistent_algo.cu).
// ab: operand type; c: C's type; al: the byte alignments of A, B and C (align_of) that the algorithm must accept.
struct LtShape {
  cudaDataType_t ab, c;
  bool ta, tb;
  int M, N, K;
  long long lda, ldb, ldc;
  uint32_t al[3];
};
// cuBLASLt's descriptors and the chosen algorithm; ok = false where cuBLASLt offers no such algorithm (callers then
// use gemm_rm). la / lb are cuBLASLt's A and B, i.e. our B and A (the swap).
struct LtPlan {
  bool ok = false;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
};
// The plan for `sh` with the first algorithm of cuBLASLt's heuristic list (float32 compute) whose tile is `tile`
// (cublasLtMatmulTile_t) and whose workspace fits ws_bytes. split = 0: that algorithm must not split K; split > 0:
// K is split `split` ways, partials reduced in float32 in the workspace (a fixed order: deterministic). Plans are
// cached for the process by every argument and device; the returned reference stays valid. Host-side only.
const LtPlan& lt_plan(cublasHandle_t h, int dev, const LtShape& sh, size_t ws_bytes, int tile, int split);
// Runs a plan: C = alpha op(A) op(B) + beta C on stream st with workspace [ws, ws + ws_bytes).
void lt_gemm_rm(cublasHandle_t h, const LtPlan& pl, float alpha, const void* A, const void* B, float beta, void* C,
                void* ws, size_t ws_bytes, cudaStream_t st);
// The largest power of two up to 256 that divides p's address (cuBLASLt's heuristics assume 256 unless told).
uint32_t align_of(const void* p);

// Binds the first `bytes` of a cuBLAS handle's workspace slice [slice, slice + full) for its lifetime, then the
// whole slice again (a no-op where bytes >= full). STANDARD's recurrent steps run their GEMMs (M = B rows) under it:
// cuBLAS picks its kernel from the workspace it is given, and some small-M shapes get a far slower one from 32 MiB
// than from 4 (blas_step_ws, cuda_backend.h). Host-side only: allowed while a stream is being captured.
class BlasWorkspaceLimit {
 public:
  BlasWorkspaceLimit(cublasHandle_t h, void* slice, size_t full, size_t bytes);
  ~BlasWorkspaceLimit();
  BlasWorkspaceLimit(const BlasWorkspaceLimit&) = delete;
  BlasWorkspaceLimit& operator=(const BlasWorkspaceLimit&) = delete;

 private:
  cublasHandle_t h_ = nullptr;  // null: nothing to restore
  void* slice_ = nullptr;
  size_t full_ = 0;
};

// dst[i] = src ? convert(src[i]) : 0 for i < n (hx/cx into the internal state, final state into hy/cy, ...).
template <typename Src, typename Dst>
void convert_or_zero(const Src* src, Dst* dst, long long n, cudaStream_t s);

// Copies a [T, B, W] sequence tensor between layouts: dst(t, b, :) = src(t, b, :) for t < len[b] (lens null: all
// active), dst(t, b, :) = fill for padding steps. src_rows / dst_rows give each tensor's row of (t, b).
template <typename Src, typename Dst>
void copy_rows(const Src* src, RowMap src_rows, Dst* dst, RowMap dst_rows, int T, int B, int W, const int32_t* lens,
               double fill, cudaStream_t s);

// Dropout on a sequence-major [T, B, W] tensor of layer `layer`'s input (element index (t*B+b)*W+u is the Philox
// index): dst[i] = keep(first + i) ? src[i] * scale : 0 for i < n. src == dst allowed (backward applies the same
// mask to gradients). first: the tensor's element index of src[0] / dst[0] (a chunk of steps: t0 * B * W).
template <typename T>
void dropout_apply(const T* src, T* dst, long long n, uint64_t seed, uint64_t offset, int layer, uint32_t threshold,
                   double scale, cudaStream_t s, long long first = 0);

template <typename T>
void fill_value(T* dst, long long n, double v, cudaStream_t s);

// Recurrent state rows of width W and row stride ld >= W (ld = 2W: the split hi/lo state of 16-bit types, see
// standard_kernels.cuh). state_in: dst[b*ld + u] = src ? src[b*W + u] : 0 and dst[b*ld + W..ld) = 0.
// state_out: dst[b*W + u] = src[b*ld + u].
template <typename T>
void state_in(const T* src, T* dst, int B, int W, int ld, cudaStream_t s);
template <typename T>
void state_out(const T* src, T* dst, int B, int W, int ld, cudaStream_t s);

// dst [cols, rows] = src [rows, cols]^T.
template <typename T>
void transpose(const T* src, T* dst, int rows, int cols, cudaStream_t s);

// dst [rows, 2*cols] = [src | src] for src [rows, cols] (the weight operand of a split-state GEMM).
template <typename T>
void dup_cols(const T* src, T* dst, int rows, int cols, cudaStream_t s);

}  // namespace cuda
}  // namespace openrnn
