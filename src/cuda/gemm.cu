// Row-major GEMM on cublasGemmEx (see cuda_ops.h). cuBLAS is column-major: a row-major [R, C] matrix with row stride
// ld is the column-major [C, R] matrix with leading dimension ld, i.e. its transpose; so C = op(A) op(B) is computed
// as C^T = op(B)^T op(A)^T with the operands swapped.
#include "cuda_ops.h"

namespace openrnn {
namespace cuda {

GemmSpec gemm_spec(openrnn_data_type dt, openrnn_math_mode mm) {
  GemmSpec g;
  switch (dt) {
    case OPENRNN_DATA_FLOAT:
      g.ab = CUDA_R_32F;
      g.compute = mm == OPENRNN_MATH_ALLOW_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case OPENRNN_DATA_DOUBLE:
      g.ab = CUDA_R_64F;
      g.compute = CUBLAS_COMPUTE_64F;
      g.f64 = true;
      break;
    case OPENRNN_DATA_HALF:
      g.ab = CUDA_R_16F;
      g.compute = CUBLAS_COMPUTE_32F;
      break;
    case OPENRNN_DATA_BFLOAT16:
      g.ab = CUDA_R_16BF;
      g.compute = CUBLAS_COMPUTE_32F;
      break;
  }
  return g;
}

void gemm_rm(cublasHandle_t h, const GemmSpec& g, bool ta, bool tb, int M, int N, int K, double alpha, const void* A,
             long long lda, const void* B, long long ldb, double beta, void* C, cudaDataType_t ctype,
             long long ldc) {
  if (M <= 0 || N <= 0) return;
  const cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (g.f64) {
    const double a = alpha, b = beta;
    OPENRNN_CUBLAS_CHECK(cublasGemmEx(h, opa, opb, N, M, K, &a, B, g.ab, static_cast<int>(ldb), A, g.ab,
                                      static_cast<int>(lda), &b, C, ctype, static_cast<int>(ldc), g.compute,
                                      CUBLAS_GEMM_DEFAULT));
  } else {
    const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
    OPENRNN_CUBLAS_CHECK(cublasGemmEx(h, opa, opb, N, M, K, &a, B, g.ab, static_cast<int>(ldb), A, g.ab,
                                      static_cast<int>(lda), &b, C, ctype, static_cast<int>(ldc), g.compute,
                                      CUBLAS_GEMM_DEFAULT));
  }
}

void gemm_rm_batched(cublasHandle_t h, const GemmSpec& g, bool ta, bool tb, int M, int N, int K, double alpha,
                     const void* A, long long lda, long long sa, const void* B, long long ldb, long long sb,
                     double beta, void* C, cudaDataType_t ctype, long long ldc, long long sc, int count) {
  if (M <= 0 || N <= 0 || count <= 0) return;
  const cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (g.f64) {  // float64 operands and result: one call per part
    for (int i = 0; i < count; ++i)
      gemm_rm(h, g, ta, tb, M, N, K, alpha, static_cast<const double*>(A) + i * sa, lda,
              static_cast<const double*>(B) + i * sb, ldb, beta, static_cast<double*>(C) + i * sc, ctype, ldc);
    return;
  }
  const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
  OPENRNN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, opa, opb, N, M, K, &a, B, g.ab, static_cast<int>(ldb), sb, A,
                                                  g.ab, static_cast<int>(lda), sa, &b, C, ctype,
                                                  static_cast<int>(ldc), sc, count, g.compute, CUBLAS_GEMM_DEFAULT));
}

BlasWorkspaceLimit::BlasWorkspaceLimit(cublasHandle_t h, void* slice, size_t full, size_t bytes) {
  if (bytes >= full) return;
  OPENRNN_CUBLAS_CHECK(cublasSetWorkspace(h, slice, bytes));
  h_ = h;
  slice_ = slice;
  full_ = full;
}

BlasWorkspaceLimit::~BlasWorkspaceLimit() {
  // The same pointer and a larger size than a call already accepted: cannot fail for a live handle, and a destructor
  // must not throw.
  if (h_) (void)cublasSetWorkspace(h_, slice_, full_);
}

}  // namespace cuda
}  // namespace openrnn
