// The mma.sync slowdown probe (docs/performance.md, sessions 29-31). An inference call of the STANDARD algorithm is
// captured once into a CUDA graph on fixed buffers; a list of actions then runs in order, and each `t` times that
// same graph (L2 flushed before each replay, as openrnn-bench does; median of 15, µs per step). An action that makes
// the later `t`s slower is what leaves the GPU in the slow state.
//   slowdown_probe [cell=lstm|gru] [dt=f16|bf16] [H=1024] [B=16] [T=100] ACTION...
// Actions:
//   t            time the inference graph
//   idle=S       sleep S seconds
//   alloc=G      cudaMalloc G GiB, memset it, cudaFree it
//   gemm_dw      one cuBLAS GEMM of the weight-gradient shape: [4H x H] = dG^T [4H x TB] . h [TB x H] (16-bit in,
//                float32 accumulate, 16-bit out)
//   gemm_dx      one cuBLAS GEMM of the input-gradient shape: [TB x H] = dG [TB x 4H] . W_ih [4H x H]
//   gemm_xw      one cuBLAS GEMM of the input-projection shape: [TB x 4H] = x [TB x H] . W_ih^T
//   fwd_train    openrnn_forward(TRAINING) on separate buffers
//   bwd_data     openrnn_backward_data (after a fwd_train)
//   bwd_w        openrnn_backward_weights (after a bwd_data)
//   recapture    capture the inference call into a new graph (same buffers)
//   newbuf       new inference buffers (the old ones freed) and a new graph
//   eager        time the inference call launched eagerly instead of the graph (one `t` worth)
//   evictlast=M  read M MiB once with the L2 evict_last policy (createpolicy + ld.global.L2::cache_hint)
//   demote       applypriority.global.L2::evict_normal over the evictlast buffer (the lines back to normal)
//   l2reset      cudaCtxResetPersistingL2Cache()
//   smem=C       one do-nothing kernel on every SM with 200 KB of shared memory per block and a preferred carveout of C
//                percent (reconfigures the SMs' shared memory / L1 split); l1=C: the same with 0 bytes, 4 blocks per SM
// Setup switches (session 45: the probe's own process was slow from the start, where openrnn-bench's was not):
//   setup=notrainq   no training-size query at setup (ws_tr / rs_tr queried at the first training action)
//   setup=noblas     no cuBLAS handle of the probe's own (the gemm actions create one when first used)
//   setup=eager      one eager inference call before the graph is captured (as openrnn-bench's check call)
//   fill=rand    the inference inputs in place: x, hx, cx uniform in [-1, 1], W in [-1/sqrt(H), 1/sqrt(H)] (as
//                openrnn-bench draws them); fill=const: every 16-bit word 0x2020 (the start); fill=zero: all 0
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "openrnn/openrnn.h"

namespace {

// Reads n 16-byte words with the L2 evict_last policy; the sum goes to *sink so the loads are kept.
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
// Holds its SM for ~20 µs; with dynamic shared memory it forces the SM's shared-memory configuration.
__global__ void hold_sm() {
  extern __shared__ unsigned char sm[];
  __nanosleep(20000);
  if (threadIdx.x == 1u << 30) sm[0] = 0;
}
// Puts every 128-byte line of [p, p + n words) back to normal eviction priority.
__global__ void demote_lines(const uint4* p, size_t n) {
  for (size_t i = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * 8; i < n; i += size_t(gridDim.x) * blockDim.x * 8)
    asm volatile("applypriority.global.L2::evict_normal [%0], 128;" ::"l"(p + i));
}

void die(const char* what, const char* why) {
  std::fprintf(stderr, "slowdown_probe: %s: %s\n", what, why);
  std::exit(2);
}
void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(what, cudaGetErrorString(e));
}
void ck(openrnn_status s, const char* what) {
  if (s != OPENRNN_STATUS_SUCCESS) die(what, openrnn_last_error());
}
void ck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) die(what, "cuBLAS error");
}

void* dalloc(size_t bytes, int fill) {
  void* p = nullptr;
  ck(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  // Small finite values in either 16-bit type: 0x20 bytes make 0x2020 (float16 ~0.008, bfloat16 ~1e-19).
  ck(cudaMemset(p, fill, bytes), "cudaMemset");
  return p;
}

struct Probe {
  openrnn_cell cell = OPENRNN_CELL_LSTM;
  openrnn_data_type dt = OPENRNN_DATA_HALF;
  int H = 1024, B = 16, T = 100;
  cudaStream_t s = nullptr;
  openrnn_handle_t h = nullptr;
  openrnn_rnn_desc_t rd = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  cublasHandle_t blas = nullptr;
  size_t wb = 0, ws_inf = 0, ws_tr = 0, rs_tr = 0;
  // Inference buffers (the graph reads these) and training buffers (separate).
  void *x = nullptr, *y = nullptr, *hx = nullptr, *cx = nullptr, *hy = nullptr, *cy = nullptr, *w = nullptr,
       *ws = nullptr;
  void *tws = nullptr, *trs = nullptr, *dy = nullptr, *dx = nullptr, *dw = nullptr, *ty = nullptr;
  void *flush = nullptr;
  void* ev_buf = nullptr;  // the evictlast action's buffer
  size_t ev_words = 0;
  size_t flush_bytes = 0;
  cudaGraphExec_t exec = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  bool trainq = true, own_blas = true, eager_first = false;  // setup switches

  bool lstm() const { return cell == OPENRNN_CELL_LSTM; }
  int G() const { return lstm() ? 4 : 3; }
  size_t nx() const { return size_t(T) * B * H; }
  size_t ns() const { return size_t(B) * H; }

  void setup() {
    ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
    ck(cudaEventCreate(&e0), "event");
    ck(cudaEventCreate(&e1), "event");
    ck(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0), "handle");
    ck(openrnn_set_stream(h, s), "set_stream");
    openrnn_rnn_config cfg;
    ck(openrnn_rnn_config_init(&cfg), "config");
    cfg.cell = cell;
    cfg.input_size = H;
    cfg.hidden_size = H;
    cfg.data_type = dt;
    cfg.algo = OPENRNN_ALGO_STANDARD;
    ck(openrnn_create_rnn_desc(&rd, &cfg), "rnn desc");
    ck(openrnn_create_seq_desc(&xd, dt, OPENRNN_LAYOUT_SEQ_MAJOR, T, B, H, nullptr, 0.0), "seq desc");
    ck(openrnn_get_weight_space_size(h, rd, &wb), "weight size");
    size_t r = 0;
    ck(openrnn_get_temp_space_sizes(h, rd, OPENRNN_FWD_INFERENCE, xd, &ws_inf, &r), "temp sizes");
    if (trainq) ck(openrnn_get_temp_space_sizes(h, rd, OPENRNN_FWD_TRAINING, xd, &ws_tr, &rs_tr), "temp sizes");
    if (own_blas) {
      ck(cublasCreate(&blas), "cublasCreate");
      ck(cublasSetStream(blas, s), "cublasSetStream");
    }
    cudaDeviceProp p;
    ck(cudaGetDeviceProperties(&p, 0), "props");
    flush_bytes = size_t(p.l2CacheSize) * 2;
    ck(cudaMalloc(&flush, flush_bytes), "flush");
    new_buffers();
    if (eager_first) {
      infer();
      ck(cudaStreamSynchronize(s), "sync");
    }
    capture();
  }

  void free_inference() {
    for (void* p : {x, y, hx, cx, hy, cy, w, ws}) cudaFree(p);
  }
  void new_buffers() {
    if (x) free_inference();
    x = dalloc(nx() * 2, 0x20);
    y = dalloc(nx() * 2, 0);
    hx = dalloc(ns() * 2, 0x20);
    cx = dalloc(ns() * 2, 0x20);
    hy = dalloc(ns() * 2, 0);
    cy = dalloc(ns() * 2, 0);
    w = dalloc(wb, 0x20);
    ws = dalloc(ws_inf, 0);
  }
  // Refills x, hx, cx and W in place (the graph keeps its addresses).
  void fill(const std::string& how, std::mt19937& rng) {
    const float k = 1.f / std::sqrt(float(H));
    auto put = [&](void* d, size_t n, float a) {
      std::vector<uint16_t> v(n);
      std::uniform_real_distribution<float> u(-a, a);
      for (auto& e : v) {
        const float f = how == "rand" ? u(rng) : 0.f;
        if (how == "const") {
          e = 0x2020;
        } else if (dt == OPENRNN_DATA_HALF) {
          const __half hv = __float2half_rn(f);
          std::memcpy(&e, &hv, 2);
        } else {
          const __nv_bfloat16 bv = __float2bfloat16_rn(f);
          std::memcpy(&e, &bv, 2);
        }
      }
      ck(cudaMemcpy(d, v.data(), n * 2, cudaMemcpyHostToDevice), "fill");
    };
    put(x, nx(), 1.f);
    put(hx, ns(), 1.f);
    put(cx, ns(), 1.f);
    put(w, wb / 2, k);
  }
  void infer() {
    ck(openrnn_forward(h, rd, OPENRNN_FWD_INFERENCE, xd, x, y, hx, hy, lstm() ? cx : nullptr, lstm() ? cy : nullptr,
                       w, wb, ws, ws_inf, nullptr, 0),
       "forward inference");
  }
  void capture() {
    if (exec) cudaGraphExecDestroy(exec);
    ck(cudaStreamSynchronize(s), "sync");
    ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture");
    infer();
    cudaGraph_t g = nullptr;
    ck(cudaStreamEndCapture(s, &g), "end capture");
    ck(cudaGraphInstantiate(&exec, g, 0), "instantiate");
    cudaGraphDestroy(g);
  }
  // Median µs per step of 15 replays (2 untimed first), the L2 overwritten before each.
  double time(bool graph) {
    std::vector<float> t;
    for (int i = 0; i < 17; ++i) {
      ck(cudaMemsetAsync(flush, i & 0xff, flush_bytes, s), "flush");
      ck(cudaEventRecord(e0, s), "record");
      if (graph)
        ck(cudaGraphLaunch(exec, s), "graph launch");
      else
        infer();
      ck(cudaEventRecord(e1, s), "record");
      ck(cudaEventSynchronize(e1), "sync");
      float ms = 0;
      ck(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
      if (i >= 2) t.push_back(ms * 1000.f / T);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }

  void training_buffers() {
    if (tws) return;
    if (!trainq) ck(openrnn_get_temp_space_sizes(h, rd, OPENRNN_FWD_TRAINING, xd, &ws_tr, &rs_tr), "temp sizes");
    tws = dalloc(ws_tr, 0);
    trs = dalloc(rs_tr, 0);
    dy = dalloc(nx() * 2, 0x20);
    dx = dalloc(nx() * 2, 0);
    dw = dalloc(wb, 0);
    ty = dalloc(nx() * 2, 0);
  }
  void fwd_train() {
    training_buffers();
    ck(openrnn_forward(h, rd, OPENRNN_FWD_TRAINING, xd, x, ty, hx, nullptr, lstm() ? cx : nullptr, nullptr, w, wb,
                       tws, ws_tr, trs, rs_tr),
       "forward training");
  }
  void bwd_data() {
    training_buffers();
    ck(openrnn_backward_data(h, rd, xd, dy, dx, nullptr, nullptr, nullptr, nullptr, w, wb, tws, ws_tr, trs, rs_tr),
       "backward data");
  }
  void bwd_w() {
    training_buffers();
    ck(openrnn_backward_weights(h, rd, OPENRNN_WGRAD_SET, xd, x, dw, wb, tws, ws_tr, trs, rs_tr), "backward weights");
  }
  // One cuBLAS GEMM C[m x n] = A op B in column-major terms, 16-bit in and out, float32 accumulate.
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k) {
    const cudaDataType t = dt == OPENRNN_DATA_HALF ? CUDA_R_16F : CUDA_R_16BF;
    if (!blas) {
      ck(cublasCreate(&blas), "cublasCreate");
      ck(cublasSetStream(blas, s), "cublasSetStream");
    }
    void* a = dalloc(size_t(m) * k * 2, 0x20);
    void* b = dalloc(size_t(k) * n * 2, 0x20);
    void* c = dalloc(size_t(m) * n * 2, 0);
    const float one = 1.f, zero = 0.f;
    ck(cublasGemmEx(blas, ta, tb, m, n, k, &one, a, t, ta == CUBLAS_OP_N ? m : k, b, t, tb == CUBLAS_OP_N ? k : n,
                    &zero, c, t, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
       "cublasGemmEx");
    ck(cudaStreamSynchronize(s), "sync");
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Probe p;
  std::vector<std::string> actions;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("cell=", 0) == 0)
      p.cell = a.substr(5) == "gru" ? OPENRNN_CELL_GRU : OPENRNN_CELL_LSTM;
    else if (a.rfind("dt=", 0) == 0)
      p.dt = a.substr(3) == "bf16" ? OPENRNN_DATA_BFLOAT16 : OPENRNN_DATA_HALF;
    else if (a.rfind("H=", 0) == 0)
      p.H = std::atoi(a.c_str() + 2);
    else if (a.rfind("B=", 0) == 0)
      p.B = std::atoi(a.c_str() + 2);
    else if (a.rfind("T=", 0) == 0)
      p.T = std::atoi(a.c_str() + 2);
    else if (a == "setup=notrainq")
      p.trainq = false;
    else if (a == "setup=noblas")
      p.own_blas = false;
    else if (a == "setup=eager")
      p.eager_first = true;
    else
      actions.push_back(a);
  }
  p.setup();
  std::printf("probe %s %s H=%d B=%d T=%d\n", p.lstm() ? "lstm" : "gru", p.dt == OPENRNN_DATA_HALF ? "f16" : "bf16",
              p.H, p.B, p.T);
  const int TB = p.T * p.B, GH = p.G() * p.H, H = p.H;
  std::string since = "start";
  for (const std::string& a : actions) {
    if (a == "t" || a == "eager") {
      std::printf("  %-44s %8.3f us/step%s\n", since.c_str(), p.time(a == "t"), a == "eager" ? " (eager)" : "");
      std::fflush(stdout);
      continue;
    }
    if (a.rfind("idle=", 0) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(int(1000 * std::atof(a.c_str() + 5))));
    } else if (a.rfind("alloc=", 0) == 0) {
      const size_t bytes = size_t(std::atof(a.c_str() + 6) * double(1ull << 30));
      void* q = dalloc(bytes, 0x11);
      ck(cudaDeviceSynchronize(), "sync");
      cudaFree(q);
    } else if (a == "gemm_dw") {
      p.gemm(CUBLAS_OP_N, CUBLAS_OP_T, H, GH, TB);  // column-major [H x GH] = h^T [H x TB] . dG [TB x GH]
    } else if (a == "gemm_dx") {
      p.gemm(CUBLAS_OP_N, CUBLAS_OP_N, H, TB, GH);  // [H x TB] = W_ih^T-ish [H x GH] . dG^T [GH x TB]
    } else if (a == "gemm_xw") {
      p.gemm(CUBLAS_OP_T, CUBLAS_OP_N, GH, TB, H);  // [GH x TB] = W_ih [GH x H] . x^T [H x TB]
    } else if (a == "fwd_train") {
      p.fwd_train();
    } else if (a == "bwd_data") {
      p.bwd_data();
    } else if (a == "bwd_w") {
      p.bwd_w();
    } else if (a.rfind("evictlast=", 0) == 0) {
      static void* buf = nullptr;
      static size_t words = 0;
      if (!buf) {
        words = size_t(std::atof(a.c_str() + 10) * double(1 << 20)) / 16;
        buf = dalloc(words * 16, 0x11);
      }
      read_evict_last<<<264, 512, 0, p.s>>>(static_cast<const uint4*>(buf), words, static_cast<unsigned*>(p.y));
      p.ev_buf = buf;
      p.ev_words = words;
    } else if (a == "demote") {
      if (p.ev_buf) demote_lines<<<264, 512, 0, p.s>>>(static_cast<const uint4*>(p.ev_buf), p.ev_words);
    } else if (a.rfind("smem=", 0) == 0 || a.rfind("l1=", 0) == 0) {
      const bool big = a[0] == 's';
      const int c = std::atoi(a.c_str() + (big ? 5 : 3));
      const int bytes = big ? 200 * 1024 : 0;
      ck(cudaFuncSetAttribute(hold_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024), "smem attr");
      ck(cudaFuncSetAttribute(hold_sm, cudaFuncAttributePreferredSharedMemoryCarveout, c), "carveout attr");
      hold_sm<<<big ? 132 : 528, 128, bytes, p.s>>>();
      ck(cudaGetLastError(), "hold_sm");
    } else if (a == "l2reset") {
      ck(cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache");
    } else if (a.rfind("fill=", 0) == 0) {
      static std::mt19937 rng(1234);
      p.fill(a.substr(5), rng);
    } else if (a == "recapture") {
      p.capture();
    } else if (a == "newbuf") {
      p.new_buffers();
      p.capture();
    } else {
      die("unknown action", a.c_str());
    }
    ck(cudaDeviceSynchronize(), a.c_str());
    since = since == "start" ? a : since + " " + a;
    if (since.size() > 44) since = "..." + since.substr(since.size() - 41);
  }
  return 0;
}
