// Lab: the float32 input-projection GEMM of a layer (C[T*B, G*H] = X[T*B, I] W_ih^T, strict float32), cuBLAS's
// default choice (cublasGemmEx, as src/cuda/gemm.cu calls it) against every algorithm cublasLt's heuristic offers for
// the same shape. Question: is the default's wave quantization (e.g. 416 tiles of 128 x 128 on 132 SMs) worth
// choosing the algorithm ourselves? Standalone: nvcc -O2 -arch=sm_90a sgemm_lab.cu -lcublasLt -lcublas
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                 \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      std::printf("CUDA %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)
#define CB(x)                                                        \
  do {                                                               \
    int s_ = int(x);                                                 \
    if (s_ != 0) {                                                   \
      std::printf("cuBLAS status %d at %s:%d\n", s_, __FILE__, __LINE__); \
      std::exit(1);                                                  \
    }                                                                \
  } while (0)

__global__ void fill(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned v = unsigned(i) * 2654435761u ^ seed;
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    p[i] = float(v >> 8) / 16777216.f - 0.5f;
  }
}

template <typename F>
float time_ms(F f, int reps) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> v;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    v.push_back(ms);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  struct Shape { int M, K, N; const char* what; };
  const Shape shapes[] = {{1600, 1024, 4096, "LSTM H=1024 B=16 T=100"}, {1600, 1024, 3072, "GRU H=1024 B=16 T=100"},
                          {6400, 1024, 4096, "LSTM H=1024 B=64 T=100"}, {6400, 1024, 3072, "GRU H=1024 B=64 T=100"},
                          {1600, 512, 2048, "LSTM H=512 B=16 T=100"},   {6400, 512, 2048, "LSTM H=512 B=64 T=100"},
                          {400, 1024, 4096, "LSTM H=1024 B=4 T=100"}};
  cublasHandle_t h;
  CB(cublasCreate(&h));
  cublasLtHandle_t lt;
  CB(cublasLtCreate(&lt));
  const size_t wsb = size_t(32) << 20;
  void* ws;
  CK(cudaMalloc(&ws, wsb));
  for (const Shape& s : shapes) {
    float *X, *W, *C, *C0;
    CK(cudaMalloc(&X, sizeof(float) * s.M * s.K));
    CK(cudaMalloc(&W, sizeof(float) * s.N * s.K));
    CK(cudaMalloc(&C, sizeof(float) * s.M * s.N));
    CK(cudaMalloc(&C0, sizeof(float) * s.M * s.N));
    fill<<<512, 256>>>(X, size_t(s.M) * s.K, 1u);
    fill<<<512, 256>>>(W, size_t(s.N) * s.K, 2u);
    const float one = 1.f, zero = 0.f;
    // row-major C[M, N] = X[M, K] W[N, K]^T  ==  column-major C^T[N, M] = W^T... : op(W) = T on the [K, N] view
    auto def = [&]() {
      CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.N, s.M, s.K, &one, W, CUDA_R_32F, s.K, X, CUDA_R_32F, s.K,
                      &zero, C0, CUDA_R_32F, s.N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    const double gflop = 2.0 * s.M * s.N * s.K * 1e-9;
    const float td = time_ms(def, 15);
    std::printf("== %s: M=%d N=%d K=%d  default %.1f us (%.1f TFLOP/s)\n", s.what, s.M, s.N, s.K, td * 1e3,
                gflop / td);
    {  // cuBLAS's float32 emulation on bfloat16 tensor cores (3 x bf16 per operand), and TF32 for scale
      std::vector<float> ref(size_t(s.M) * s.N), got(ref.size());
      CK(cudaMemcpy(ref.data(), C0, sizeof(float) * ref.size(), cudaMemcpyDeviceToHost));
      for (int mode = 0; mode < 2; ++mode) {
        CB(cublasSetEmulationStrategy(h, CUBLAS_EMULATION_STRATEGY_EAGER));
        const cublasComputeType_t ct = mode == 0 ? CUBLAS_COMPUTE_32F_EMULATED_16BFX9 : CUBLAS_COMPUTE_32F_FAST_TF32;
        auto emu = [&]() {
          CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.N, s.M, s.K, &one, W, CUDA_R_32F, s.K, X, CUDA_R_32F, s.K,
                          &zero, C, CUDA_R_32F, s.N, ct, CUBLAS_GEMM_DEFAULT));
        };
        const float te = time_ms(emu, 15);
        CK(cudaMemcpy(got.data(), C, sizeof(float) * got.size(), cudaMemcpyDeviceToHost));
        double num = 0, den = 0, md = 0;
        for (size_t j = 0; j < got.size(); ++j) {
          const double d = double(got[j]) - ref[j];
          num += d * d;
          den += double(ref[j]) * ref[j];
          md = std::max(md, std::abs(d));
        }
        std::printf("  %s: %.1f us (%.1f TFLOP/s, %.2fx default) rel diff to FFMA %.2e max|diff| %.2e\n",
                    mode == 0 ? "EMULATED_16BFX9" : "FAST_TF32", te * 1e3, gflop / te, td / te,
                    std::sqrt(num / den), md);
        CB(cublasSetEmulationStrategy(h, CUBLAS_EMULATION_STRATEGY_DEFAULT));
      }
    }
    cublasLtMatmulDesc_t op;
    CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtMatrixLayout_t la, lb, lc;
    CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, s.K, s.N, s.K));
    CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, s.K, s.M, s.K));
    CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, s.N, s.M, s.N));
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    cublasLtMatmulHeuristicResult_t res[32];
    int n = 0;
    CB(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 32, res, &n));
    std::vector<float> ref(size_t(s.M) * s.N), got(ref.size());
    CK(cudaMemcpy(ref.data(), C0, sizeof(float) * ref.size(), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      auto run = [&]() {
        CB(cublasLtMatmul(lt, op, &one, W, la, X, lb, &zero, C, lc, C, lc, &res[i].algo, ws, wsb, 0));
      };
      const float t = time_ms(run, 15);
      CK(cudaMemcpy(got.data(), C, sizeof(float) * got.size(), cudaMemcpyDeviceToHost));
      double md = 0;
      for (size_t j = 0; j < got.size(); ++j) md = std::max(md, double(std::abs(got[j] - ref[j])));
      int id = -1, tile = -1, stages = -1, splitk = -1, red = -1, cta = -1;
      size_t w;
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
      cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cta, sizeof cta, &w);
      std::printf("  lt[%2d] algo %3d tile %3d stages %3d splitK %2d red %d cluster %d ws %zu: %.1f us (%.1f TFLOP/s, "
                  "%.2fx default) max|diff| %.2e\n",
                  i, id, tile, stages, splitk, red, cta, res[i].workspaceSize, t * 1e3, gflop / t, td / t, md);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    CK(cudaFree(X));
    CK(cudaFree(W));
    CK(cudaFree(C));
    CK(cudaFree(C0));
  }
  return 0;
}
