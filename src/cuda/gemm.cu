// Row-major GEMM on cublasGemmEx (see cuda_ops.h). cuBLAS is column-major: a row-major [R, C] matrix with row stride
// ld is the column-major [C, R] matrix with leading dimension ld, i.e. its transpose; so C = op(A) op(B) is computed
// as C^T = op(B)^T op(A)^T with the operands swapped.
#include <array>
#include <map>
#include <mutex>

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

uint32_t align_of(const void* p) {
  uint32_t a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a != 0) a /= 2;
  return a;
}

const LtPlan& lt_plan(cublasHandle_t h, int dev, const LtShape& sh, size_t ws_bytes, int tile, int split) {
  static std::mutex mu;
  static std::map<std::array<long long, 17>, LtPlan> cache;
  std::lock_guard<std::mutex> lock(mu);
  const std::array<long long, 17> key = {dev,      sh.ab,    sh.c,     sh.ta, sh.tb, sh.M, sh.N, sh.K, sh.lda, sh.ldb,
                                         sh.ldc,   sh.al[0], sh.al[1], sh.al[2], tile, split,
                                         static_cast<long long>(ws_bytes)};
  const auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  LtPlan& pl = cache[key];
  // Column-major C^T [N, M] = op(B)^T op(A)^T: cuBLASLt's A is our B (transposed when tb), its B our A (when ta).
  const cublasOperation_t opa = sh.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = sh.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  constexpr cublasStatus_t kOk = CUBLAS_STATUS_SUCCESS;
  cublasLtMatmulPreference_t pref = nullptr;
  const cublasLtHandle_t lt = reinterpret_cast<cublasLtHandle_t>(h);  // a cuBLAS handle is a cuBLASLt handle
  bool ok =
      cublasLtMatmulDescCreate(&pl.op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == kOk &&
      cublasLtMatmulDescSetAttribute(pl.op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa) == kOk &&
      cublasLtMatmulDescSetAttribute(pl.op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb) == kOk &&
      cublasLtMatrixLayoutCreate(&pl.la, sh.ab, sh.tb ? sh.K : sh.N, sh.tb ? sh.N : sh.K, sh.ldb) == kOk &&
      cublasLtMatrixLayoutCreate(&pl.lb, sh.ab, sh.ta ? sh.M : sh.K, sh.ta ? sh.K : sh.M, sh.lda) == kOk &&
      cublasLtMatrixLayoutCreate(&pl.lc, sh.c, sh.N, sh.M, sh.ldc) == kOk &&
      cublasLtMatmulPreferenceCreate(&pref) == kOk &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                           sizeof ws_bytes) == kOk &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &sh.al[1],
                                           sizeof sh.al[1]) == kOk &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &sh.al[0],
                                           sizeof sh.al[0]) == kOk &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &sh.al[2],
                                           sizeof sh.al[2]) == kOk &&
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &sh.al[2],
                                           sizeof sh.al[2]) == kOk;
  if (ok) {
    constexpr int kWant = 32;
    cublasLtMatmulHeuristicResult_t res[kWant] = {};
    int n = 0;
    if (cublasLtMatmulAlgoGetHeuristic(lt, pl.op, pl.la, pl.lb, pl.lc, pl.lc, pref, kWant, res, &n) == kOk) {
      for (int i = 0; i < n && !pl.ok; ++i) {
        int t = -1, sk = -1;
        size_t w = 0;
        if (res[i].state != kOk) continue;
        cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &t, sizeof t, &w);
        cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk, &w);
        if (t != tile || (split == 0 && sk != 1)) continue;
        cublasLtMatmulAlgo_t a = res[i].algo;
        const uint32_t red = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        cublasLtMatmulHeuristicResult_t chk = {};
        if ((split == 0 ||
             (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split) ==
                  kOk &&
              cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red) ==
                  kOk)) &&
            cublasLtMatmulAlgoCheck(lt, pl.op, pl.la, pl.lb, pl.lc, pl.lc, &a, &chk) == kOk &&
            chk.workspaceSize <= ws_bytes) {
          pl.algo = a;
          pl.ok = true;
        }
      }
    }
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  return pl;
}

void lt_gemm_rm(cublasHandle_t h, const LtPlan& pl, float alpha, const void* A, const void* B, float beta, void* C,
                void* ws, size_t ws_bytes, cudaStream_t st) {
  OPENRNN_CUBLAS_CHECK(cublasLtMatmul(reinterpret_cast<cublasLtHandle_t>(h), pl.op, &alpha, B, pl.la, A, pl.lb, &beta,
                                      C, pl.lc, C, pl.lc, &pl.algo, ws, ws_bytes, st));
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
