// CK(x): the standalone lab programs' CUDA runtime check (print where and why, exit 1); CB(x) the same for a cuBLAS
// status. Included by l2_affinity_probe, l2_pingpong, xproj_splitk and xproj_wave_split, which build alone with nvcc
// (the include resolves next to them), and by call_split and batch_split_probe.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

#define CB(x)                                                                               \
  do {                                                                                      \
    const int s_ = static_cast<int>(x);                                                     \
    if (s_ != 0) {                                                                          \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, s_);    \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)
