// PERSISTENT algorithm, device side: storage-type traits (float / bfloat16 / float16 weights kept as pairs along k),
// cluster (DSMEM, barrier.cluster) and grid (acquire/release counters) primitives, cp.async, the activations used on
// the per-step critical path, and the kernel parameter block. Shared by the library (persistent_algo.cu) and the
// kernel lab (dev/lab/, which includes this file: the lab checks and times exactly the code the library ships).
#pragma once

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_common.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

// GRU: linear-before-reset (r multiplies W_hn h + b_hn); GRU_RB: reset-before (W_hn multiplies r * h, so the n rows'
// product needs this step's r first: a second matvec and a second exchange per step, v4 cluster mode only).
enum Cell : int { LSTM = 0, GRU = 1, RNN_TANH = 2, RNN_RELU = 3, GRU_RB = 4 };

template <int CELL>
struct CellTraits;
template <>
struct CellTraits<LSTM> {
  static constexpr int G = 4;
};
template <>
struct CellTraits<GRU> {
  static constexpr int G = 3;
};
template <>
struct CellTraits<GRU_RB> {
  static constexpr int G = 3;
};
template <>
struct CellTraits<RNN_TANH> {
  static constexpr int G = 1;
};
template <>
struct CellTraits<RNN_RELU> {
  static constexpr int G = 1;
};

// Weights are held two consecutive k at a time ("pair"): float2 for float32 (8 B), __nv_bfloat162 / __half2 for the
// 16-bit types (4 B, one register). Arithmetic is always float32.
template <typename TW>
struct Store;
template <>
struct Store<float> {
  using Pair = float2;
  __device__ static float2 to_f2(Pair p) { return p; }
  __device__ static Pair from_f2(float a, float b) { return make_float2(a, b); }
  __device__ static float to_f(float v) { return v; }
  __host__ __device__ static float from_f(float v) { return v; }
};
// The 16-bit pair is passed through an opaque (volatile asm) move before widening: without it the compiler hoists the
// loop-invariant bf16->f32 conversions of register-resident weights out of the time loop, doubling their register
// footprint and spilling (seen in v1: 332 B of spills for the LSTM H=512 cluster variant).
__device__ __forceinline__ uint32_t launder(uint32_t v) {
  uint32_t r;
  asm volatile("mov.b32 %0, %1;\n" : "=r"(r) : "r"(v));
  return r;
}
template <>
struct Store<__nv_bfloat16> {
  using Pair = __nv_bfloat162;
  __device__ static float2 to_f2(Pair p) {
    const uint32_t v = launder(*reinterpret_cast<const uint32_t*>(&p));
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
  }
  __device__ static Pair from_f2(float a, float b) { return __floats2bfloat162_rn(a, b); }
  __device__ static float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Store<__half> {
  using Pair = __half2;
  __device__ static float2 to_f2(Pair p) {
    const uint32_t v = launder(*reinterpret_cast<const uint32_t*>(&p));
    return __half22float2(*reinterpret_cast<const __half2*>(&v));
  }
  __device__ static Pair from_f2(float a, float b) { return __floats2half2_rn(a, b); }
  __device__ static float to_f(__half v) { return __half2float(v); }
  __device__ static __half from_f(float v) { return __float2half_rn(v); }
};

// One launch runs D directions; everything direction-dependent is indexed [dir].
template <typename TW>
struct FwdParams {
  int T, B, H;
  // The caller's hidden size, 1 <= Hr <= the compiled H (v4; v1-v3 ignore it and need Hr == H). Units
  // [Hr, H) are padding: their W_hh rows/columns and biases read as 0 and their h and c are forced to exactly 0, so
  // they add nothing to the real units' sums. y, h0, c0, hn, cn, whh, bx, bh use Hr strides; xproj and hg use H.
  int Hr;
  int C;   // CTAs per group (cluster size, or the whole grid in grid mode)
  int BT;  // batch columns per group (cluster mode); B in grid mode
  const float* xproj[2];  // [T, B, G*H] float32: W_ih x (no bias), per direction
  const TW* whh[2];       // [G*H, H] canonical (PyTorch) layout
  const float* bx[2];     // [G*H] bias added to the input side (b_ih, plus b_hh for every gate but GRU's n)
  const float* bh[2];     // [G*H] bias added to the recurrent side (GRU n gate only; zeros otherwise)
  const float* h0[2];     // [B, H] float32
  const float* c0[2];     // [B, H] float32 (LSTM)
  TW* y;                  // [T, B, D*H]; direction d writes columns [d*H, (d+1)*H)
  int D;
  float* hn[2];           // [B, H] float32
  float* cn[2];           // [B, H] float32 (LSTM)
  TW* hy[2];              // [B, H] the caller's final h in the storage type, or null: written instead of hn (16-bit)
  TW* cy[2];              // [B, H] likewise for c (LSTM), instead of cn
  const int* lengths;     // [B] device, or null = all T. Unsorted allowed; 0 <= len <= T.
  float* hg[2];           // grid mode: [2, B, H] float32 exchange buffers
  unsigned* flags[2];     // grid mode: v1 [C] per-CTA step flags; v2 [groups] arrival counters; zeroed before launch
  long long* prof;        // optional: clock64() stamps of CTA (0,0) thread 0 for steps 8..23, [16][8]
  int ll;                 // v10: exchange tiles of one sequence as tagged words (persistent_fwd_v10.cuh), hg zeroed
  int b_lo;               // v10 batch chunks (H = 1024): the first sequence of this launch's groups (0: one launch)
  int cbase;              // ... and this launch's first counter in flags[d]
  int swz;                // v10 16-bit at Hr == H without tagged words: the exchange rows and hb are dense [n][H] with
                          // 16-byte chunk c of row n at c ^ (n & 7) (one bulk copy per CTA; persistent_fwd_v10.cuh)
  int cbar;               // v10's tile of 32 (one state buffer): the cluster barrier per step (persistent_fwd_v10.cuh;
                          // OPENRNN_PERSIST_V10_CBAR=0 leaves it out)
  int pipe;               // v10's tile of 32: the state rows as two copies on two mbarriers, one per pass of the
                          // product (persistent_fwd_v10.cuh; LSTM by default, OPENRNN_PERSIST_V10_PIPE=0 / 1)
  float clip;             // LSTM cell clipping: c' clamped to [-clip, clip] when > 0 (v3 kernel)
  // Training (v4 kernel; all null for inference): the STANDARD algorithm's reserve of this layer
  // (standard_plan.h), so STANDARD's backward runs on it. Real time index rt, real hidden size Hr, GH = G*Hr.
  float* rs_acts[2];  // [T, B, GH] activations (LSTM i f g o, GRU r z n, RNN h); 0 at padding steps
  TW* rs_hs[2];       // [T+1, B, Hr*S] state slots, S = 2 for 16-bit TW (hi, lo pairs), 1 for float32
  float* rs_cs[2];    // [T+1, B, Hr] LSTM cell slots
  float* rs_hn[2];    // [T, B, Hr] GRU W_hn h + b_hn; 0 at padding steps
  TW* rs_rh[2];       // [T, B, Hr*S] GRU reset-before r * h_{t-1} (split like rs_hs); 0 at padding steps
  // v10 float32 tiles of one with producer CTAs (persistent_fwd_v10.cuh, "the input projection inside the launch"):
  // xprod > 0 extra CTAs per direction (blockIdx.x >= xcons) compute xproj from xin and wih in chunks of xchunk steps
  // and count each chunk on flags[d][kXprodCounter]; the consumers read a chunk once the count says every producer
  // wrote it. xprod == 0: xproj is complete before the launch (the GEMM of persistent_algo.cu).
  int xprod, xcons, xchunk;
  int Il;                 // the layer's input width (xprod > 0)
  const TW* xin;          // [T, B, Il] the layer's input, sequence-major rows t * B + b (xprod > 0)
  const TW* wih[2];       // [G*Hr, Il] W_ih per direction, canonical layout (xprod > 0)
};

// The final state value v of element i ([B, Hr] index), written at the last step: into the caller's tensor in the
// storage type where the launch has it (FwdParams::hy / cy, 16-bit storage: no conversion kernel after the forward
// kernel), else into the float32 one (hn / cn).
template <typename TW>
__device__ __forceinline__ void store_final(TW* out, float* out32, size_t i, float v) {
  if (out)
    out[i] = Store<TW>::from_f(v);
  else
    out32[i] = v;
}

// Values per state element in the reserve's state slots and the exchange rows: hi and lo for 16-bit storage, h
// itself for float32.
template <typename TW>
constexpr int kStateSlots = sizeof(TW) == 2 ? 2 : 1;

// One state value into a reserve state slot row (STANDARD's split format: hi = round(h), lo = round(h - hi) at
// +w for 16-bit storage; float32 stores h).
template <typename TW>
__device__ __forceinline__ void store_state(TW* row, int w, float v) {
  const TW hi = Store<TW>::from_f(v);
  row[0] = hi;
  if constexpr (sizeof(TW) == 2) row[w] = Store<TW>::from_f(v - Store<TW>::to_f(hi));
}

// The per-chunk matvec of both persistent kernels (persistent_fwd.cuh: W_hh rows x h; persistent_bwd.cuh: W_hh^T rows
// x the exchanged gate gradients). acc[j][q] = sum over this thread's k-slice of W[row lane + 32 j][k] * v[q][k]:
// the slice's first KREG k from registers (wreg, pairs), the other KSM from shared memory (ws = this warp's and lane's
// first pair, layout [KSM/2][RPT][32]); v = this warp's first k of column 0, column stride ld (float4 reads of one
// address per warp: broadcasts). Fixed summation order: bitwise reproducible. Only the rows j in [J0, J1) are
// computed (GRU reset-before runs the r / z rows and the n rows as two products); acc[j] outside is left untouched.
template <typename TW, int RPT, int BC, int KREG, int KSM, int WREG, int J0 = 0, int J1 = RPT>
__device__ __forceinline__ void slice_matvec(const typename Store<TW>::Pair (&wreg)[RPT][WREG],
                                             const typename Store<TW>::Pair* ws, const float* v, int ld,
                                             float (&acc)[RPT][BC]) {
  using S = Store<TW>;
  static_assert(0 <= J0 && J0 < J1 && J1 <= RPT, "row range");
#pragma unroll
  for (int j = J0; j < J1; ++j)
#pragma unroll
    for (int q = 0; q < BC; ++q) acc[j][q] = 0.f;
#pragma unroll
  for (int kk = 0; kk < KREG; kk += 4) {
    float2 wa[RPT], wb[RPT];
#pragma unroll
    for (int j = J0; j < J1; ++j) {
      wa[j] = S::to_f2(wreg[j][kk / 2]);
      wb[j] = S::to_f2(wreg[j][kk / 2 + 1]);
    }
#pragma unroll
    for (int q = 0; q < BC; ++q) {
      const float4 hv = *reinterpret_cast<const float4*>(v + q * ld + kk);
#pragma unroll
      for (int j = J0; j < J1; ++j) {
        acc[j][q] = fmaf(wa[j].x, hv.x, acc[j][q]);
        acc[j][q] = fmaf(wa[j].y, hv.y, acc[j][q]);
        acc[j][q] = fmaf(wb[j].x, hv.z, acc[j][q]);
        acc[j][q] = fmaf(wb[j].y, hv.w, acc[j][q]);
      }
    }
  }
#pragma unroll 2
  for (int kk = 0; kk < KSM; kk += 4) {
    float2 wa[RPT], wb[RPT];
#pragma unroll
    for (int j = J0; j < J1; ++j) {
      wa[j] = S::to_f2(ws[((kk / 2) * RPT + j) * 32]);
      wb[j] = S::to_f2(ws[((kk / 2 + 1) * RPT + j) * 32]);
    }
#pragma unroll
    for (int q = 0; q < BC; ++q) {
      const float4 hv = *reinterpret_cast<const float4*>(v + q * ld + KREG + kk);
#pragma unroll
      for (int j = J0; j < J1; ++j) {
        acc[j][q] = fmaf(wa[j].x, hv.x, acc[j][q]);
        acc[j][q] = fmaf(wa[j].y, hv.y, acc[j][q]);
        acc[j][q] = fmaf(wb[j].x, hv.z, acc[j][q]);
        acc[j][q] = fmaf(wb[j].y, hv.w, acc[j][q]);
      }
    }
  }
}

// ---- programmatic dependent launch: pdl_wait / pdl_trigger (cuda_common.cuh) ------------------------------------
// A forward kernel launched as a programmatic dependent of the prep kernel (LaunchArgs::prep, kPrepPdl) may start while
// that kernel still runs. Before pdl_wait() it reads only what was written before the prep kernel started (W_hh, the
// input projection, the lengths); after it, the prep kernel's writes (biases, h0 / c0, zeroed counters) are visible.
// The prep kernel's side is pdl_trigger().

// ---- cluster primitives -----------------------------------------------------------------------------------------
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// Without memory ordering (the order that matters comes from elsewhere; v10's tile of 32, persistent_fwd_v10.cuh).
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_relaxed() {
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}
// Address of the same shared-memory variable in CTA `rank` of this cluster.
__device__ __forceinline__ uint32_t map_dsmem(const void* local, uint32_t rank) {
  uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(local));
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ float ld_dsmem(uint32_t addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_dsmem(uint32_t addr, float v) {
  asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}

__device__ __forceinline__ void st_dsmem_v4(uint32_t addr, float4 v) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z),
               "f"(v.w)
               : "memory");
}

// ---- mbarrier + st.async: a point-to-point DSMEM exchange (persistent_fwd_v6.cuh) -------------------------------
// A consumer CTA arms its mbarrier with the bytes it expects (one arrival), producers store into its shared memory
// with st.async, each store completing its bytes on the consumer's mbarrier; the consumer's threads wait for the
// phase (acquire, cluster scope: the stored data is visible to them afterwards). No cluster-wide barrier.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
// Makes the initialisation visible to the cluster's async proxy / remote CTAs (before the cluster barrier).
__device__ __forceinline__ void fence_mbar_init_cluster() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}
// The per-step re-arm of a CTA's own mbarrier: release at CTA scope only. Nothing outside the CTA has to see this
// thread's earlier memory operations through the arrival (the data a phase carries is ordered by the producers'
// st.async complete_tx, and buffer reuse by the step chain, persistent_fwd_v6.cuh), and a release at cluster scope
// is not free: dev/lab/exchange_bench.cu measured ~550 ns per step for it on an H100, in the critical path of the
// thread that re-arms (it pushes its own h only after the release has completed).
__device__ __forceinline__ void mbar_arrive_expect_tx_cta(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait_parity(uint64_t* bar, unsigned parity) {
  const uint32_t a = smem_u32(bar);
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
  } while (!done);
}
// One float into shared::cluster address `addr` of a peer, completing 4 bytes on the peer's mbarrier `bar`
// (both from map_dsmem).
__device__ __forceinline__ void st_async_f32(uint32_t addr, float v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(addr),
               "r"(__float_as_uint(v)), "r"(bar)
               : "memory");
}
// 16 bytes (addr 16-byte aligned), completing 16 bytes on the peer's mbarrier (persistent_fwd_v9.cuh).
__device__ __forceinline__ void st_async_v4(uint32_t addr, uint4 v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(
                   addr),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(bar)
               : "memory");
}

// Two alternating mbarriers of one exchange (one arrival per phase; push j of the launch lands on
// bar[(first + j) & 1]).
// mbar_pair_init: both initialised (thread 0, before fence_mbar_init_cluster and the cluster barrier that precedes
// every push). mbar_pair_arm: the phases of the first two pushes armed with bytes(j) each, at cluster scope (the
// producers' stores of those phases may follow the cluster barrier at once); later phases are re-armed by the
// consumer after each wait (mbar_arrive_expect_tx_cta).
__device__ __forceinline__ void mbar_pair_init(uint64_t* bar) {
  mbar_init(&bar[0], 1);
  mbar_init(&bar[1], 1);
}
template <typename BytesFn>
__device__ __forceinline__ void mbar_pair_arm(uint64_t* bar, int first, int pushes, BytesFn bytes) {
  for (int j = 0; j < 2 && j < pushes; ++j) mbar_arrive_expect_tx(&bar[(first + j) & 1], bytes(j));
}

// cp.async helpers (cp_async16, cp_async16_zfill, commit, wait): cuda_common.cuh.

// A CTA's slice of a 16-bit W_hh into shared memory, once per launch: row r < rows of ws [rows][lds] gets canonical
// row (r / U) * Hr + u0 + r % U (gate r / U of unit u0 + r % U), columns [0, cols); rows r >= rows_real, padded units
// (u0 + r % U >= Hr) and columns >= Hr read as 0. Every thread issues its 16-byte cp.async at once, so the slice
// costs one round trip to memory (the kernels' earlier loaders, a chunk of scalar loads behind each __syncthreads,
// cost one per chunk: 4-16 per launch). Scalar loads where a row is not 16-byte aligned (Hr % 8 != 0, or W itself
// misaligned). cols % 8 == 0, lds % 8 == 0 and ws 16-byte aligned (static at every caller). Every thread of the CTA
// calls it; it ends with __syncthreads.
// The staged slice's row stride (halves) and size: H + 8 halves is an odd multiple of 16 bytes for H % 16 == 0, so
// the ldmatrix reads of the loaders (load_w_fragments, load_wt_fragments) are conflict-free.
constexpr int w_stage_ld(int cols) { return cols + 8; }
constexpr size_t w_stage_bytes(int rows, int cols) { return size_t(rows) * w_stage_ld(cols) * 2; }
template <typename TW, int NT>
__device__ __forceinline__ void stage_w_rows(TW* ws, int lds, const TW* W, int Hr, int u0, int U, int rows,
                                             int rows_real, int cols, int tid) {
  static_assert(sizeof(TW) == 2, "16-bit weights");
  if (Hr % 8 == 0 && (reinterpret_cast<uintptr_t>(W) & 15) == 0) {
    const int cpr = cols / 8;  // 16-byte chunks per row
    for (int i = tid; i < rows * cpr; i += NT) {
      const int r = i / cpr, k = (i % cpr) * 8, uu = u0 + r % U;
      const bool live = r < rows_real && uu < Hr && k < Hr;  // Hr % 8 == 0: a chunk is wholly in or out
      cp_async16_zfill(ws + size_t(r) * lds + k, live ? W + size_t((r / U) * Hr + uu) * Hr + k : W, live ? 16 : 0);
    }
    cp_async_commit();
    cp_async_wait_all();
  } else {
    const TW zero = Store<TW>::from_f(0.f);
#pragma unroll 8
    for (int i = tid; i < rows * cols; i += NT) {
      const int r = i / cols, k = i % cols, uu = u0 + r % U;
      ws[size_t(r) * lds + k] = r < rows_real && uu < Hr && k < Hr ? W[size_t((r / U) * Hr + uu) * Hr + k] : zero;
    }
  }
  __syncthreads();
}

// Activations on the critical path of every step: ex2.approx-based. Relative error of __expf is a few ulp for the
// arguments seen here (|x| < 30); tanh through the sigmoid loses relative accuracy only near 0, where the absolute
// error stays ~1e-7 (measured: v2 float32 errors in README.md).
__device__ __forceinline__ float fast_sigmoid(float x) { return __fdividef(1.f, 1.f + __expf(-x)); }
__device__ __forceinline__ float fast_tanh(float x) { return 2.f * fast_sigmoid(2.f * x) - 1.f; }

// ---- grid (global-memory) primitives ----------------------------------------------------------------------------
__device__ __forceinline__ void st_release_gpu(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
// Release arrival: every write ordered before it (this thread's, and the block's through a preceding
// __syncthreads: release is cumulative) is visible to a thread that observes the new count with ld_acquire_gpu.
__device__ __forceinline__ void red_release_gpu_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
// Tagged 8-byte words (value | step << 32), stored and loaded whole: a reader that sees the tag it expects has the
// value (NCCL's low-latency protocol; persistent_fwd_v10.cuh).
__device__ __forceinline__ void st_relaxed_gpu_u64(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}
// Two consecutive 8-byte words (16-byte aligned) in one request; each word is its own single-copy-atomic access.
__device__ __forceinline__ void ld_relaxed_gpu_v2u64(const uint64_t* p, uint64_t& a, uint64_t& b) {
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];\n" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
