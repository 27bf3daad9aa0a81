// exchange_bench: what one step of v6's h exchange costs inside a thread-block cluster, without the matvec.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a -I src -I src/cuda -I include dev/lab/exchange_bench.cu -o exchange_bench
// Run:   ./exchange_bench [T]   (prints one CSV row per mode and shape: cycles and ns per step)
//
// Model of v6's step (persistent_fwd_v6.cuh) with the arithmetic removed: a cluster of C CTAs of 16 warps; every
// warp owns E values of h (UW units x BC columns) and sends each of them to every CTA of the cluster (C*E stores per
// warp); a CTA's buffer holds all N = C*16*E values. Each step a thread waits for the values it reads (N/32 per lane,
// as the matvec reads all of h), sums them (a true data dependency, so no step can start before its input is
// there), and the warp pushes E new values derived from that sum. Modes (how the values travel and how arrival is
// known):
//   0 stasync     st.async 4 B per value, completing on the consumer's one mbarrier (v6 as shipped)
//   1 stasync_v2  st.async 8 B (two values of the warp per store) on the one mbarrier; E must be even
//   2 percta      st.async 4 B, one mbarrier per producer CTA (C mbarriers, each expecting 16*E*4 bytes)
//   3 tagged      no mbarrier: each value travels as one 8-byte word (step tag << 32 | float bits) stored with
//                 st.relaxed.cluster; the reader spins on its own words until their tag is the step's (LL protocol)
//   4 clusterbar  plain st.shared::cluster of 4 B, then barrier.cluster arrive.release / wait.acquire
//   5 baronly     barrier.cluster arrive.release / wait.acquire and no stores (the barrier's own round trip)
//   6 tagged_vol  mode 3 with weak st.shared::cluster.u64 stores and ld.volatile.shared polling
//   7 stasync_tw  mode 0 with the consumer spinning on mbarrier.test_wait (never suspended) instead of try_wait
//   9 stasync_cta mode 0 with the mbarrier's wait at CTA scope (try_wait default .acquire.cta) and the re-arm
//                 (arrive.expect_tx) at CTA scope
//  12 stasync_rearm mode 0 with only the re-arm at CTA scope (the wait keeps .acquire.cluster)
//  10 bar_rel     barrier.cluster arrive.release / wait (no acquire), no stores
//  11 bar_acq     barrier.cluster arrive.relaxed / wait.acquire, no stores
//   8 relaxedbar  plain stores, barrier.cluster arrive.relaxed / wait without acquire (the ordering's cost; the
//                 values read may be stale: timing only)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "persistent_common.cuh"

using namespace openrnn::cuda::persist;

namespace {

__device__ __forceinline__ void st_async_v2(uint32_t addr, float a, float b, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%0], {%1, %2}, [%3];\n" ::"r"(addr),
               "r"(__float_as_uint(a)), "r"(__float_as_uint(b)), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void st_tagged(uint32_t addr, unsigned tag, float v) {
  const unsigned long long w = (static_cast<unsigned long long>(tag) << 32) | __float_as_uint(v);
  asm volatile("st.relaxed.cluster.shared::cluster.u64 [%0], %1;\n" ::"r"(addr), "l"(w) : "memory");
}
__device__ __forceinline__ void st_tagged_weak(uint32_t addr, unsigned tag, float v) {
  const unsigned long long w = (static_cast<unsigned long long>(tag) << 32) | __float_as_uint(v);
  asm volatile("st.shared::cluster.u64 [%0], %1;\n" ::"r"(addr), "l"(w) : "memory");
}
__device__ __forceinline__ unsigned long long ld_volatile(const unsigned long long* p) {
  unsigned long long w;
  asm volatile("ld.volatile.shared.u64 %0, [%1];\n" : "=l"(w) : "r"(smem_u32(p)) : "memory");
  return w;
}
__device__ __forceinline__ void mbar_spin_parity(uint64_t* bar, unsigned parity) {
  const uint32_t a = smem_u32(bar);
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.test_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_wait_parity_cta(uint64_t* bar, unsigned parity) {
  const uint32_t a = smem_u32(bar);
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_arrive_expect_tx_cta(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ unsigned long long ld_tagged(const unsigned long long* p) {
  unsigned long long w;
  asm volatile("ld.relaxed.cluster.shared::cta.u64 %0, [%1];\n" : "=l"(w) : "r"(smem_u32(p)) : "memory");
  return w;
}

template <int C, int E, int MODE>
__global__ void __launch_bounds__(512, 1) exchange_kernel(int T, float* out) {
  constexpr int NW = 16, N = C * NW * E, NR = (N + 31) / 32;
  constexpr int PUSH = (C * E + 31) / 32;
  constexpr int NB = MODE == 2 ? C : 1;
  constexpr bool MBAR = MODE <= 2 || MODE == 7 || MODE == 9 || MODE == 12, TAGGED = MODE == 3 || MODE == 6;
  extern __shared__ float4 smem4[];
  float* hs = reinterpret_cast<float*>(smem4);                                        // [2][N] (modes 0-2, 4)
  unsigned long long* hw = reinterpret_cast<unsigned long long*>(smem4);              // [2][N] (mode 3)
  uint64_t* bar = reinterpret_cast<uint64_t*>(hw + 2 * N);                            // [2][NB]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int rank = blockIdx.x % C;
  const unsigned bytes_per_bar = MODE == 2 ? unsigned(NW * E * 4) : unsigned(N * 4);
  for (int i = tid; i < 2 * N; i += 512) {
    if (TAGGED)
      hw[i] = 0ull;
    else
      hs[i] = 0.f;
  }
  if (MBAR && tid == 0) {
    for (int k = 0; k < 2 * NB; ++k) mbar_init(&bar[k], 1);
    fence_mbar_init_cluster();
    for (int k = 0; k < NB; ++k) {
      if (T >= 2) mbar_arrive_expect_tx(&bar[1 * NB + k], bytes_per_bar);
      if (T >= 3) mbar_arrive_expect_tx(&bar[0 * NB + k], bytes_per_bar);
    }
  }
  cluster_arrive_release();
  cluster_wait_acquire();
  float h = 0.001f * (tid + 1);
  for (int t = 0; t < T; ++t) {
    const int cur = t & 1;
    float s = 0.f;
    if (MBAR) {
      if (t > 0) {
        for (int k = 0; k < NB; ++k) {
          if (MODE == 7)
            mbar_spin_parity(&bar[cur * NB + k], ((t - 1) >> 1) & 1);
          else if (MODE == 9)
            mbar_wait_parity_cta(&bar[cur * NB + k], ((t - 1) >> 1) & 1);
          else
            mbar_wait_parity(&bar[cur * NB + k], ((t - 1) >> 1) & 1);
        }
        if (tid == 0 && t + 1 <= T - 2)
          for (int k = 0; k < NB; ++k) {
            if (MODE == 9 || MODE == 12)
              mbar_arrive_expect_tx_cta(&bar[cur * NB + k], bytes_per_bar);
            else
              mbar_arrive_expect_tx(&bar[cur * NB + k], bytes_per_bar);
          }
      }
#pragma unroll
      for (int i = 0; i < NR; ++i) s += hs[cur * N + (lane + 32 * i) % N];
    } else if (TAGGED) {
      const unsigned want = unsigned(t);  // h_{t-1} was pushed at step t-1 with tag t
#pragma unroll
      for (int i = 0; i < NR; ++i) {
        const unsigned long long* p = hw + cur * N + (lane + 32 * i) % N;
        unsigned long long w = MODE == 3 ? ld_tagged(p) : ld_volatile(p);
        if (t > 0)
          while (unsigned(w >> 32) != want) w = MODE == 3 ? ld_tagged(p) : ld_volatile(p);
        s += __uint_as_float(unsigned(w));
      }
    } else {
#pragma unroll
      for (int i = 0; i < NR; ++i) s += hs[cur * N + (lane + 32 * i) % N];
    }
    // The warp's E new values depend on what every lane read.
#pragma unroll
    for (int m = 16; m >= 1; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
    h = 0.5f * h + 1e-6f * s;
    if (t + 1 < T) {
      const int nxt = (t + 1) & 1;
#pragma unroll
      for (int r = 0; r < PUSH; ++r) {
        const int item = lane + 32 * r;
        if (item < C * E) {
          const uint32_t peer = uint32_t(item / E);
          const int e = item % E;
          const int idx = (rank * NW + warp) * E + e;  // this warp's values sit together in every buffer
          const float v = h + e;
          if (MODE == 0 || MODE == 7 || MODE == 9 || MODE == 12) {
            st_async_f32(map_dsmem(hs + nxt * N + idx, peer), v, map_dsmem(&bar[nxt * NB], peer));
          } else if (MODE == 1) {
            if ((e & 1) == 0) st_async_v2(map_dsmem(hs + nxt * N + idx, peer), v, v + 1.f, map_dsmem(&bar[nxt], peer));
          } else if (MODE == 2) {
            st_async_f32(map_dsmem(hs + nxt * N + idx, peer), v, map_dsmem(&bar[nxt * NB + rank], peer));
          } else if (MODE == 3) {
            st_tagged(map_dsmem(hw + nxt * N + idx, peer), unsigned(t + 1), v);
          } else if (MODE == 6) {
            st_tagged_weak(map_dsmem(hw + nxt * N + idx, peer), unsigned(t + 1), v);
          } else if (MODE != 5 && MODE != 10 && MODE != 11) {
            st_dsmem(map_dsmem(hs + nxt * N + idx, peer), v);
          }
        }
      }
      if (MODE == 4 || MODE == 5) {
        cluster_arrive_release();
        cluster_wait_acquire();
      } else if (MODE == 10) {
        asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
        asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
      } else if (MODE == 11) {
        asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
        asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
      } else if (MODE == 8) {
        asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
        asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
      }
    }
  }
  cluster_arrive_release();
  cluster_wait_acquire();
  if (tid == 0) out[blockIdx.x] = h;
}

template <int C, int E, int MODE>
void run_one(const char* name, int T, int clusters, float* dout) {
  constexpr int N = C * 16 * E;
  const size_t smem = size_t(2) * N * 8 + 2 * C * 8 + 16;
  auto k = exchange_kernel<C, E, MODE>;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (C > 8) cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(C * clusters);
  cfg.blockDim = dim3(512);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = C;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> ms;
  for (int rep = 0; rep < 7; ++rep) {
    cudaEventRecord(a);
    cudaError_t e = cudaLaunchKernelEx(&cfg, k, T, dout);
    cudaEventRecord(b);
    if (e != cudaSuccess || cudaEventSynchronize(b) != cudaSuccess) {
      printf("%s,C=%d,E=%d,clusters=%d,error %s\n", name, C, E, clusters, cudaGetErrorString(cudaGetLastError()));
      return;
    }
    float m = 0.f;
    cudaEventElapsedTime(&m, a, b);
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  int clk = 0;
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  const double ns = ms[ms.size() / 2] * 1e6 / T;
  printf("%s,C=%d,E=%d,N=%d,clusters=%d,%.1f ns/step,%.0f cycles/step (at %d MHz)\n", name, C, E, N, clusters, ns,
         ns * clk * 1e-6, clk / 1000);
}

template <int C, int E>
void run_shape(int T, int clusters, float* dout) {
  run_one<C, E, 0>("stasync", T, clusters, dout);
  run_one<C, E, 4>("clusterbar", T, clusters, dout);
  run_one<C, E, 5>("baronly", T, clusters, dout);
  run_one<C, E, 9>("stasync_cta", T, clusters, dout);
  run_one<C, E, 12>("stasync_rearm", T, clusters, dout);
  run_one<C, E, 10>("bar_rel", T, clusters, dout);
  run_one<C, E, 11>("bar_acq", T, clusters, dout);
  run_one<C, E, 8>("relaxedbar", T, clusters, dout);
}

}  // namespace


int main(int argc, char** argv) {
  const int T = argc > 1 ? atoi(argv[1]) : 2000;
  float* dout = nullptr;
  cudaMalloc(&dout, 4096 * sizeof(float));
  // H = 256 one column, clusters of 8 (E = 2) and 16 (E = 1); H = 256 two columns (E = 4); H = 512 clusters of 16
  // one column (E = 2) and two columns (E = 4).
  for (int cl : {1}) {
    run_shape<8, 2>(T, cl, dout);
    run_shape<16, 1>(T, cl, dout);
    run_shape<8, 4>(T, cl, dout);
    run_shape<16, 2>(T, cl, dout);
    run_shape<16, 4>(T, cl, dout);
  }
  cudaFree(dout);
  return 0;
}
