// l2_affinity_probe (session 33): how much of a buffer that every step re-reads stays in the H100's L2, as a function
// of its size and of which SM reads which part of it.
//
// Why. A STANDARD step at 16-bit H = 2048 re-reads W_hh (LSTM 32 MB, GRU 24 MB) every step. The L2 is 50 MB, but in
// two partitions; if a line read by SMs of both partitions is held in both, the capacity for data that every SM reads
// is about half. Whether a line is read from one side only depends on which SM reads which part of the buffer in
// each launch: the step kernels give block b the same W rows in every step, but block b need not run on the same SM.
//
// What it does. One launch = every block reads its slice of the buffer (float4 loads, a sum kept live) once; the
// buffer is read by `reps` launches in a row (after 3 warm-up launches) and the time per launch gives an effective
// read bandwidth. The grid is one block per SM (large dynamic shared memory forces that), and the slice of a block is:
//   fixed   slice = blockIdx.x (what the step kernels do)
//   smid    slice = the SM's id (%smid): the same SM reads the same slice in every launch
//   rotate  slice = (blockIdx.x + launch) % blocks: the SM of a slice changes every launch
// Build: nvcc -O3 -std=c++17 -arch=sm_90a dev/lab/l2_affinity_probe.cu -o l2_affinity_probe
// Run:   l2_affinity_probe [MB list, default 4,8,16,20,24,28,32,40,48,64] [reps, default 50]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "lab_check.h"  // CK

__device__ unsigned smid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(r));
  return r;
}

// buf: n4 float4 values in `blocks` slices; out[slice] keeps the sums live.
__global__ void __launch_bounds__(512) read_slices(const float4* __restrict__ buf, size_t n4, int mode, int launch,
                                                   float* out) {
  extern __shared__ float pad[];  // only to force one block per SM
  const int blocks = gridDim.x;
  int slice = blockIdx.x;
  if (mode == 1) slice = static_cast<int>(smid()) % blocks;
  if (mode == 2) slice = (blockIdx.x + launch) % blocks;
  const size_t per = (n4 + blocks - 1) / blocks;
  const size_t b = per * slice, e = b + per < n4 ? b + per : n4;
  float s = 0.f;
  for (size_t i = b + threadIdx.x; i < e; i += blockDim.x) {
    const float4 v = __ldg(buf + i);
    s += v.x + v.y + v.z + v.w;
  }
  if (s == 12345.f) out[slice] = s + pad[threadIdx.x];  // practically never: keeps the loads
}

int main(int argc, char** argv) {
  std::vector<int> mbs = {4, 8, 16, 20, 24, 28, 32, 40, 48, 64};
  if (argc > 1) {
    mbs.clear();
    std::stringstream ss(argv[1]);
    std::string t;
    while (std::getline(ss, t, ',')) mbs.push_back(std::atoi(t.c_str()));
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int blocks = prop.multiProcessorCount;
  const int smem = static_cast<int>(prop.sharedMemPerBlockOptin);  // one block per SM
  CK(cudaFuncSetAttribute(read_slices, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::printf("# %s, %d SMs, L2 %d MB, persisting L2 max %d MB; one block of 512 threads per SM; %d launches\n",
              prop.name, blocks, prop.l2CacheSize >> 20, prop.persistingL2CacheMaxSize >> 20, reps);
  std::printf("MB,mode,us_per_launch,GB_per_s\n");
  float* out = nullptr;
  CK(cudaMalloc(&out, blocks * sizeof(float)));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const char* names[3] = {"fixed", "smid", "rotate"};
  for (int mb : mbs) {
    const size_t bytes = size_t(mb) << 20, n4 = bytes / 16;
    float4* buf = nullptr;
    CK(cudaMalloc(&buf, bytes));
    CK(cudaMemset(buf, 0, bytes));
    for (int mode = 0; mode < 3; ++mode) {
      for (int w = 0; w < 3; ++w) read_slices<<<blocks, 512, smem>>>(buf, n4, mode, w, out);
      CK(cudaEventRecord(e0));
      for (int r = 0; r < reps; ++r) read_slices<<<blocks, 512, smem>>>(buf, n4, mode, r + 3, out);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0.f;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      const double us = 1000.0 * ms / reps;
      std::printf("%d,%s,%.2f,%.0f\n", mb, names[mode], us, bytes / (us * 1e3));
    }
    CK(cudaFree(buf));
  }
  CK(cudaGetLastError());
  return 0;
}
