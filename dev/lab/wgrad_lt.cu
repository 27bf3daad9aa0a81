// wgrad_lt (session 53, lab): the 16-bit weight-gradient GEMM of a small-batch training call, dW [M = G*H, N] =
// dG^T X (dG [K = T*B][M], X [K][N], both row-major as the reserve holds them; float32 accumulation, 16-bit result),
// timed on every cuBLASLt configuration worth trying, against cublasGemmEx's default (what src/cuda/gemm.cu calls).
//
// Why. Skipping backward_weights (session 53, run 1) bounds its share of a 16-bit training call at 2.5-4.2% at B = 1,
// 5.2-6.3% at B = 4 and 7.8-9.5% at B = 16 (H = 256 / 512): GRU H = 256 B = 16 spends ~16 µs on 1.26 GFLOP, 76 TFLOPS.
// The output is small (768 x 256) and K long (1600): a tile per CTA leaves most SMs idle unless K is split.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90a dev/lab/wgrad_lt.cu -lcublasLt -lcublas -o wgrad_lt (or the lab's CMake)
// Run:   ./wgrad_lt                 the grid's shapes: G in {3, 4}, H in {256, 512, 1024}, N = H,
//                                   K in {100, 400, 1600, 6400}
//        ./wgrad_lt M:N:K ...       given shapes
// Prints per shape the median µs per launch of a CUDA graph of 10 back-to-back launches (warm L2: dG and X were just
// written in a training call) for: cublasGemmEx with 4 and 32 MiB of workspace; every heuristic cuBLASLt algorithm
// (32 MiB); the three fastest of those with split-K forced to 2-32 (reduction in the compute type: deterministic).
// Each configuration's result is checked bitwise against a second launch (run to run) and against the default
// (max relative difference).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lab_check.h"  // CK, CB

namespace {

struct Shape {
  int M, N, K;
};

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

cudaStream_t g_stream = 0;  // the stream launches go to (time_it's, during a measurement)

struct Bufs {
  __half *dG = nullptr, *X = nullptr, *C = nullptr;
  void* ws = nullptr;
  size_t ws_bytes = size_t(32) << 20;
};

// Median over 15 replays of a CUDA graph holding 10 launches back to back, per launch: the GPU-side cost of one GEMM
// inside a graph, as a training call's graph replays it (no host launch latency in the number).
template <typename F>
float time_it(F&& launch, int reps = 15) {
  constexpr int kPer = 10;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  g_stream = st;
  launch();  // outside the graph once (lazy initialisation)
  CK(cudaStreamSynchronize(st));
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kPer; ++i) launch();
  CK(cudaStreamEndCapture(st, &g));
  cudaGraphExec_t ge;
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ge, st));
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(a, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(b, st));
    CK(cudaEventSynchronize(b));
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.f / kPer);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaStreamDestroy(st));
  g_stream = 0;
  return median(t);
}

std::vector<uint16_t> fetch(const __half* C, size_t n) {
  std::vector<uint16_t> h(n);
  CK(cudaMemcpy(h.data(), C, n * 2, cudaMemcpyDeviceToHost));
  return h;
}

double max_rel(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  double m = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    __half_raw ra, rb;
    ra.x = a[i];
    rb.x = b[i];
    const double x = __half2float(__half(ra)), y = __half2float(__half(rb));
    scale = std::max(scale, std::fabs(y));
    m = std::max(m, std::fabs(x - y));
  }
  return scale > 0 ? m / scale : m;
}

void run_shape(cublasHandle_t h, cublasLtHandle_t lt, const Shape& s, Bufs& bf) {
  const int M = s.M, N = s.N, K = s.K;
  const size_t nc = size_t(M) * N;
  // The default, as gemm.cu: column-major C^T [N, M] = X^T-as-stored [N, K] (op N, ld N) x dG-as-stored^T (op T, ld M)
  const float one = 1.f, zero = 0.f;
  auto gemmex = [&](size_t ws) {
    CB(cublasSetStream(h, g_stream));
    CB(cublasSetWorkspace(h, bf.ws, ws));
    CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, N, M, K, &one, bf.X, CUDA_R_16F, N, bf.dG, CUDA_R_16F, M, &zero, bf.C,
                    CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  const float t4 = time_it([&] { gemmex(size_t(4) << 20); });
  gemmex(size_t(4) << 20);
  CK(cudaDeviceSynchronize());
  const std::vector<uint16_t> ref = fetch(bf.C, nc);
  const float t32 = time_it([&] { gemmex(bf.ws_bytes); });
  const double gflop = 2.0 * M * N * K * 1e-9;
  std::printf("shape M=%d N=%d K=%d (%.2f GFLOP): gemmex 4MiB %.2f us, 32MiB %.2f us\n", M, N, K, gflop, t4, t32);

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  const cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_T;
  CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, N, K, N));
  CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, M, K, M));
  CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, N, M, N));
  cublasLtMatmulPreference_t pref = nullptr;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bf.ws_bytes,
                                          sizeof bf.ws_bytes));
  constexpr int kWant = 16;
  cublasLtMatmulHeuristicResult_t res[kWant] = {};
  int n = 0;
  CB(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, kWant, res, &n));
  struct Tried {
    float us;
    cublasLtMatmulAlgo_t algo;
    std::string what;
  };
  std::vector<Tried> tried;
  auto attr = [](const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t at) {
    int v = -1;
    size_t w = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&a, at, &v, sizeof v, &w);
    return v;
  };
  auto try_algo = [&](const cublasLtMatmulAlgo_t& algo, const char* tag) {
    cublasLtMatmulHeuristicResult_t chk = {};
    if (cublasLtMatmulAlgoCheck(lt, op, la, lb, lc, lc, &algo, &chk) != CUBLAS_STATUS_SUCCESS) return;
    if (chk.workspaceSize > bf.ws_bytes) return;
    auto launch = [&] {
      CB(cublasLtMatmul(lt, op, &one, bf.X, la, bf.dG, lb, &zero, bf.C, lc, bf.C, lc, &algo, bf.ws, bf.ws_bytes, g_stream));
    };
    const float us = time_it(launch);
    launch();
    CK(cudaDeviceSynchronize());
    const std::vector<uint16_t> r1 = fetch(bf.C, nc);
    launch();
    CK(cudaDeviceSynchronize());
    const std::vector<uint16_t> r2 = fetch(bf.C, nc);
    const bool same = std::memcmp(r1.data(), r2.data(), nc * 2) == 0;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s algo %d tile %d stages %d splitk %d red %d swizzle %d ws %zu: %.2f us (%.0f TFLOPS)%s, vs default %.1e",
                  tag, attr(algo, CUBLASLT_ALGO_CONFIG_ID), attr(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                  attr(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID), attr(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                  attr(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME), attr(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                  chk.workspaceSize, us, gflop / us * 1e3, same ? "" : " NOT REPRODUCIBLE", max_rel(r1, ref));
    tried.push_back({us, algo, buf});
  };
  for (int i = 0; i < n; ++i)
    if (res[i].state == CUBLAS_STATUS_SUCCESS) try_algo(res[i].algo, "heur");
  std::vector<Tried> heur = tried;
  std::sort(heur.begin(), heur.end(), [](const Tried& a, const Tried& b) { return a.us < b.us; });
  for (size_t i = 0; i < heur.size() && i < 3; ++i)
    for (int sk : {2, 3, 4, 6, 8, 12, 16, 24, 32}) {
      if (K / sk < 32) break;
      cublasLtMatmulAlgo_t a = heur[i].algo;
      const uint32_t red = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk, sizeof sk) != 0) continue;
      if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red) != 0)
        continue;
      try_algo(a, "splitk");
    }
  std::sort(tried.begin(), tried.end(), [](const Tried& a, const Tried& b) { return a.us < b.us; });
  for (size_t i = 0; i < tried.size() && i < 6; ++i) std::printf("  %s\n", tried[i].what.c_str());
  std::printf("  BEST M=%d N=%d K=%d: %.2f us against gemmex %.2f (%.2fx)\n", M, N, K,
              tried.empty() ? 0.f : tried[0].us, t4, tried.empty() ? 0.f : t4 / tried[0].us);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatmulDescDestroy(op);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    Shape s{};
    if (std::sscanf(argv[i], "%d:%d:%d", &s.M, &s.N, &s.K) == 3) shapes.push_back(s);
  }
  if (shapes.empty())
    for (int H : {256, 512, 1024})
      for (int G : {3, 4})
        for (int K : {100, 400, 1600, 6400}) shapes.push_back({G * H, H, K});
  size_t maxA = 0, maxB = 0, maxC = 0;
  for (const Shape& s : shapes) {
    maxA = std::max(maxA, size_t(s.K) * s.M);
    maxB = std::max(maxB, size_t(s.K) * s.N);
    maxC = std::max(maxC, size_t(s.M) * s.N);
  }
  Bufs bf;
  CK(cudaMalloc(&bf.dG, maxA * 2));
  CK(cudaMalloc(&bf.X, maxB * 2));
  CK(cudaMalloc(&bf.C, maxC * 2));
  CK(cudaMalloc(&bf.ws, bf.ws_bytes));
  {  // values of the size a gradient and an activation have
    std::vector<__half> a(maxA), b(maxB);
    uint32_t r = 12345;
    auto rnd = [&] {
      r = r * 1664525u + 1013904223u;
      return (r >> 8) * (1.0f / 16777216.0f) - 0.5f;
    };
    for (auto& v : a) v = __float2half(0.01f * rnd());
    for (auto& v : b) v = __float2half(rnd());
    CK(cudaMemcpy(bf.dG, a.data(), maxA * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(bf.X, b.data(), maxB * 2, cudaMemcpyHostToDevice));
  }
  cublasHandle_t h;
  CB(cublasCreate(&h));
  cublasLtHandle_t lt;
  CB(cublasLtCreate(&lt));
  for (const Shape& s : shapes) run_shape(h, lt, s, bf);
  cublasLtDestroy(lt);
  cublasDestroy(h);
  return 0;
}
