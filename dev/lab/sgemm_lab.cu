// Lab: a layer's GEMMs in strict float32 (and 16-bit operands with float32 output), cuBLAS's default choice
// (cublasGemmEx, as src/cuda/gemm.cu calls it) against every algorithm cublasLt's heuristic offers for the same shape.
// Session 23: the input projection (C[T*B, G*H] = X[T*B, I] W_ih^T): is the default's wave quantization (e.g. 416
// tiles of 128 x 128 on 132 SMs) worth choosing the algorithm ourselves? Session 33: the per-step recurrent product
// (C[B, G*H] = h[B, H] W_hh^T; M = 2B for the 16-bit split state) at the shapes where issue 3's float32 grid misses,
// with the shipped two-part K split (one strided-batched call over two K halves, standard_forward.cu use_ksplit) beside
// them. Standalone: nvcc -O2 -arch=sm_90a sgemm_lab.cu -lcublasLt -lcublas
// usage: sgemm_lab                      the session-23 input-projection shapes, float32
//        sgemm_lab M:K:N:T[:what] ...   given shapes; T = f32 or f16 (16-bit operands, float32 C)
//        LAB_FLUSH_MIB=128 sgemm_lab ...  L2 flushed before each timed call (session 46)
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
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

template <typename E>
__global__ void fill(E* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned v = unsigned(i) * 2654435761u ^ seed;
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    p[i] = E(float(v >> 8) / 16777216.f - 0.5f);
  }
}

// LAB_FLUSH_MIB=n (session 46): memset n MiB before each timed call, as openrnn-bench flushes L2 before each call, so
// that the operands come from HBM (the small-M input projections read W_ih once; warm, it stays in L2).
void* flush_buf(size_t* bytes) {
  static size_t n = [] {
    const char* e = std::getenv("LAB_FLUSH_MIB");
    return e ? size_t(std::atoi(e)) << 20 : size_t(0);
  }();
  static void* p = nullptr;
  if (n && !p) CK(cudaMalloc(&p, n));
  *bytes = n;
  return p;
}

template <typename F>
float time_ms(F f, int reps) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> v;
  size_t fb = 0;
  void* const fl = flush_buf(&fb);
  for (int r = 0; r < reps; ++r) {
    if (fl) CK(cudaMemsetAsync(fl, r & 0xff, fb));
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

int main(int argc, char** argv) {
  struct Shape { int M, K, N; bool f16; std::string what; };
  std::vector<Shape> shapes = {{1600, 1024, 4096, false, "LSTM H=1024 B=16 T=100"},
                               {1600, 1024, 3072, false, "GRU H=1024 B=16 T=100"},
                               {6400, 1024, 4096, false, "LSTM H=1024 B=64 T=100"},
                               {6400, 1024, 3072, false, "GRU H=1024 B=64 T=100"},
                               {1600, 512, 2048, false, "LSTM H=512 B=16 T=100"},
                               {6400, 512, 2048, false, "LSTM H=512 B=64 T=100"},
                               {400, 1024, 4096, false, "LSTM H=1024 B=4 T=100"}};
  if (argc > 1) {
    shapes.clear();
    for (int i = 1; i < argc; ++i) {
      Shape sh{};
      char t[8] = {0}, what[64] = {0};
      if (std::sscanf(argv[i], "%d:%d:%d:%7[^:]:%63s", &sh.M, &sh.K, &sh.N, t, what) < 4) {
        std::printf("bad shape '%s' (M:K:N:f32|f16[:what])\n", argv[i]);
        return 2;
      }
      sh.f16 = std::string(t) == "f16";
      sh.what = what[0] ? what : argv[i];
      shapes.push_back(sh);
    }
  }
  cublasHandle_t h;
  CB(cublasCreate(&h));
  cublasLtHandle_t lt;
  CB(cublasLtCreate(&lt));
  // LAB_WS_MIB (default 32): the workspace of the default's handle and of the cublasLt list (the library gives its
  // handles 4 MiB for 16-bit at B * H < 65536, cuda_backend.cu blas_ws_per_handle).
  const size_t wsb = size_t(std::getenv("LAB_WS_MIB") ? std::atoi(std::getenv("LAB_WS_MIB")) : 32) << 20;
  void* ws;
  CK(cudaMalloc(&ws, wsb));
  CB(cublasSetWorkspace(h, ws, wsb));
  for (const Shape& s : shapes) {
    const size_t es = s.f16 ? 2 : 4;
    const cudaDataType_t ab = s.f16 ? CUDA_R_16F : CUDA_R_32F;
    void *X, *W;
    float *C, *C0;
    CK(cudaMalloc(&X, es * s.M * s.K));
    CK(cudaMalloc(&W, es * s.N * s.K));
    CK(cudaMalloc(&C, sizeof(float) * s.M * s.N));
    CK(cudaMalloc(&C0, sizeof(float) * s.M * s.N));
    if (s.f16) {
      fill<<<512, 256>>>(static_cast<__half*>(X), size_t(s.M) * s.K, 1u);
      fill<<<512, 256>>>(static_cast<__half*>(W), size_t(s.N) * s.K, 2u);
    } else {
      fill<<<512, 256>>>(static_cast<float*>(X), size_t(s.M) * s.K, 1u);
      fill<<<512, 256>>>(static_cast<float*>(W), size_t(s.N) * s.K, 2u);
    }
    const float one = 1.f, zero = 0.f;
    // row-major C[M, N] = X[M, K] W[N, K]^T  ==  column-major C^T[N, M] = W^T... : op(W) = T on the [K, N] view
    auto def = [&]() {
      CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.N, s.M, s.K, &one, W, ab, s.K, X, ab, s.K, &zero, C0, CUDA_R_32F,
                      s.N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    const double gflop = 2.0 * s.M * s.N * s.K * 1e-9;
    const float td = time_ms(def, 15);
    std::printf("== %s: M=%d N=%d K=%d %s  default %.1f us (%.1f TFLOP/s)\n", s.what.c_str(), s.M, s.N, s.K,
                s.f16 ? "f16" : "f32", td * 1e3, gflop / td);
    if (!s.f16 && s.K % 2 == 0) {
      // The shipped float32 K split (standard_forward.cu): two K halves in one strided-batched call, C [M, 2, N].
      const int K2 = s.K / 2;
      float* C2;
      CK(cudaMalloc(&C2, sizeof(float) * 2 * s.M * s.N));
      auto split = [&]() {
        CB(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.N, s.M, K2, &one, W, CUDA_R_32F, s.K, K2, X,
                                      CUDA_R_32F, s.K, K2, &zero, C2, CUDA_R_32F, 2 * s.N, s.N, 2, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
      };
      const float tk = time_ms(split, 15);
      std::printf("  shipped K split (2 halves, batched): %.1f us (%.1f TFLOP/s, %.2fx default)\n", tk * 1e3,
                  gflop / tk, td / tk);
      CK(cudaFree(C2));
    }
    if (!s.f16) {  // cuBLAS's float32 emulation on bfloat16 tensor cores (3 x bf16 per operand), and TF32 for scale
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
    cublasLtMatmulDesc_t op;  // (16-bit: operands 16F, C float32, as the split state's product)
    CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtMatrixLayout_t la, lb, lc;
    CB(cublasLtMatrixLayoutCreate(&la, ab, s.K, s.N, s.K));
    CB(cublasLtMatrixLayoutCreate(&lb, ab, s.K, s.M, s.K));
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
