// Helpers of the lab programs that call openrnn's C API (call_split, batch_split_probe): RNN_OK(x) checks a status
// (print where and why, exit 1); fill<T> and fill16 write deterministic uniform values on the device; split_list and
// median parse a comma list and take a median. Single-translation-unit programs: everything here is inline or a
// template.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "openrnn/openrnn.h"

#define RNN_OK(x)                                                                                                 \
  do {                                                                                                            \
    openrnn_status s_ = (x);                                                                                      \
    if (s_ != OPENRNN_STATUS_SUCCESS) {                                                                           \
      std::fprintf(stderr, "%s:%d %s: %s: %s\n", __FILE__, __LINE__, #x, openrnn_status_string(s_),               \
                   openrnn_last_error());                                                                         \
      std::exit(1);                                                                                               \
    }                                                                                                             \
  } while (0)

// Uniform values in [-scale, scale) from a hash of the index and a seed (deterministic, no host copies).
template <typename T>
__global__ void fill_kernel(T* p, size_t n, float scale, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    const float u = (x & 0xffffff) / float(1 << 24) * 2.f - 1.f;
    p[i] = T(u * scale);
  }
}

template <typename T>
void fill(void* p, size_t n, float scale, unsigned seed) {
  if (n) fill_kernel<T><<<256, 256>>>(static_cast<T*>(p), n, scale, seed);
}

// fill for a 16-bit openrnn data type (float16, else bfloat16).
inline void fill16(openrnn_data_type dt, void* p, size_t n, float scale, unsigned seed) {
  if (dt == OPENRNN_DATA_HALF)
    fill<__half>(p, n, scale, seed);
  else
    fill<__nv_bfloat16>(p, n, scale, seed);
}

inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string t;
  while (std::getline(ss, t, ',')) v.push_back(t);
  return v;
}

inline float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
