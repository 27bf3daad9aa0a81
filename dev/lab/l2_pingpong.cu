// l2_pingpong (session 37, lab): how long one word takes from one SM to another through L2, moved the ways
// PERSISTENT v10 moves h between CTAs. The question it answers: v10's tagged-word tile of one (float32 H = 512,
// B = 1) measures ~2240 cycles per step, while its parts add up to ~1400 if the store-to-poll path is one
// ~550-cycle L2 round trip (docs/performance.md, session 37). A ping-pong between two CTAs on two SMs measures that
// path alone.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90a dev/lab/l2_pingpong.cu -o l2_pingpong
// Run:   ./l2_pingpong [iters=2000]   (one H100: ~10 s; prints CSV rows, then a summary last)
//
// One cooperative launch of one CTA per SM (dynamic shared memory forces one per SM, so every CTA is co-resident and
// no wait can deadlock). Thread 0 of CTA 0 and thread 0 of CTA `partner` pass a counter back and forth `iters`
// times through two global words (a: CTA 0 -> partner, b: partner -> CTA 0); every other CTA returns at once. CTA 0
// times the whole exchange with clock64 (one SM's clock): cycles per round trip = 2 one-way trips, each one store
// plus the poll that sees it.
// Modes (how a word is written and how its reader waits):
//   0 tagged      st.relaxed.gpu.u64 of (tag << 32 | payload); the reader polls ld.relaxed.gpu.v2.u64 (16 bytes, as
//                 v10's tile of one) until the tag matches; no sleep between polls
//   1 tagged_ns   mode 0 with __nanosleep(20) between polls (v10's loop)
//   2 flag        st.release.gpu.u32 of the tag; the reader polls ld.acquire.gpu.u32
//   3 counter     red.release.gpu.global.add.u32 +1; the reader polls ld.acquire.gpu.u32 until the count (v10's
//                 counter path: one arrival, one poll)
// Sweeps: every partner SM for each mode (the spread shows near / far L2 partitions), then mode 0 for one partner
// with the two words placed on 32 different 128-byte lines (the L2 slice that holds a line is fixed by its address).
// Also: a dependent chain of ld.relaxed.gpu loads from CTA 0 alone over 64 lines (one L2 round trip each, no
// other SM involved).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "lab_check.h"  // CK

namespace {

constexpr int kLineWords = 16;  // 128-byte lines of 8-byte words

__device__ __forceinline__ void st_relaxed_u64(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_relaxed_v2_first(const unsigned long long* p) {
  unsigned long long a, b;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];\n" : "=l"(a), "=l"(b) : "l"(p) : "memory");
  // The second word (never written: 0) takes part, so that the load stays one 16-byte request as in v10, where both
  // words are used; with only the first one used, ptxas narrowed the load to the 4-byte tag.
  return a ^ (b & 0x8000000000000000ull);
}
__device__ __forceinline__ unsigned long long ld_relaxed_u64(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_u32(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire_u32(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// Writes word i (i >= 1) for the other side.
template <int MODE>
__device__ __forceinline__ void send(unsigned long long* w, unsigned i) {
  if (MODE <= 1) st_relaxed_u64(w, (static_cast<unsigned long long>(i) << 32) | 0x3f800000ull);
  else if (MODE == 2) st_release_u32(reinterpret_cast<unsigned*>(w), i);
  else red_release_add(reinterpret_cast<unsigned*>(w), 1u);
}
// Waits until the other side's word i is visible.
template <int MODE>
__device__ __forceinline__ void wait(const unsigned long long* w, unsigned i) {
  if (MODE <= 1) {
    while (unsigned(ld_relaxed_v2_first(w) >> 32) != i)
      if (MODE == 1) __nanosleep(20);
  } else {
    while (ld_acquire_u32(reinterpret_cast<const unsigned*>(w)) < i) {
    }
  }
}

template <int MODE>
__global__ void pingpong(unsigned long long* a, unsigned long long* b, int partner, int iters, long long* cycles,
                         int* smid) {
  extern __shared__ unsigned char pad[];  // only its size matters (one CTA per SM)
  if (threadIdx.x != 0) return;
  int s;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(s));
  smid[blockIdx.x] = s;
  pad[0] = 0;
  if (blockIdx.x == 0) {
    const long long t0 = clock64();
    for (int i = 1; i <= iters; ++i) {
      send<MODE>(a, unsigned(i));
      wait<MODE>(b, unsigned(i));
    }
    *cycles = clock64() - t0;
  } else if (int(blockIdx.x) == partner) {
    for (int i = 1; i <= iters; ++i) {
      wait<MODE>(a, unsigned(i));
      send<MODE>(b, unsigned(i));
    }
  }
}

// One SM alone: n dependent relaxed loads, each address taken from the previous load's value (a chain over `lines`
// lines laid out by the host), cycles per load.
__global__ void chase(const unsigned long long* buf, int n, long long* cycles) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long idx = 0;
  const long long t0 = clock64();
  for (int i = 0; i < n; ++i) idx = ld_relaxed_u64(buf + idx);
  // The last load's value stored before the second clock read: the store waits for it, and the clock read (a memory
  // clobber) stays after the store. (Session 37's version read the clock without waiting: it printed 0 cycles in
  // session 38's run 1.)
  cycles[1] = static_cast<long long>(idx);
  long long t1;
  asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(t1)::"memory");
  cycles[0] = t1 - t0;
}

struct Ctx {
  int sms = 0, smem = 0, iters = 0;
  unsigned long long* buf = nullptr;  // 64 MiB of words
  long long* cycles = nullptr;
  int* smid = nullptr;
};

template <int MODE>
double run_pair(const Ctx& c, int partner, size_t line_a, size_t line_b, int* smid_out) {
  CK(cudaMemset(c.buf, 0, size_t(64) << 20));
  unsigned long long* a = c.buf + line_a * kLineWords;
  unsigned long long* b = c.buf + line_b * kLineWords;
  int p = partner, it = c.iters;
  void* args[] = {&a, &b, &p, &it, const_cast<long long**>(&c.cycles), const_cast<int**>(&c.smid)};
  CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(&pingpong<MODE>), dim3(c.sms), dim3(32), args,
                                 size_t(c.smem), nullptr));
  CK(cudaDeviceSynchronize());
  long long cyc = 0;
  CK(cudaMemcpy(&cyc, c.cycles, sizeof cyc, cudaMemcpyDeviceToHost));
  if (smid_out) CK(cudaMemcpy(smid_out, c.smid, sizeof(int) * c.sms, cudaMemcpyDeviceToHost));
  return double(cyc) / c.iters;
}

template <int MODE>
void sweep_partners(const Ctx& c, const char* name, std::vector<double>& rts) {
  std::vector<int> smid(c.sms);
  for (int p = 1; p < c.sms; ++p) {
    const double rt = run_pair<MODE>(c, p, 0, 1, smid.data());
    rts.push_back(rt);
    std::printf("partner,%s,%d,%d,%d,%.1f\n", name, p, smid[0], smid[p], rt);
  }
}

void summary(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("summary,%s,min %.0f,median %.0f,max %.0f cycles per round trip (one way ~%.0f)\n", what, v.front(),
              v[v.size() / 2], v.back(), v[v.size() / 2] / 2);
}

}  // namespace

int main(int argc, char** argv) {
  Ctx c;
  c.iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  c.sms = prop.multiProcessorCount;
  c.smem = int(prop.sharedMemPerMultiprocessor / 2 + 1024);  // more than half: one CTA per SM
  c.smem = std::min<int>(c.smem, int(prop.sharedMemPerBlockOptin));
  const void* fns[4] = {reinterpret_cast<const void*>(&pingpong<0>), reinterpret_cast<const void*>(&pingpong<1>),
                        reinterpret_cast<const void*>(&pingpong<2>), reinterpret_cast<const void*>(&pingpong<3>)};
  for (const void* f : fns) CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem));
  CK(cudaMalloc(&c.buf, size_t(64) << 20));
  CK(cudaMalloc(&c.cycles, 2 * sizeof(long long)));
  CK(cudaMalloc(&c.smid, sizeof(int) * c.sms));
  std::printf("# l2_pingpong: %s, %d SMs, %d round trips per pair, one CTA per SM (%d B shared memory)\n", prop.name,
              c.sms, c.iters, c.smem);
  std::printf("kind,mode,partner,smid0,smid_partner,cycles_per_round_trip\n");

  std::vector<double> r0, r1, r2, r3;
  sweep_partners<0>(c, "tagged", r0);
  sweep_partners<1>(c, "tagged_ns", r1);
  sweep_partners<2>(c, "flag", r2);
  sweep_partners<3>(c, "counter", r3);

  // Mode 0, the median partner of the sweep, the two words on 32 different lines (line pairs 2k, 2k+1 spread over
  // the buffer: k * 4099 lines apart).
  std::vector<double> sorted = r0;
  std::sort(sorted.begin(), sorted.end());
  int mid = 1;
  for (int p = 1; p < c.sms; ++p)
    if (r0[p - 1] == sorted[sorted.size() / 2]) mid = p;
  std::vector<double> rl;
  for (int k = 0; k < 32; ++k) {
    const size_t la = size_t(k) * 4099 * 2, lb = la + 1;
    const double rt = run_pair<0>(c, mid, la, lb, nullptr);
    rl.push_back(rt);
    std::printf("line,tagged,%d,%zu,%zu,%.1f\n", mid, la, lb, rt);
  }

  // One SM alone: a dependent chain of relaxed loads over 64 lines spread over the buffer.
  {
    const int lines = 64, n = 64 * 200;
    std::vector<unsigned long long> h(size_t(64) << 17, 0);  // 64 MiB / 8 words
    std::vector<size_t> at(lines);
    for (int i = 0; i < lines; ++i) at[i] = size_t(i) * 8191 * kLineWords % h.size();
    for (int i = 0; i < lines; ++i) h[at[i]] = at[(i + 1) % lines];
    CK(cudaMemcpy(c.buf, h.data(), h.size() * 8, cudaMemcpyHostToDevice));
    chase<<<1, 32>>>(c.buf, 64, c.cycles);  // warm the lines into L2
    chase<<<1, 32>>>(c.buf, n, c.cycles);
    CK(cudaDeviceSynchronize());
    long long cyc = 0;
    CK(cudaMemcpy(&cyc, c.cycles, sizeof cyc, cudaMemcpyDeviceToHost));
    std::printf("chase,relaxed_gpu_load,%d lines,%.1f cycles per dependent load\n", lines, double(cyc) / n);
  }

  summary("tagged (every partner)", r0);
  summary("tagged_ns (every partner)", r1);
  summary("flag release/acquire (every partner)", r2);
  summary("counter red.release/acquire (every partner)", r3);
  summary("tagged, median partner, 32 line placements", rl);
  CK(cudaFree(c.buf));
  CK(cudaFree(c.cycles));
  CK(cudaFree(c.smid));
  return 0;
}
