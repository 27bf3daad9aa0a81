// Shared CUDA plumbing: return-code checks that throw openrnn::Error, storage-type traits (T = storage type,
// S = arithmetic type: double for float64, float otherwise), device-side conversions, and a device guard.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "error.h"
#include "openrnn/openrnn.h"

namespace openrnn {
namespace cuda {

[[noreturn]] void throw_cuda(cudaError_t e, const char* what, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t s, const char* what, const char* file, int line);

#define OPENRNN_CUDA_CHECK(call)                                                            \
  do {                                                                                      \
    const cudaError_t openrnn_e_ = (call);                                                  \
    if (openrnn_e_ != cudaSuccess) ::openrnn::cuda::throw_cuda(openrnn_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define OPENRNN_CUBLAS_CHECK(call)                                                            \
  do {                                                                                        \
    const cublasStatus_t openrnn_s_ = (call);                                                 \
    if (openrnn_s_ != CUBLAS_STATUS_SUCCESS) ::openrnn::cuda::throw_cublas(openrnn_s_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors only (no synchronisation). cudaGetLastError clears a
// non-sticky launch error, so one failed launch is not reported again by every later check.
#define OPENRNN_LAUNCH_CHECK(name) OPENRNN_CUDA_CHECK(cudaGetLastError())

// Sets the current device for the lifetime of the guard and restores the caller's afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
  bool changed_ = false;
};

// ---- storage-type traits -------------------------------------------------------------------------------------------
template <typename T>
struct Arith {
  using type = float;
};
template <>
struct Arith<double> {
  using type = double;
};

template <typename T>
struct CudaType;
template <>
struct CudaType<float> {
  static constexpr cudaDataType_t value = CUDA_R_32F;
};
template <>
struct CudaType<double> {
  static constexpr cudaDataType_t value = CUDA_R_64F;
};
template <>
struct CudaType<__half> {
  static constexpr cudaDataType_t value = CUDA_R_16F;
};
template <>
struct CudaType<__nv_bfloat16> {
  static constexpr cudaDataType_t value = CUDA_R_16BF;
};

// ld<S>(p): storage -> arithmetic type; st(p, v): arithmetic -> storage, round to nearest even.
__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ double to_f(double v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename S, typename T>
__device__ __forceinline__ S ld(const T* p) {
  return static_cast<S>(to_f(*p));
}
__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(double* p, double v) { *p = v; }
__device__ __forceinline__ void st(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// float -> 16-bit storage type, round to nearest even (the split-state helpers of standard_kernels.cuh).
template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Row of vector (t, b) of a [T, B, W] (row_t = B, row_b = 1) or [B, T, W] (row_t = 1, row_b = T) tensor:
// t * row_t + b * row_b + base. base != 0 maps a buffer that holds only the steps [t0, t1) of the sequences (the
// layer wavefront's chunk of the input projection, standard_forward.cu).
struct RowMap {
  long long row_t = 0, row_b = 0, base = 0;
  __host__ __device__ long long row(int t, int b) const { return t * row_t + b * row_b + base; }
};
inline RowMap seq_major_rows(int B) { return RowMap{B, 1}; }
inline RowMap layout_rows(openrnn_layout layout, int T, int B) {
  return layout == OPENRNN_LAYOUT_SEQ_MAJOR ? RowMap{B, 1} : RowMap{1, T};
}

inline unsigned grid_for(long long n, int block) {
  const long long g = (n + block - 1) / block;
  return static_cast<unsigned>(g < 1 ? 1 : (g > 0x7fffffffLL ? 0x7fffffffLL : g));
}

// ---- cp.async (16 B, L2 only; sm_80+) -------------------------------------------------------------------------
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gsrc) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(gsrc) : "memory");
}
// src_bytes = 0 writes 16 zero bytes and reads nothing (src must still be a valid address).
__device__ __forceinline__ void cp_async16_zfill(void* smem_dst, const void* gsrc, int src_bytes) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(gsrc), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
// Waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- programmatic dependent launch (sm_90) ------------------------------------------------------------------------
// A kernel launched as a programmatic dependent of the kernel before it on its stream (launch_step below with pdl, or
// cudaLaunchAttributeProgrammaticStreamSerialization) may start before that kernel has finished. pdl_wait() blocks
// until the prior grid has completed and its writes are visible; without such a dependency it returns at once.
// pdl_trigger(): this CTA lets the grid's dependents start (they are launched once every CTA has triggered or exited;
// without it, once the grid has finished).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Asks for the 128-byte line holding p to be brought into L2 (prefetch.global.L2, a hint: no register is written and
// nothing waits for it). Callers pass addresses inside their buffers. mode 1: normal eviction priority, 2: evict_last
// (kept ahead of normal lines when L2 evicts).
__device__ __forceinline__ void prefetch_l2(const void* p, int mode) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (mode == 2)
    asm volatile("prefetch.global.L2::evict_last [%0];\n" ::"l"(p));
  else
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
#endif
}

// How a step kernel is launched beyond grid, block and shared memory: as a programmatic dependent of the previous
// kernel on the stream (pdl: the kernel must call pdl_wait() before it touches anything that kernel, or any earlier
// work, writes); in thread-block clusters of `cluster` blocks along x (> 1: grid.x a multiple of it); with a
// preferred shared-memory carveout for this launch (carveout >= 0, percent; it takes precedence over the
// function's attribute; -1: none).
struct StepLaunch {
  bool pdl = false;
  unsigned cluster = 1;
  int carveout = -1;
};
template <typename... P, typename... A>
void launch_step_ex(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st, StepLaunch how,
                    A&&... args) {
  if (!how.pdl && how.cluster <= 1 && how.carveout < 0) {
    kernel<<<grid, block, smem, st>>>(static_cast<A&&>(args)...);
    return;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  cudaLaunchAttribute at[3];
  unsigned n = 0;
  if (how.pdl) {
    at[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (how.cluster > 1) {
    at[n].id = cudaLaunchAttributeClusterDimension;
    at[n].val.clusterDim.x = how.cluster;
    at[n].val.clusterDim.y = 1;
    at[n++].val.clusterDim.z = 1;
  }
  if (how.carveout >= 0) {
    at[n].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    at[n++].val.sharedMemCarveout = static_cast<unsigned>(how.carveout);
  }
  cfg.attrs = at;
  cfg.numAttrs = n;
  OPENRNN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<A&&>(args)...));
}
// Launches kernel<<<grid, block, smem, st>>>(args...), as a programmatic dependent of the previous kernel on st where
// pdl is set (as StepLaunch::pdl).
template <typename... P, typename... A>
void launch_step(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t st, bool pdl, A&&... args) {
  StepLaunch how;
  how.pdl = pdl;
  launch_step_ex(kernel, grid, block, smem, st, how, static_cast<A&&>(args)...);
}

}  // namespace cuda
}  // namespace openrnn
