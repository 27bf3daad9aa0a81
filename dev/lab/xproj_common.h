// What the float32 input-projection labs (xproj_wave_split.cu, xproj_pinned_tile.cu) share: the shape list and its
// command-line form, the operands' fill, and a bench of two streams with a cuBLAS handle and a workspace each that
// times a body between events after flushing L2 (as openrnn-bench does before each call). Header-only; the programs
// build alone with nvcc (the include resolves next to them).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "lab_check.h"  // CK, CB

// The projection C[M, N] = X[M, K] W[N, K]^T (M = T*B, N = G*H, K = I) and the cuBLAS workspace per handle.
struct XprojShape {
  int M, N, K, ws_mib;
  std::string what;
};

// The given defaults, or the shapes on the command line as M:N:K:wsMiB[:name]. False on a malformed argument.
inline bool xproj_shapes(int argc, char** argv, std::vector<XprojShape>* shapes) {
  if (argc <= 1) return true;
  shapes->clear();
  for (int i = 1; i < argc; ++i) {
    XprojShape s{};
    char what[64] = {0};
    if (std::sscanf(argv[i], "%d:%d:%d:%d:%63s", &s.M, &s.N, &s.K, &s.ws_mib, what) < 4) {
      std::printf("bad shape '%s' (M:N:K:wsMiB[:name])\n", argv[i]);
      return false;
    }
    s.what = what[0] ? what : argv[i];
    shapes->push_back(s);
  }
  return true;
}

__global__ void xproj_fill(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned v = unsigned(i) * 2654435761u ^ seed;
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    p[i] = float(v >> 8) / 16777216.f - 0.5f;
  }
}

// The operands of one shape, allocated and filled (X seed 1, W seed 2; C unfilled), freed at scope exit.
struct XprojOperands {
  float *X = nullptr, *W = nullptr, *C = nullptr;
  explicit XprojOperands(const XprojShape& s) {
    CK(cudaMalloc(&X, sizeof(float) * s.M * s.K));
    CK(cudaMalloc(&W, sizeof(float) * s.N * s.K));
    CK(cudaMalloc(&C, sizeof(float) * s.M * s.N));
    xproj_fill<<<512, 256>>>(X, size_t(s.M) * s.K, 1u);
    xproj_fill<<<512, 256>>>(W, size_t(s.N) * s.K, 2u);
    CK(cudaDeviceSynchronize());
  }
  ~XprojOperands() {
    cudaFree(C);
    cudaFree(W);
    cudaFree(X);
  }
  XprojOperands(const XprojOperands&) = delete;
  XprojOperands& operator=(const XprojOperands&) = delete;
};

// Two non-blocking streams s1 / s2 with handles h1 / h2 (32 MiB of workspace each; set_ws picks how much of it cuBLAS
// may use), fork / join events, and the L2 flush.
struct XprojBench {
  cudaDeviceProp prop{};
  cudaStream_t s1 = nullptr, s2 = nullptr;
  cublasHandle_t h1 = nullptr, h2 = nullptr;
  void *ws1 = nullptr, *ws2 = nullptr, *flush = nullptr;
  size_t flush_bytes = size_t(128) << 20;
  cudaEvent_t ea = nullptr, eb = nullptr, fork_ev = nullptr, join_ev = nullptr;

  XprojBench() {
    CK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CB(cublasCreate(&h1));
    CB(cublasCreate(&h2));
    CB(cublasSetStream(h1, s1));
    CB(cublasSetStream(h2, s2));
    CK(cudaMalloc(&ws1, size_t(32) << 20));
    CK(cudaMalloc(&ws2, size_t(32) << 20));
    CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaEventCreate(&ea));
    CK(cudaEventCreate(&eb));
    CK(cudaEventCreateWithFlags(&fork_ev, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join_ev, cudaEventDisableTiming));
  }
  void set_ws(size_t bytes) const {
    CB(cublasSetWorkspace(h1, ws1, bytes));
    CB(cublasSetWorkspace(h2, ws2, bytes));
  }
  // s2 waits for s1 (before a two-stream body), and s1 for s2 (after it).
  void fork() const {
    CK(cudaEventRecord(fork_ev, s1));
    CK(cudaStreamWaitEvent(s2, fork_ev, 0));
  }
  void join() const {
    CK(cudaEventRecord(join_ev, s2));
    CK(cudaStreamWaitEvent(s1, join_ev, 0));
  }
  // Median over `reps` repeats (after `warm` more) of body() timed on s1, L2 flushed before each.
  template <typename F>
  float time_us(F body, int reps, int warm = 3) const {
    std::vector<float> v;
    for (int r = 0; r < reps + warm; ++r) {
      CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, s1));
      CK(cudaEventRecord(ea, s1));
      body();
      CK(cudaEventRecord(eb, s1));
      CK(cudaEventSynchronize(eb));
      float ms;
      CK(cudaEventElapsedTime(&ms, ea, eb));
      if (r >= warm) v.push_back(ms * 1e3f);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};
