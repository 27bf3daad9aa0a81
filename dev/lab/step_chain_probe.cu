// The cuBLAS step outside openrnn (docs/performance.md, session 68): does a chain of [GEMM, pointwise] graph steps
// slow down after other work in the process, and which kind of GEMM launch does?
//
// STANDARD's 16-bit cuBLAS step (split state) is, per step, cuBLAS's GEMM P[2B, G*H] = S[2B, H] . W_hh^T (float16
// in, float32 out; nvjet kernels, one CTA per SM, clusters of 2-4) and a pointwise kernel that reads P and writes the
// next S. Since session 29 these rows run ~0.3-0.7 µs per step slower in a process that earlier ran a training call,
// cuDNN or any multi-lane call of the library ("STANDARD's slow state"); the mma.sync and Hopper steps (no clusters)
// do not. This probe builds that chain with plain cuBLAS / cuBLASLt and kernels of its own, captures each variant
// into a CUDA graph of T steps, and times the graphs before and after trigger actions in one process. It also
// captures and times openrnn's own STANDARD inference graph (LSTM float16), whose buffers it fills in several ways.
// Found in session 68: once 8 or more kernels (cudaMemset included) have run on the legacy default stream in the
// process, that graph runs ~0.7 µs per step slower, graphs captured earlier included:
// `setup=min flush=memset states=1 nonull=1 [nullk=12] lie tl` (without nonull=1 the 12 fills are cudaMemsets on the
// legacy stream, which is enough).
//   step_chain_probe [G=4] [H=1024] [B=64] [T=100] ACTION...
// Variants (one graph each, all on stream s1 with cuBLAS handle h1, 32 MiB of workspace as the library gives):
//   blas      cublasGemmStridedBatchedEx (count 1), as the library calls it
//   ltK       cuBLASLt with the K-th algorithm of its heuristic list (K = 0..7); the list is printed with each
//             algorithm's tile, stages, split-K and cluster shape ids
//   lt1x1     cuBLASLt with the first listed algorithm whose cluster shape id is 1x1x1 (if any)
//   dumc      a GEMM-sized read of W by a kernel of the probe's own, 128 CTAs x 384 threads, 200 KB of shared memory,
//             clusters of 2 (each CTA reads its fixed slice of W and of S)
//   dumn      the same without clusters
//   blasp     blas, with the pointwise kernel launched as a programmatic dependent of the GEMM (session 69)
//   dumnp     dumn, with both kernels launched as programmatic dependents of the one before (session 69)
//   pw / pwp  the pointwise kernel alone, one kernel per step, plain / as a programmatic dependent (session 69)
//   (the pointwise and dumn kernels start with griddepcontrol.wait, a no-op when not launched programmatically;
//   few=1 captures only blas, blasp, dumn, dumnp, pw and pwp)
// Actions:
//   t                 time every variant: median of 15 replays (2 untimed first), L2 overwritten before each by a
//                     kernel (or by cudaMemsetAsync with flush=memset, or with flush=deep first by a read of twice
//                     the L2 with the evict_last policy and a demotion of those lines to normal priority, so that no
//                     line an earlier kernel marked evict_last survives the flush), µs per step
//   fork_gemm         a graph captured on s1 that forks to s2: a weight-gradient-sized GEMM on h2 / s2 beside an
//                     input-gradient-sized GEMM on h1 / s1, then joins; launched twice (STANDARD's training lanes)
//   fork_gemm_eager   the same without a graph
//   fork_kern         a forked graph with plain kernels (no clusters) on both lanes
//   fork_clus         a forked graph with cluster kernels (dumc) on both lanes
//   s2_gemm           one GEMM on h2 / s2 alone (eager), nothing beside it
//   pdl_graph         a graph of two kernels on s1, the second a programmatic dependent of the first (launch
//                     attribute captured: a programmatic edge); launched twice
//   pdl_fork          the same on s2 inside a graph forked from s1
//   pdl_eager         the two kernels launched eagerly on s1
//   lib_train         openrnn STANDARD LSTM float16 (this probe's B, H, T; I = H) forward(TRAINING), backward_data
//                     and backward_weights, captured into one graph on s1 and launched twice (what the bench's
//                     training row does before the inference rows that run slow)
//   lib_train_eager   the same three calls eagerly
//   lib_infer         openrnn forward(INFERENCE) of the same problem, captured and launched twice
//   li                capture openrnn's forward(INFERENCE) into a new graph (kept; the earlier ones stay)
//   tl                time every graph `li` captured so far (as `t`)
//   relib=M           keep a new spacer allocation of M MiB, free openrnn's buffers and their graphs, allocate them
//                     again (new addresses, and new physical pages), refill them as they were (see rand)
//   rand              fill openrnn's x and W with random values (uniform: W in +-1/sqrt(H), x in +-1); the default
//                     is every 16-bit word 0x2020 (~0.008)
//   query             openrnn_query_algo(INFERENCE, STANDARD) on openrnn's problem, as openrnn-bench asks first
//   wsinf             openrnn's inference calls take a workspace of the inference size (default: the training size)
//   fetch             copy openrnn's y to the host (as openrnn-bench's check after its first call)
//   d2h=N[:KIB[:s1|pin]]  N device-to-host copies of KIB KiB (default 4096) into pageable memory by cudaMemcpy
//                     (legacy stream), or :s1 by cudaMemcpyAsync on s1 + its synchronisation, or :pin into pinned
//                     memory on s1 (session 69)
//   lie               as li, after two eager forward(INFERENCE) calls (openrnn-bench's warm-up before its capture)
//   free              cudaMalloc and cudaFree of 1 MiB
//   null_memset       cudaMemset of 1 MiB (the legacy default stream)
//   null_kernel       a one-thread kernel launched on the legacy default stream; nullk=N: N of them, then a device
//                     synchronisation
//   null_copy         cudaMemcpy of 4 KiB host to device (the legacy default stream)
//   s2_memset         cudaMemsetAsync of 1 MiB on s2, then its synchronisation (a second non-blocking stream)
//   streamk=KIND:N    N one-thread kernels on KIND = s2, new (a new non-blocking stream), newdestroy (the same,
//                     destroyed afterwards), newblocking, perthread (the per-thread default stream) or legacy, then
//                     that stream's synchronisation; streamm=KIND:N the same with N cudaMemsetAsync of 4 KiB
//   capk=N            a graph captured on s1 that forks to s2, runs N one-thread kernels there and joins; launched
//                     twice
//   tl2               as tl, with the replays and their flushes on s2 instead of s1
//   libsetup          create openrnn's handle, descriptors and buffers now (else at the first action that needs them)
//   s1_touch          cudaMemsetAsync of 4 KiB on s1, then its synchronisation; s1_big=M the same with M MiB;
//                     syncs=N: N times a cudaMemsetAsync of 4 KiB on s1 and its synchronisation
//   busy=MS           a kernel spinning MS ms on the legacy default stream, not waited for: the next action starts
//                     while it runs
//   evl=M             read a buffer of M MiB of its own once with the evict_last policy (its lines then outlast a
//                     flush of normal priority)
//   idle=S            sleep S seconds
// Setup switches (before the actions): setup=min creates only the streams, events and flush buffer (no cuBLAS or
// cuBLASLt handle of the probe's own, no variant graphs: `t` then times nothing, and the actions that use the probe's
// own cuBLAS handles (fork_gemm, fork_gemm_eager, s2_gemm) are refused); states=1 passes hx, cx, hy, cy to
// openrnn's calls (random-free, 0x2020), as openrnn-bench does; nonull=1 fills the buffers by cudaMemsetAsync on s1
// (default: cudaMemset, on the legacy stream), but those named by nullbuf=x,y,w,ws,... (x y dy dx w dw ws rs hx cx hy
// cy); nullsync=1 synchronises the device after each legacy-stream fill; fillhow=copy|kernel fills by host-to-device
// copies or by a kernel of the probe's instead of memsets (on the stream nonull selects); head=U launches a kernel
// that spins U µs after the flush and before each timed replay, outside the events, so that the host has submitted
// the graph before it starts.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "openrnn/openrnn.h"

namespace {

void die(const char* what, const char* why) {
  std::fprintf(stderr, "step_chain_probe: %s: %s\n", what, why);
  std::exit(2);
}
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(what, cudaGetErrorString(e));
}
void ck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) die(what, "cuBLAS error");
}
void ck(openrnn_status s, const char* what) {
  if (s != OPENRNN_STATUS_SUCCESS) die(what, openrnn_last_error());
}

// The programmatic pair: the first kernel lets its dependent launch early; the second waits for it.
__global__ void pdl_first(float* p) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  p[blockIdx.x * blockDim.x + threadIdx.x] += 1.f;
}
__global__ void pdl_second(float* p) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  p[blockIdx.x * blockDim.x + threadIdx.x] *= 0.5f;
}

// Spins for ns nanoseconds (globaltimer): a head start for the host's submission of the next graph.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

// Reads n 16-byte words with the L2 evict_last policy (flush=deep); the sum goes to *sink so the loads are kept.
__global__ void read_evict_last(const uint4* p, size_t n, unsigned* sink) {
  unsigned long long pol;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned a, b, c, d;
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                 : "l"(p + i), "l"(pol));
    acc += a ^ b ^ c ^ d;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}
// Puts every 128-byte line of [p, p + n words) back to normal eviction priority (flush=deep).
__global__ void demote_lines(const uint4* p, size_t n) {
  for (size_t i = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * 8; i < n; i += size_t(gridDim.x) * blockDim.x * 8)
    asm volatile("applypriority.global.L2::evict_normal [%0], 128;" ::"l"(p + i));
}

// Writes n 16-byte words: the L2 flush (a kernel, as an alternative to the bench's cudaMemsetAsync).
__global__ void flush_kernel(uint4* p, size_t n, unsigned v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = make_uint4(v, v, v, v);
}

// The step's pointwise: for sequence b and unit u, the G gate sums of P's hi and lo rows, an LSTM-like update of c
// (G = 4; else a tanh of the first gate), h split into hi / lo rows of the next state S [2B, H].
__global__ void pointwise(const float* __restrict__ P, float* __restrict__ c, __half* __restrict__ S, int B, int H,
                          int G) {
  asm volatile("griddepcontrol.wait;" ::: "memory");  // a no-op unless launched as a programmatic dependent
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= B * H) return;
  const int b = i / H, u = i % H, GH = G * H;
  float a[4] = {0.f, 0.f, 0.f, 0.f};
  for (int g = 0; g < G && g < 4; ++g) a[g] = P[(2 * b) * GH + g * H + u] + P[(2 * b + 1) * GH + g * H + u];
  float h;
  if (G == 4) {
    const float ig = 1.f / (1.f + __expf(-a[0])), fg = 1.f / (1.f + __expf(-a[1])), gg = tanhf(a[2]),
                og = 1.f / (1.f + __expf(-a[3]));
    const float cn = fg * c[i] + ig * gg;
    c[i] = cn;
    h = og * tanhf(cn);
  } else {
    h = tanhf(a[0] + 0.5f * a[G - 1]);
  }
  const __half hi = __float2half_rn(h);
  S[(2 * b) * H + u] = hi;
  S[(2 * b + 1) * H + u] = __float2half_rn(h - __half2float(hi));
}

// A GEMM-sized read: CTA k reads its fixed slice of W (words [k * per, (k + 1) * per)) and all of S, through shared
// memory, and writes one float of P per thread (so that the pointwise kernel has a producer).
__global__ void dummy_read(const uint4* __restrict__ W, size_t per, const uint4* __restrict__ S, size_t ns,
                           float* __restrict__ P) {
  asm volatile("griddepcontrol.wait;" ::: "memory");  // a no-op unless launched as a programmatic dependent
  extern __shared__ uint4 sm[];
  unsigned acc = 0;
  const uint4* w = W + blockIdx.x * per;
  for (size_t i = threadIdx.x; i < per; i += blockDim.x) {
    const uint4 v = w[i];
    sm[i % 4096] = v;
    acc += v.x ^ v.w;
  }
  for (size_t i = threadIdx.x; i < ns; i += blockDim.x) acc += S[i].y;
  __syncthreads();
  acc += sm[(threadIdx.x * 7) % 4096].z;
  P[blockIdx.x * blockDim.x + threadIdx.x] = float(acc & 1023) * 1e-6f;
}

// A launch on `st` as a programmatic dependent of the kernel before it; *at (its one attribute) must outlive the
// launch.
cudaLaunchConfig_t pdl_config(dim3 grid, dim3 block, cudaStream_t st, cudaLaunchAttribute* at) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.stream = st;
  at->id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at->val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  return cfg;
}

struct Variant {
  std::string name;
  cudaGraphExec_t exec = nullptr;
};

struct Probe {
  int G = 4, H = 1024, B = 64, T = 100;
  cudaStream_t s1 = nullptr, s2 = nullptr;
  cublasHandle_t h1 = nullptr, h2 = nullptr;
  cublasLtHandle_t lt = nullptr;
  void *ws1 = nullptr, *ws2 = nullptr;
  size_t ws_bytes = size_t(32) << 20;
  __half *W = nullptr, *S = nullptr;
  float *P = nullptr, *c = nullptr;
  void* flush = nullptr;
  size_t flush_words = 0;
  bool flush_memset = false, flush_deep = false;
  cudaEvent_t e0 = nullptr, e1 = nullptr, ef = nullptr, ej = nullptr;
  // Trigger buffers: a dW-sized and a dX-sized GEMM (T * B rows).
  __half *ta = nullptr, *tb = nullptr, *tc = nullptr, *td = nullptr;
  std::vector<Variant> vars;
  cublasLtMatmulDesc_t md = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> heur;

  int GH() const { return G * H; }
  int M2() const { return 2 * B; }

  bool no_null_stream = false;  // nonull=1: buffers filled on s1 (as openrnn-bench does), not on the legacy stream
  std::string null_bufs;        // nullbuf=a,b,...: these of openrnn's buffers still filled on the legacy stream
  bool null_sync = false;       // nullsync=1: a cudaDeviceSynchronize after each fill on the legacy stream
  // fillhow=copy: the fills are host-to-device copies of the fill bytes (copy engine) instead of memsets;
  // fillhow=kernel: the probe's own kernel writes them (SMs). Either on s1 (nonull=1) or on the legacy stream.
  std::string fill_how = "memset";
  template <typename X>
  X* dalloc(size_t elems, int fill, const char* name = "") {
    void* p = nullptr;
    const size_t bytes = elems * sizeof(X) + 16;
    ck(cudaMalloc(&p, bytes), "cudaMalloc");
    const bool legacy = *name && ("," + null_bufs + ",").find("," + std::string(name) + ",") != std::string::npos;
    const cudaStream_t st = no_null_stream && s1 && !legacy ? s1 : cudaStream_t(0);
    if (fill_how == "copy") {
      const std::vector<unsigned char> h(bytes, static_cast<unsigned char>(fill));
      ck(cudaMemcpyAsync(p, h.data(), bytes, cudaMemcpyHostToDevice, st), "fill copy");
      ck(cudaStreamSynchronize(st), "sync");
      return static_cast<X*>(p);
    }
    if (fill_how == "kernel") {
      const unsigned v = 0x01010101u * static_cast<unsigned char>(fill);
      flush_kernel<<<264, 512, 0, st>>>(static_cast<uint4*>(p), bytes / 16, v);
      ck(cudaGetLastError(), "fill kernel");
      if (st) ck(cudaStreamSynchronize(st), "sync");
      return static_cast<X*>(p);
    }
    if (no_null_stream && s1 && !legacy) {
      ck(cudaMemsetAsync(p, fill, elems * sizeof(X) + 16, s1), "cudaMemsetAsync");
      ck(cudaStreamSynchronize(s1), "sync");
    } else {
      ck(cudaMemset(p, fill, elems * sizeof(X) + 16), "cudaMemset");
      if (null_sync) ck(cudaDeviceSynchronize(), "sync");
    }
    return static_cast<X*>(p);
  }

  bool minimal = false, states = false, few = false;
  int head_us = 0;
  void setup() {
    ck(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "stream");
    ck(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "stream");
    ts = s1;
    for (cudaEvent_t* e : {&e0, &e1}) ck(cudaEventCreate(e), "event");
    for (cudaEvent_t* e : {&ef, &ej}) ck(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "event");
    if (minimal) {
      cudaDeviceProp prop;
      ck(cudaGetDeviceProperties(&prop, 0), "props");
      flush_words = size_t(prop.l2CacheSize) * 2 / 16;
      ck(cudaMalloc(&flush, flush_words * 16), "flush");
      return;
    }
    ck(cublasCreate(&h1), "cublasCreate");
    ck(cublasCreate(&h2), "cublasCreate");
    ck(cudaMalloc(&ws1, ws_bytes), "ws");
    ck(cudaMalloc(&ws2, ws_bytes), "ws");
    ck(cublasSetStream(h1, s1), "setStream");
    ck(cublasSetStream(h2, s2), "setStream");
    ck(cublasSetWorkspace(h1, ws1, ws_bytes), "setWorkspace");
    ck(cublasSetWorkspace(h2, ws2, ws_bytes), "setWorkspace");
    for (cublasHandle_t h : {h1, h2}) {
      ck(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST), "pointer mode");
      ck(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED), "atomics");
    }
    ck(cublasLtCreate(&lt), "cublasLtCreate");
    W = dalloc<__half>(size_t(GH()) * H, 0x20);  // float16 0x2020 ~ 0.008
    S = dalloc<__half>(size_t(M2()) * H, 0x20);
    P = dalloc<float>(size_t(M2()) * GH() + 128 * 384, 0);
    c = dalloc<float>(size_t(B) * H, 0);
    cudaDeviceProp prop;
    ck(cudaGetDeviceProperties(&prop, 0), "props");
    flush_words = size_t(prop.l2CacheSize) * 2 / 16;
    ck(cudaMalloc(&flush, flush_words * 16), "flush");
    const size_t TB = size_t(T) * B;
    ta = dalloc<__half>(TB * GH(), 0x20);
    tb = dalloc<__half>(TB * H, 0x20);
    tc = dalloc<__half>(size_t(GH()) * H, 0);
    td = dalloc<__half>(TB * H, 0);
    ck(cudaFuncSetAttribute(dummy_read, cudaFuncAttributeMaxDynamicSharedMemorySize, 4096 * 16 * 3), "smem attr");
    plan_lt();
  }

  // cuBLASLt plan of the step product in column-major terms: P^T [GH x 2B] = W [GH x H] (stored as H x GH, op T) .
  // S^T [H x 2B] (stored as H x 2B, op N); float32 out.
  void plan_lt() {
    ck(cublasLtMatmulDescCreate(&md, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    const cublasOperation_t T_ = CUBLAS_OP_T, N_ = CUBLAS_OP_N;
    ck(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_TRANSA, &T_, sizeof(T_)), "transa");
    ck(cublasLtMatmulDescSetAttribute(md, CUBLASLT_MATMUL_DESC_TRANSB, &N_, sizeof(N_)), "transb");
    ck(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, H, GH(), H), "layout a");
    ck(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, H, M2(), H), "layout b");
    ck(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, GH(), M2(), GH()), "layout c");
    cublasLtMatmulPreference_t pref = nullptr;
    ck(cublasLtMatmulPreferenceCreate(&pref), "pref");
    ck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                            sizeof(ws_bytes)),
       "pref ws");
    heur.resize(32);
    int got = 0;
    ck(cublasLtMatmulAlgoGetHeuristic(lt, md, la, lb, lc, lc, pref, 32, heur.data(), &got), "heuristic");
    heur.resize(got);
    cublasLtMatmulPreferenceDestroy(pref);
    std::printf("  cuBLASLt heuristic list (G=%d H=%d B=%d): %d algorithms\n", G, H, B, got);
    for (int i = 0; i < got; ++i) {
      int id = -1, tile = -1, stages = -1, splitk = -1, cluster = -1;
      size_t w = 0;
      const cublasLtMatmulAlgo_t* a = &heur[i].algo;
      cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &w);
      cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &w);
      cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), &w);
      cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof(splitk), &w);
      cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof(cluster), &w);
      std::printf("    [%2d] algo %d tile %d stages %d splitk %d cluster %d ws %zu waves %.2f\n", i, id, tile, stages,
                  splitk, cluster, heur[i].workspaceSize, heur[i].wavesCount);
    }
  }

  void step_gemm(const std::string& how) {
    const float one = 1.f, zero = 0.f;
    if (how == "pw" || how == "pwp") return;  // the pointwise kernel alone: one kernel per step
    if (how == "blas" || how == "blasp") {
      // The library's call (gemm.cu, gemm_rm): cublasGemmStridedBatchedEx with count 1.
      ck(cublasGemmStridedBatchedEx(h1, CUBLAS_OP_T, CUBLAS_OP_N, GH(), M2(), H, &one, W, CUDA_R_16F, H, 0, S,
                                    CUDA_R_16F, H, 0, &zero, P, CUDA_R_32F, GH(), 0, 1, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT),
         "gemm");
    } else if (how.rfind("lt", 0) == 0) {
      int k = -1;
      if (how == "lt1x1") {
        for (size_t i = 0; i < heur.size() && k < 0; ++i) {
          int cl = -1;
          size_t w = 0;
          cublasLtMatmulAlgoConfigGetAttribute(&heur[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl, sizeof(cl),
                                               &w);
          if (cl == CUBLASLT_CLUSTER_SHAPE_1x1x1) k = int(i);
        }
      } else {
        k = std::atoi(how.c_str() + 2);
      }
      if (k < 0 || k >= int(heur.size())) die("no such cuBLASLt algorithm", how.c_str());
      ck(cublasLtMatmul(lt, md, &one, W, la, S, lb, &zero, P, lc, P, lc, &heur[k].algo, ws1, ws_bytes, s1),
         "ltMatmul");
    } else {
      launch_dummy(how == "dumc" ? 2 : 1, s1, how == "dumnp");
    }
  }
  // pdl: launched as a programmatic dependent of the kernel before it on the stream (the kernels wait for it with
  // griddepcontrol.wait before their first access; nothing triggers early, so it may start as the previous one ends).
  void launch_dummy(int cluster, cudaStream_t st, bool pdl = false) {
    const size_t wwords = size_t(GH()) * H * 2 / 16, per = wwords / 128, ns = size_t(M2()) * H * 2 / 16;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(128);
    cfg.blockDim = dim3(384);
    cfg.dynamicSmemBytes = 4096 * 16 * 3;  // 192 KB: one CTA per SM, as nvjet's step kernels
    cfg.stream = st;
    cudaLaunchAttribute at[2];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cluster;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = pdl ? 2 : 1;
    ck(cudaLaunchKernelEx(&cfg, dummy_read, reinterpret_cast<const uint4*>(W), per,
                          reinterpret_cast<const uint4*>(S), ns, P),
       "dummy launch");
  }
  void step_pointwise(bool pdl = false) {
    const int n = B * H;
    if (!pdl) {
      pointwise<<<(n + 255) / 256, 256, 0, s1>>>(P, c, S, B, H, G);
      ck(cudaGetLastError(), "pointwise");
      return;
    }
    cudaLaunchAttribute at;
    const cudaLaunchConfig_t cfg = pdl_config(dim3((n + 255) / 256), dim3(256), s1, &at);
    ck(cudaLaunchKernelEx(&cfg, pointwise, static_cast<const float*>(P), c, S, B, H, G), "pointwise (PDL)");
  }

  // What body() enqueues on s1, captured into an instantiated graph named `name`.
  template <typename F>
  Variant capture_graph(const std::string& name, F body) {
    Variant v;
    v.name = name;
    ck(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal), "begin capture");
    body();
    cudaGraph_t g = nullptr;
    ck(cudaStreamEndCapture(s1, &g), "end capture");
    ck(cudaGraphInstantiate(&v.exec, g, 0), "instantiate");
    cudaGraphDestroy(g);
    return v;
  }
  void capture(const std::string& how) {
    vars.push_back(capture_graph(how, [&] {
      for (int t = 0; t < T; ++t) {
        step_gemm(how);
        step_pointwise(how == "blasp" || how == "dumnp" || how == "pwp");
      }
    }));
  }

  cudaStream_t ts = nullptr;  // the stream the timed replays and their flushes run on: s1, or s2 for `tl2`
  void do_flush(int i) {
    if (flush_deep) {
      read_evict_last<<<264, 512, 0, ts>>>(static_cast<const uint4*>(flush), flush_words,
                                           static_cast<unsigned*>(flush) + 1);
      demote_lines<<<264, 512, 0, ts>>>(static_cast<const uint4*>(flush), flush_words);
      ck(cudaGetLastError(), "deep flush");
    }
    if (flush_memset || flush_deep) {
      ck(cudaMemsetAsync(flush, i & 0xff, flush_words * 16, ts), "flush");
    } else {
      flush_kernel<<<264, 512, 0, ts>>>(static_cast<uint4*>(flush), flush_words, unsigned(i));
      ck(cudaGetLastError(), "flush");
    }
  }
  double time(const Variant& v) {
    std::vector<float> t;
    for (int i = 0; i < 17; ++i) {
      do_flush(i);
      if (head_us > 0) spin_kernel<<<1, 32, 0, ts>>>(1000ull * head_us);
      ck(cudaEventRecord(e0, ts), "record");
      ck(cudaGraphLaunch(v.exec, ts), "graph launch");
      ck(cudaEventRecord(e1, ts), "record");
      ck(cudaEventSynchronize(e1), "sync");
      float ms = 0;
      ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
      if (i >= 2) t.push_back(ms * 1000.f / T);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }

  // Trigger GEMMs: dW [GH x H] = dG^T [GH x TB] . h [TB x H] on (h, st); dX [H x TB] = W^T-ish [H x GH] . dG^T.
  void gemm_dw(cublasHandle_t h) {
    const float one = 1.f, zero = 0.f;
    const int TB = T * B;
    ck(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, GH(), H, TB, &one, ta, CUDA_R_16F, GH(), tb, CUDA_R_16F, H, &zero,
                    tc, CUDA_R_16F, GH(), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
       "gemm dw");
  }
  void gemm_dx(cublasHandle_t h) {
    const float one = 1.f, zero = 0.f;
    const int TB = T * B;
    ck(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, H, TB, GH(), &one, W, CUDA_R_16F, GH(), ta, CUDA_R_16F, GH(), &zero,
                    td, CUDA_R_16F, H, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
       "gemm dx");
  }
  // Fork s2 from s1, run a on s1 and b on s2, join s2 into s1.
  template <typename A, typename Bf>
  void forked(A a, Bf b) {
    ck(cudaEventRecord(ef, s1), "fork record");
    ck(cudaStreamWaitEvent(s2, ef, 0), "fork wait");
    b();
    a();
    ck(cudaEventRecord(ej, s2), "join record");
    ck(cudaStreamWaitEvent(s1, ej, 0), "join wait");
  }
  void pdl_pair(cudaStream_t st) {
    pdl_first<<<132, 256, 0, st>>>(P);
    ck(cudaGetLastError(), "pdl_first");
    cudaLaunchAttribute at;
    const cudaLaunchConfig_t cfg = pdl_config(dim3(132), dim3(256), st, &at);
    ck(cudaLaunchKernelEx(&cfg, pdl_second, P), "pdl_second");
  }

  // openrnn STANDARD LSTM float16, I = H, this probe's B, H and T, on s1 with a handle of its own.
  openrnn_handle_t oh = nullptr;
  openrnn_rnn_desc_t rd = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  size_t wb = 0, ws_tr = 0, rs_tr = 0;
  void *x = nullptr, *y = nullptr, *dy = nullptr, *dx = nullptr, *w = nullptr, *dw = nullptr, *tws = nullptr,
       *trs = nullptr, *hx = nullptr, *cx = nullptr, *hy = nullptr, *cy = nullptr;
  bool lib_rand = false;
  std::vector<void*> spacers;
  void lib_alloc() {
    const size_t nx = size_t(T) * B * H;
    x = dalloc<__half>(nx, 0x20, "x");
    y = dalloc<__half>(nx, 0, "y");
    dy = dalloc<__half>(nx, 0x20, "dy");
    dx = dalloc<__half>(nx, 0, "dx");
    w = dalloc<char>(wb, 0x20, "w");
    dw = dalloc<char>(wb, 0, "dw");
    tws = dalloc<char>(ws_tr, 0, "ws");
    trs = dalloc<char>(rs_tr, 0, "rs");
    if (states) {
      hx = dalloc<__half>(size_t(B) * H, 0x20, "hx");
      cx = dalloc<__half>(size_t(B) * H, 0x20, "cx");
      hy = dalloc<__half>(size_t(B) * H, 0, "hy");
      cy = dalloc<__half>(size_t(B) * H, 0, "cy");
    }
    if (lib_rand) lib_fill_rand();
  }
  void lib_free() {
    for (Variant& v : lib_graphs) cudaGraphExecDestroy(v.exec);
    lib_graphs.clear();
    for (void* q : {x, y, dy, dx, w, dw, tws, trs, hx, cx, hy, cy}) cudaFree(q);
  }
  void lib_fill_rand() {
    uint32_t st = 12345u;
    auto put = [&](void* d, size_t n, float a) {
      std::vector<__half> v(n);
      for (auto& e : v) {
        st = st * 1664525u + 1013904223u;
        e = __float2half_rn(a * (2.f * float(st >> 8) / float(1u << 24) - 1.f));
      }
      ck(cudaMemcpy(d, v.data(), n * 2, cudaMemcpyHostToDevice), "fill");
    };
    put(x, size_t(T) * B * H, 1.f);
    put(w, wb / 2, 1.f / std::sqrt(float(H)));
  }
  void lib_setup() {
    if (oh) return;
    ck(openrnn_create_handle(&oh, OPENRNN_DEVICE_CUDA, 0), "openrnn handle");
    ck(openrnn_set_stream(oh, s1), "openrnn stream");
    openrnn_rnn_config cfg;
    ck(openrnn_rnn_config_init(&cfg), "config");
    cfg.cell = OPENRNN_CELL_LSTM;
    cfg.input_size = H;
    cfg.hidden_size = H;
    cfg.data_type = OPENRNN_DATA_HALF;
    cfg.algo = OPENRNN_ALGO_STANDARD;
    ck(openrnn_create_rnn_desc(&rd, &cfg), "rnn desc");
    ck(openrnn_create_seq_desc(&xd, OPENRNN_DATA_HALF, OPENRNN_LAYOUT_SEQ_MAJOR, T, B, H, nullptr, 0.0), "seq desc");
    ck(openrnn_get_weight_space_size(oh, rd, &wb), "weight size");
    ck(openrnn_get_temp_space_sizes(oh, rd, OPENRNN_FWD_TRAINING, xd, &ws_tr, &rs_tr), "temp sizes");
    lib_alloc();
  }
  void lib_train() {
    lib_setup();
    ck(openrnn_forward(oh, rd, OPENRNN_FWD_TRAINING, xd, x, y, hx, nullptr, cx, nullptr, w, wb, tws, ws_tr, trs, rs_tr),
       "forward training");
    ck(openrnn_backward_data(oh, rd, xd, dy, dx, nullptr, nullptr, nullptr, nullptr, w, wb, tws, ws_tr, trs, rs_tr),
       "backward data");
    ck(openrnn_backward_weights(oh, rd, OPENRNN_WGRAD_SET, xd, x, dw, wb, tws, ws_tr, trs, rs_tr), "backward weights");
  }
  void* wsi = nullptr;  // the inference-size workspace (wsinf), else null: the training one
  size_t ws_inf = 0;
  void lib_infer() {
    lib_setup();
    ck(openrnn_forward(oh, rd, OPENRNN_FWD_INFERENCE, xd, x, y, hx, hy, cx, cy, w, wb, wsi ? wsi : tws,
                       wsi ? ws_inf : ws_tr, nullptr, 0),
       "forward inference");
  }

  std::vector<Variant> lib_graphs;
  void capture_lib(bool eager_first = false) {
    lib_setup();
    if (eager_first) {
      for (int i = 0; i < 2; ++i) lib_infer();
      ck(cudaStreamSynchronize(s1), "sync");
    }
    lib_graphs.push_back(capture_graph("lib" + std::to_string(lib_graphs.size()), [&] { lib_infer(); }));
  }

  // body() captured into a graph, launched `launches` times on s1, then destroyed.
  template <typename F>
  void as_graph(F body, int launches) {
    const Variant v = capture_graph("trigger", body);
    for (int i = 0; i < launches; ++i) ck(cudaGraphLaunch(v.exec, s1), "launch");
    ck(cudaStreamSynchronize(s1), "sync");
    cudaGraphExecDestroy(v.exec);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Probe p;
  std::vector<std::string> actions;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("G=", 0) == 0)
      p.G = std::atoi(a.c_str() + 2);
    else if (a.rfind("H=", 0) == 0)
      p.H = std::atoi(a.c_str() + 2);
    else if (a.rfind("B=", 0) == 0)
      p.B = std::atoi(a.c_str() + 2);
    else if (a.rfind("T=", 0) == 0)
      p.T = std::atoi(a.c_str() + 2);
    else if (a == "flush=memset")
      p.flush_memset = true;
    else if (a == "flush=deep")
      p.flush_deep = true;
    else if (a == "setup=min")
      p.minimal = true;
    else if (a == "states=1")
      p.states = true;
    else if (a == "nonull=1")
      p.no_null_stream = true;
    else if (a == "few=1")
      p.few = true;
    else if (a.rfind("fillhow=", 0) == 0)
      p.fill_how = a.substr(8);
    else if (a.rfind("nullbuf=", 0) == 0)
      p.null_bufs = a.substr(8);
    else if (a == "nullsync=1")
      p.null_sync = true;
    else if (a.rfind("head=", 0) == 0)
      p.head_us = std::atoi(a.c_str() + 5);
    else
      actions.push_back(a);
  }
  if (p.G < 1 || p.G > 4 || p.H < 64 || p.H % 64 || p.B < 1 || p.T < 1) die("arguments", "G 1-4, H % 64 == 0, B, T");
  p.setup();
  std::vector<std::string> names = {"blas", "lt0", "lt1", "lt2", "lt3", "lt4", "lt5", "lt6", "lt7",
                                    "lt1x1", "dumc", "dumn", "blasp", "dumnp", "pw", "pwp"};
  if (p.few) names = {"blas", "blasp", "dumn", "dumnp", "pw", "pwp"};
  if (p.minimal) names.clear();
  for (const std::string& n : names) {
    if (n.rfind("lt", 0) == 0 && n != "lt1x1" && std::atoi(n.c_str() + 2) >= int(p.heur.size())) continue;
    if (n == "lt1x1") {
      bool any = false;
      for (auto& h : p.heur) {
        int cl = -1;
        size_t w = 0;
        cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl, sizeof(cl), &w);
        any = any || cl == CUBLASLT_CLUSTER_SHAPE_1x1x1;
      }
      if (!any) continue;
    }
    p.capture(n);
  }
  ck(cudaDeviceSynchronize(), "capture");
  std::printf("probe G=%d H=%d B=%d T=%d flush=%s\n", p.G, p.H, p.B, p.T,
              p.flush_deep ? "deep" : p.flush_memset ? "memset" : "kernel");
  std::string since = "start";
  for (const std::string& a : actions) {
    if (a == "t" || a == "tl" || a == "tl2") {
      std::printf("  %-34s", (since + (a == "tl2" ? " [on s2]" : "")).c_str());
      p.ts = a == "tl2" ? p.s2 : p.s1;
      for (const Variant& v : a == "t" ? p.vars : p.lib_graphs) std::printf(" %s %.3f", v.name.c_str(), p.time(v));
      p.ts = p.s1;
      std::printf("\n");
      std::fflush(stdout);
      continue;
    }
    if (p.minimal && (a == "fork_gemm" || a == "fork_gemm_eager" || a == "s2_gemm"))
      die("this action needs the probe's cuBLAS handles (no setup=min)", a.c_str());
    if (a.rfind("idle=", 0) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(int(1000 * std::atof(a.c_str() + 5))));
    } else if (a == "fork_gemm") {
      p.as_graph([&] { p.forked([&] { p.gemm_dx(p.h1); }, [&] { p.gemm_dw(p.h2); }); }, 2);
    } else if (a == "fork_gemm_eager") {
      p.forked([&] { p.gemm_dx(p.h1); }, [&] { p.gemm_dw(p.h2); });
    } else if (a == "fork_kern") {
      p.as_graph(
          [&] {
            p.forked(
                [&] {
                  flush_kernel<<<132, 256, 0, p.s1>>>(reinterpret_cast<uint4*>(p.td), size_t(p.T) * p.B * p.H / 8, 1);
                },
                [&] {
                  flush_kernel<<<132, 256, 0, p.s2>>>(reinterpret_cast<uint4*>(p.tc), size_t(p.GH()) * p.H / 8, 2);
                });
          },
          2);
    } else if (a == "fork_clus") {
      p.as_graph([&] { p.forked([&] { p.launch_dummy(2, p.s1); }, [&] { p.launch_dummy(2, p.s2); }); }, 2);
    } else if (a == "s2_gemm") {
      p.gemm_dw(p.h2);
    } else if (a == "pdl_graph") {
      p.as_graph([&] { p.pdl_pair(p.s1); }, 2);
    } else if (a == "pdl_fork") {
      p.as_graph([&] { p.forked([] {}, [&] { p.pdl_pair(p.s2); }); }, 2);
    } else if (a == "pdl_eager") {
      p.pdl_pair(p.s1);
    } else if (a == "lib_train") {
      p.lib_setup();
      p.as_graph([&] { p.lib_train(); }, 2);
    } else if (a == "lib_train_eager") {
      p.lib_train();
    } else if (a.rfind("relib=", 0) == 0) {
      p.lib_setup();
      void* q = nullptr;
      ck(cudaMalloc(&q, size_t(std::atof(a.c_str() + 6) * double(1 << 20))), "spacer");
      p.spacers.push_back(q);
      p.lib_free();
      p.lib_alloc();
    } else if (a == "free" || a == "null_memset" || a == "null_kernel" || a == "null_copy" || a == "s2_memset") {
      void* q = nullptr;
      ck(cudaMalloc(&q, 1 << 20), "cudaMalloc");
      if (a == "null_memset") ck(cudaMemset(q, 0, 1 << 20), "cudaMemset");
      if (a == "null_kernel") {
        flush_kernel<<<1, 1>>>(static_cast<uint4*>(q), 1, 0u);
        ck(cudaGetLastError(), "null kernel");
      }
      if (a == "null_copy") {
        std::vector<char> h(4096, 1);
        ck(cudaMemcpy(q, h.data(), h.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
      }
      if (a == "s2_memset") {
        ck(cudaMemsetAsync(q, 0, 1 << 20, p.s2), "cudaMemsetAsync s2");
        ck(cudaStreamSynchronize(p.s2), "sync s2");
      }
      if (a == "free") {
        ck(cudaFree(q), "cudaFree");
      } else {
        p.spacers.push_back(q);
      }
    } else if (a == "libsetup") {
      p.lib_setup();
    } else if (a.rfind("nullk=", 0) == 0) {
      void* q = nullptr;
      ck(cudaMalloc(&q, 4096), "cudaMalloc");
      for (int i = 0, n = std::atoi(a.c_str() + 6); i < n; ++i) flush_kernel<<<1, 1>>>(static_cast<uint4*>(q), 1, 0u);
      ck(cudaGetLastError(), "nullk");
      p.spacers.push_back(q);
    } else if (a.rfind("streamk=", 0) == 0 || a.rfind("streamm=", 0) == 0) {
      // streamk=KIND:N: N one-thread kernels (streamm=: N cudaMemsetAsync of 4 KiB) on s2 / a new non-blocking
      // stream / the same destroyed afterwards / a new blocking stream / the per-thread default stream / the legacy
      // stream, then that stream's synchronisation (session 69).
      const bool memsets = a[6] == 'm';
      const std::string spec = a.substr(8);
      const std::string kind = spec.substr(0, spec.find(':'));
      const int n = std::atoi(spec.c_str() + kind.size() + 1);
      cudaStream_t st = nullptr;
      if (kind == "s2") st = p.s2;
      else if (kind == "new" || kind == "newdestroy")
        ck(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
      else if (kind == "newblocking") ck(cudaStreamCreate(&st), "stream");
      else if (kind == "perthread") st = cudaStreamPerThread;
      else if (kind == "legacy") st = cudaStreamLegacy;
      else die("streamk kind (s2, new, newdestroy, newblocking, perthread, legacy)", kind.c_str());
      void* q = nullptr;
      ck(cudaMalloc(&q, 4096), "cudaMalloc");
      for (int i = 0; i < n; ++i) {
        if (memsets) ck(cudaMemsetAsync(q, i & 0xff, 4096, st), "streamm");
        else flush_kernel<<<1, 1, 0, st>>>(static_cast<uint4*>(q), 1, 0u);
      }
      ck(cudaGetLastError(), "streamk");
      ck(cudaStreamSynchronize(st), "streamk sync");
      if (kind == "newdestroy") ck(cudaStreamDestroy(st), "stream destroy");
      p.spacers.push_back(q);
    } else if (a.rfind("capk=", 0) == 0) {
      // capk=N: a graph captured on s1 that forks to s2, runs N one-thread kernels there and joins; launched twice.
      void* q = nullptr;
      ck(cudaMalloc(&q, 4096), "cudaMalloc");
      const int n = std::atoi(a.c_str() + 5);
      p.as_graph(
          [&] {
            p.forked([] {}, [&] {
              for (int i = 0; i < n; ++i) flush_kernel<<<1, 1, 0, p.s2>>>(static_cast<uint4*>(q), 1, 0u);
            });
          },
          2);
      p.spacers.push_back(q);
    } else if (a.rfind("syncs=", 0) == 0) {
      void* q = nullptr;
      ck(cudaMalloc(&q, 4096), "cudaMalloc");
      for (int i = 0, n = std::atoi(a.c_str() + 6); i < n; ++i) {
        ck(cudaMemsetAsync(q, i & 0xff, 4096, p.s1), "cudaMemsetAsync s1");
        ck(cudaStreamSynchronize(p.s1), "sync s1");
      }
      p.spacers.push_back(q);
    } else if (a == "s1_touch" || a.rfind("s1_big=", 0) == 0) {
      void* q = nullptr;
      const size_t bytes = a == "s1_touch" ? 4096 : size_t(std::atof(a.c_str() + 7) * double(1 << 20));
      ck(cudaMalloc(&q, bytes), "cudaMalloc");
      ck(cudaMemsetAsync(q, 0, bytes, p.s1), "cudaMemsetAsync s1");
      ck(cudaStreamSynchronize(p.s1), "sync s1");
      p.spacers.push_back(q);
    } else if (a.rfind("busy=", 0) == 0) {
      spin_kernel<<<1, 32>>>(1000000ull * std::atoi(a.c_str() + 5));
      ck(cudaGetLastError(), "busy");
      since = since == "start" ? a : since + " " + a;
      continue;  // not waited for
    } else if (a.rfind("evl=", 0) == 0) {
      const size_t words = size_t(std::atof(a.c_str() + 4) * double(1 << 20)) / 16;
      uint4* q = nullptr;
      ck(cudaMalloc(&q, words * 16 + 16), "evl buffer");
      ck(cudaMemset(q, 0x11, words * 16 + 16), "evl fill");
      read_evict_last<<<264, 512, 0, p.s1>>>(q, words, reinterpret_cast<unsigned*>(q + words));
      ck(cudaGetLastError(), "evl");
      p.spacers.push_back(q);
    } else if (a == "rand") {
      p.lib_setup();
      p.lib_rand = true;
      p.lib_fill_rand();
    } else if (a == "query") {
      p.lib_setup();
      int ok = 0;
      openrnn_algo chosen = OPENRNN_ALGO_STANDARD;
      char why[256] = {0};
      ck(openrnn_query_algo(p.oh, p.rd, OPENRNN_FWD_INFERENCE, p.xd, OPENRNN_ALGO_STANDARD, &ok, &chosen, why,
                            sizeof why),
         "query_algo");
    } else if (a == "wsinf") {
      p.lib_setup();
      size_t r = 0;
      ck(openrnn_get_temp_space_sizes(p.oh, p.rd, OPENRNN_FWD_INFERENCE, p.xd, &p.ws_inf, &r), "temp sizes");
      p.wsi = p.dalloc<char>(p.ws_inf, 0);
    } else if (a == "fetch") {
      std::vector<char> host(size_t(p.T) * p.B * p.H * 2);
      ck(cudaMemcpy(host.data(), p.y, host.size(), cudaMemcpyDeviceToHost), "fetch");
    } else if (a.rfind("d2h=", 0) == 0) {
      // d2h=N[:KIB[:s1|pin]]: N device-to-host copies of KIB KiB (default 4096) into pageable host memory by
      // cudaMemcpy (the legacy stream), or with :s1 by cudaMemcpyAsync on s1 and its synchronisation (as
      // openrnn-bench's download), or with :pin into pinned memory on s1.
      int n = 0, kib = 4096;
      char how[8] = {0};
      std::sscanf(a.c_str() + 4, "%d:%d:%7s", &n, &kib, how);
      const size_t bytes = size_t(kib) << 10;
      void* q = nullptr;
      ck(cudaMalloc(&q, bytes), "cudaMalloc");
      ck(cudaMemsetAsync(q, 1, bytes, p.s1), "d2h source");
      ck(cudaStreamSynchronize(p.s1), "sync s1");
      std::vector<char> pageable;
      char* host = nullptr;
      if (std::strcmp(how, "pin") == 0) {
        ck(cudaMallocHost(&host, bytes), "cudaMallocHost");
      } else {
        pageable.resize(bytes);
        host = pageable.data();
      }
      for (int i = 0; i < n; ++i) {
        if (how[0]) {
          ck(cudaMemcpyAsync(host, q, bytes, cudaMemcpyDeviceToHost, p.s1), "d2h s1");
          ck(cudaStreamSynchronize(p.s1), "sync s1");
        } else {
          ck(cudaMemcpy(host, q, bytes, cudaMemcpyDeviceToHost), "d2h legacy");
        }
      }
      if (std::strcmp(how, "pin") == 0) cudaFreeHost(host);
      p.spacers.push_back(q);
    } else if (a == "li" || a == "lie") {
      p.capture_lib(a == "lie");
    } else if (a == "lib_infer") {
      p.lib_setup();
      p.as_graph([&] { p.lib_infer(); }, 2);
    } else {
      die("unknown action", a.c_str());
    }
    ck(cudaDeviceSynchronize(), a.c_str());
    since = since == "start" ? a : since + " " + a;
    if (since.size() > 34) since = "..." + since.substr(since.size() - 31);
  }
  return 0;
}
