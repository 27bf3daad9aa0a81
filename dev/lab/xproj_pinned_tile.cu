// Lab (session 43, after run 8): the float32 input projection C[M, N] = X[M, K] W[N, K]^T on one pinned cuBLASLt
// kernel, the 256 x 64 tile without split-K that cuBLAS's heuristic takes at M = 1024 / 6336 but not at 1600 / 6400.
// Questions for a rule that does not depend on the heuristic list: (1) how its time steps with M, i.e. how many of
// its tiles one wave holds on this GPU (run 8's rule read that from cuBLASLt's wavesCount, which did not follow one
// occupancy across N); (2) the split with the whole-wave part pinned to it (rows [0, M1)) and the rest on cuBLAS's
// default on a second stream, against the default in one call.
// Standalone: nvcc -O2 -arch=sm_90a xproj_pinned_tile.cu -lcublasLt -lcublas
// usage: xproj_pinned_tile                        the grid's float32 shapes
//        xproj_pinned_tile M:N:K:wsMiB[:name] ...   given shapes (wsMiB: workspace per handle)
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "xproj_common.h"  // XprojShape, xproj_shapes, xproj_fill, XprojBench; CK, CB

// The column-major problem cuBLAS sees for rows [0, m): C^T [N, m] = op(W) [N, K] x^T [K, m], op(W) = transpose.
struct LtProblem {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  LtProblem(int m, int N, int K) {
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, K, N, K));
    CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, m, K));
    CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, N, m, N));
  }
  ~LtProblem() {
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatmulDescDestroy(op);
  }
};

int attr(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t what) {
  int v = -1;
  size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&a, what, &v, sizeof v, &w);
  return v;
}

int main(int argc, char** argv) {
  std::vector<XprojShape> shapes = {{1600, 4096, 1024, 4, "LSTM H=1024 B=16"},
                               {6400, 2048, 512, 32, "LSTM H=512 B=64"},
                               {1600, 3072, 1024, 4, "GRU H=1024 B=16"},
                               {6400, 3072, 1024, 4, "GRU H=1024 B=64"},
                               {6400, 1536, 512, 32, "GRU H=512 B=64"}};
  if (!xproj_shapes(argc, argv, &shapes)) return 2;
  const XprojBench bench;
  const cudaStream_t s1 = bench.s1, s2 = bench.s2;
  const cublasHandle_t h1 = bench.h1, h2 = bench.h2;
  void* const ws1 = bench.ws1;
  const cudaDeviceProp& prop = bench.prop;
  cublasLtHandle_t lt = reinterpret_cast<cublasLtHandle_t>(h1);  // a cuBLAS handle is a cuBLASLt handle
  const float one = 1.f, zero = 0.f;
  for (const XprojShape& s : shapes) {
    const size_t wsb = size_t(s.ws_mib) << 20;
    bench.set_ws(wsb);
    const XprojOperands ops(s);  // freed at the end of the iteration, also on `continue`
    float *const X = ops.X, *const W = ops.W, *const C = ops.C;
    auto time_us = [&](auto body, int reps) { return bench.time_us(body, reps, 2); };
    auto dflt = [&](cublasHandle_t h, int r0, int m) {
      if (m <= 0) return;
      CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.N, m, s.K, &one, W, CUDA_R_32F, s.K, X + size_t(r0) * s.K,
                      CUDA_R_32F, s.K, &zero, C + size_t(r0) * s.N, CUDA_R_32F, s.N, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
    };
    // The 256 x 64, split-K-free algorithm: from the heuristic list at M, else at the whole-wave sizes where cuBLAS
    // takes it by default.
    cublasLtMatmulAlgo_t pin{};
    bool found = false;
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    for (int m : {s.M, 1024, 6336, 2048, 512}) {
      LtProblem p(m, s.N, s.K);
      cublasLtMatmulHeuristicResult_t res[32] = {};
      int n = 0;
      if (cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.la, p.lb, p.lc, p.lc, pref, 32, res, &n) != CUBLAS_STATUS_SUCCESS)
        continue;
      for (int i = 0; i < n && !found; ++i)
        if (attr(res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID) == CUBLASLT_MATMUL_TILE_256x64 &&
            attr(res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) == 1) {
          pin = res[i].algo;
          found = true;
          std::printf("== %s: M=%d N=%d K=%d ws %d MiB: 256x64 found in the list at M=%d (rank %d of %d; algo %d "
                      "stages %d)\n",
                      s.what.c_str(), s.M, s.N, s.K, s.ws_mib, m, i, n, attr(res[i].algo, CUBLASLT_ALGO_CONFIG_ID),
                      attr(res[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID));
        }
      if (found) break;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    const float t0 = time_us([&] { dflt(h1, 0, s.M); }, 9);
    // (0) Every algorithm of cuBLASLt's heuristic list at the full M, timed one call each: how far the default pick
    // is from the list's best, and which tile / stages / split-K that best has.
    {
      LtProblem p(s.M, s.N, s.K);
      cublasLtMatmulPreference_t pf;
      CB(cublasLtMatmulPreferenceCreate(&pf));
      CB(cublasLtMatmulPreferenceSetAttribute(pf, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
      cublasLtMatmulHeuristicResult_t res[64] = {};
      int n = 0;
      CB(cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.la, p.lb, p.lc, p.lc, pf, 64, res, &n));
      cublasLtMatmulPreferenceDestroy(pf);
      float tb = 1e30f;
      int ib = -1;
      std::printf("   list at M=%d (%d algorithms; default one call %.1f us): rank:algo/tile/stages/splitK/waves us\n  ",
                  s.M, n, t0);
      for (int i = 0; i < n; ++i) {
        const cublasLtMatmulAlgo_t a = res[i].algo;
        const float t = time_us(
            [&] {
              CB(cublasLtMatmul(lt, p.op, &one, W, p.la, X, p.lb, &zero, C, p.lc, C, p.lc, &a, ws1, wsb, s1));
            },
            5);
        std::printf(" %d:%d/%d/%d/%d/%.2f %.1f", i, attr(a, CUBLASLT_ALGO_CONFIG_ID), attr(a, CUBLASLT_ALGO_CONFIG_TILE_ID),
                    attr(a, CUBLASLT_ALGO_CONFIG_STAGES_ID), attr(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                    res[i].wavesCount, t);
        if (t < tb) tb = t, ib = i;
      }
      std::printf("\n   LISTBEST %s: rank %d %.1f us against default %.1f (%.3fx)\n", s.what.c_str(), ib, tb, t0,
                  t0 / tb);
    }
    if (!found) {
      std::printf("== %s: no 256x64 split-K-free algorithm in the lists; default one call %.1f us\n", s.what.c_str(),
                  t0);
      continue;
    }
    auto pinned = [&](cublasHandle_t h, void* ws, int r0, int m, float* wc) {
      LtProblem p(m, s.N, s.K);
      cublasLtMatmulHeuristicResult_t chk{};
      if (cublasLtMatmulAlgoCheck(reinterpret_cast<cublasLtHandle_t>(h), p.op, p.la, p.lb, p.lc, p.lc, &pin, &chk) !=
          CUBLAS_STATUS_SUCCESS)
        return false;
      if (wc) *wc = chk.wavesCount;
      CB(cublasLtMatmul(reinterpret_cast<cublasLtHandle_t>(h), p.op, &one, W, p.la, X + size_t(r0) * s.K, p.lb, &zero,
                        C + size_t(r0) * s.N, p.lc, C + size_t(r0) * s.N, p.lc, &pin, ws, wsb,
                        h == h1 ? s1 : s2));
      return true;
    };
    // (1) The pinned kernel's time against M: where it steps is where a wave fills.
    const int tn = (s.N + 255) / 256, G = (s.M + 63) / 64;
    const int step = std::max(1, G / 25);
    std::printf("   default one call %.1f us. pinned 256x64 alone, M: us (tiles, cuBLASLt wavesCount)\n   ", t0);
    for (int g = step; g <= G; g += step) {
      const int m = std::min(s.M, g * 64);
      float wc = 0.f;
      if (!pinned(h1, ws1, 0, m, &wc)) {
        std::printf(" %d:check-failed", m);
        continue;
      }
      const float t = time_us([&] { pinned(h1, ws1, 0, m, nullptr); }, 7);
      std::printf(" %d:%.1f(%d,%.2f)", m, t, tn * ((m + 63) / 64), wc);
    }
    std::printf("\n");
    // (2) Splits: rows [0, M1) pinned on s1, the rest on the default on s2, both after the fork; M1 at whole waves
    // of 132 and of 264 tiles.
    float best = 1e30f;
    int best_m1 = 0;
    for (int per : {prop.multiProcessorCount, 2 * prop.multiProcessorCount}) {
      for (int k = 1; k * per <= tn * G; ++k) {
        const int m1 = (k * per / tn) * 64;
        if (m1 <= 0 || m1 >= s.M) continue;
        auto body = [&] {
          bench.fork();
          pinned(h1, ws1, 0, m1, nullptr);
          dflt(h2, m1, s.M - m1);
          bench.join();
        };
        const float t = time_us(body, 7);
        std::printf("   split: pinned %d (%d waves of %d tiles) + default %d: %.1f us (%.3fx one call)\n", m1, k, per,
                    s.M - m1, t, t0 / t);
        if (t < best) {
          best = t;
          best_m1 = m1;
        }
      }
    }
    std::printf("   BEST %s: pinned %d + default %d: %.1f us against %.1f (%.3fx)\n", s.what.c_str(), best_m1,
                s.M - best_m1, best, t0, t0 / best);
  }
  return 0;
}
