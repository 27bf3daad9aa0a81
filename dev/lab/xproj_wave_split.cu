// Lab (session 43): the float32 input projection C[M, N] = X[M, K] W[N, K]^T (M = T*B, N = G*H, K = I) as cuBLAS's
// default in one call, against the same rows split in two calls on two streams (two handles, each with its own
// workspace, as the library's lanes have), so that the second call's tiles run in the SMs that the first call's last,
// partial wave leaves idle. Question: at LSTM float32 H = 1024 B = 16 (1600 x 4096 x 1024, 416 tiles of 128 x 128 on
// 132 SMs: 3.15 waves) is the last wave's idle share worth a split? Also prints the single call's time at M - r to
// show where cuBLAS's time steps with M.
// Standalone: nvcc -O2 -arch=sm_90a xproj_wave_split.cu -lcublas
// usage: xproj_wave_split                        the grid's float32 shapes
//        xproj_wave_split M:N:K:wsMiB[:name] ...   given shapes (wsMiB: cuBLAS workspace per handle)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "xproj_common.h"  // XprojShape, xproj_shapes, xproj_fill, XprojBench; CK, CB

int main(int argc, char** argv) {
  std::vector<XprojShape> shapes = {{1600, 4096, 1024, 4, "LSTM H=1024 B=16"}, {1600, 3072, 1024, 4, "GRU H=1024 B=16"},
                               {6400, 2048, 512, 32, "LSTM H=512 B=64"},  {6400, 1536, 512, 32, "GRU H=512 B=64"},
                               {6400, 4096, 1024, 4, "LSTM H=1024 B=64"}, {6400, 3072, 1024, 4, "GRU H=1024 B=64"},
                               {1600, 2048, 512, 32, "LSTM H=512 B=16"},  {1600, 1536, 512, 32, "GRU H=512 B=16"},
                               {400, 4096, 1024, 32, "LSTM H=1024 B=4"},  {6400, 1024, 256, 32, "LSTM H=256 B=64"}};
  if (!xproj_shapes(argc, argv, &shapes)) return 2;
  const XprojBench bench;
  const cudaStream_t s1 = bench.s1;
  const cublasHandle_t h1 = bench.h1, h2 = bench.h2;
  const cudaDeviceProp& prop = bench.prop;
  const float one = 1.f, zero = 0.f;
  for (const XprojShape& s : shapes) {
    bench.set_ws(size_t(s.ws_mib) << 20);
    const XprojOperands ops(s);
    float *const X = ops.X, *const W = ops.W, *const C = ops.C;
    float* C0 = nullptr;  // the one-call result the splits are compared with
    CK(cudaMalloc(&C0, sizeof(float) * s.M * s.N));
    // rows [r0, r0 + m) on handle h: row-major C = X W^T as column-major C^T = W^T X^T (gemm.cu's operand swap)
    auto gemm = [&](cublasHandle_t h, int r0, int m, float* out) {
      if (m <= 0) return;
      CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.N, m, s.K, &one, W, CUDA_R_32F, s.K, X + size_t(r0) * s.K,
                      CUDA_R_32F, s.K, &zero, out + size_t(r0) * s.N, CUDA_R_32F, s.N, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
    };
    auto time_us = [&](auto body, int reps) { return bench.time_us(body, reps); };
    const double gflop = 2.0 * s.M * s.N * s.K * 1e-9;
    const float t0 = time_us([&] { gemm(h1, 0, s.M, C0); }, 15);
    std::printf("== %s: M=%d N=%d K=%d ws %d MiB: one call %.1f us (%.1f TFLOP/s); 128x128 tiles %d (%.2f waves)\n",
                s.what.c_str(), s.M, s.N, s.K, s.ws_mib, t0, gflop / t0 * 1e3,
                ((s.M + 127) / 128) * ((s.N + 127) / 128),
                double((s.M + 127) / 128) * ((s.N + 127) / 128) / prop.multiProcessorCount);
    std::printf("   one call at M - r:");
    for (int r : {64, 128, 256, 512}) {
      if (r >= s.M) continue;
      const float t = time_us([&] { gemm(h1, 0, s.M - r, C); }, 9);
      std::printf("  r=%d %.1f", r, t);
    }
    std::printf("\n");
    // Splits: the first M1 rows on s1, the rest on s2, both issued after the fork; `rem_first` issues s2's call first.
    float best = 1e30f;
    int best_m1 = 0;
    bool best_rf = false;
    std::vector<int> m1s;
    for (int r : {64, 128, 192, 256, 320, 384, 512, 640, 768, 1024})
      if (r < s.M) m1s.push_back(s.M - r);
    for (int f : {2, 3, 4}) m1s.push_back((s.M / f) / 64 * 64);
    for (int m1 : m1s) {
      for (bool rf : {false, true}) {
        auto body = [&] {
          bench.fork();
          if (rf) gemm(h2, m1, s.M - m1, C);
          gemm(h1, 0, m1, C);
          if (!rf) gemm(h2, m1, s.M - m1, C);
          bench.join();
        };
        const float t = time_us(body, 9);
        std::printf("   split M1=%d + %d %s: %.1f us (%.3fx one call)\n", m1, s.M - m1, rf ? "rem first" : "main first",
                    t, t0 / t);
        if (t < best) {
          best = t;
          best_m1 = m1;
          best_rf = rf;
        }
      }
    }
    // The best split's result against the one call's (cuBLAS may pick another kernel for the smaller M).
    {
      bench.fork();
      gemm(h1, 0, best_m1, C);
      gemm(h2, best_m1, s.M - best_m1, C);
      bench.join();
      gemm(h1, 0, s.M, C0);
      CK(cudaStreamSynchronize(s1));
      std::vector<float> a(size_t(s.M) * s.N), b(a.size());
      CK(cudaMemcpy(a.data(), C, sizeof(float) * a.size(), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(b.data(), C0, sizeof(float) * b.size(), cudaMemcpyDeviceToHost));
      size_t diff = 0;
      double md = 0;
      for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) {
          ++diff;
          md = std::max(md, double(std::fabs(a[i] - b[i])) / (std::fabs(b[i]) + 1e-6));
        }
      std::printf("   BEST %s: split M1=%d %s %.1f us against %.1f (%.3fx); elements differing from one call: %zu "
                  "(max rel %.2e)\n",
                  s.what.c_str(), best_m1, best_rf ? "rem first" : "main first", best, t0, t0 / best, diff, md);
    }
    CK(cudaFree(C0));
  }
  return 0;
}
