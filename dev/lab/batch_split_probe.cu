// Would STANDARD gain from running a batch as K independent chunks, each its own recurrence on its own stream?
// One inference call over B sequences is timed against K calls over B / K sequences each (K handles, each bound to
// its own stream, forked from and joined to one stream), each variant captured into one CUDA graph and replayed
// after an L2 flush, as openrnn-bench does. The chunks share the weights. A step whose time is latency (launches,
// the GEMM's pipeline fill, the pointwise kernel's round trips) rather than arithmetic or W_hh traffic should overlap
// with the other chunks' steps; a step bound by the GEMM's arithmetic, or by W_hh's reads (which each chunk repeats),
// should not. Before timing, each variant's y is compared with the one-call y (the largest difference is printed).
//   batch_split_probe [--cell lstm,gru] [--hidden 512,1024,2048] [--batch 256] [--split 1,2,4] [--seq 100]
//                     [--dtype float16] [--algo standard|auto] [--reps 7]
// (GPU machine; links libopenrnn. docs/performance.md, session 72.)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "lab_api.h"    // RNN_OK, fill<T>, split_list, median
#include "lab_check.h"  // CK(x): a CUDA runtime call checked (exit 1 on error)
#include "openrnn/openrnn.h"

namespace {

float to_float(unsigned short u, openrnn_data_type dt) {
  if (dt == OPENRNN_DATA_HALF) {
    __half_raw r;
    r.x = u;
    return __half2float(__half(r));
  }
  __nv_bfloat16_raw r;
  r.x = u;
  return __bfloat162float(__nv_bfloat16(r));
}

// One chunk: a handle on its own stream with its own inputs, outputs and workspace; x and hx are the full problem's
// rows [b0, b0 + Bc) (sequence-major x: one copy per step), so every variant computes the same sequences.
struct Chunk {
  openrnn_handle_t h = nullptr;
  cudaStream_t st = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  void *x = nullptr, *y = nullptr, *hx = nullptr, *cx = nullptr, *hy = nullptr, *cy = nullptr, *ws = nullptr;
  size_t wsz = 0;
};

struct Result {
  float us_per_step = 0, max_diff = 0;
};

Result run_variant(openrnn_rnn_desc_t rd, openrnn_data_type dt, bool lstm, int H, int B, int T, int K, void* w,
                   size_t wb, const void* x_full, const void* hx_full, const void* cx_full,
                   const std::vector<unsigned short>& y_ref, std::vector<unsigned short>* y_out, int reps,
                   cudaStream_t main_st, void* flush, size_t flush_bytes) {
  const size_t es = 2;
  const int Bc = B / K;
  std::vector<Chunk> ch(static_cast<size_t>(K));
  for (int k = 0; k < K; ++k) {
    Chunk& c = ch[static_cast<size_t>(k)];
    RNN_OK(openrnn_create_handle(&c.h, OPENRNN_DEVICE_CUDA, 0));
    CK(cudaStreamCreateWithFlags(&c.st, cudaStreamNonBlocking));
    RNN_OK(openrnn_set_stream(c.h, c.st));
    RNN_OK(openrnn_create_seq_desc(&c.xd, dt, OPENRNN_LAYOUT_SEQ_MAJOR, T, Bc, H, nullptr, 0.0));
    size_t rsz = 0;
    RNN_OK(openrnn_get_temp_space_sizes(c.h, rd, OPENRNN_FWD_INFERENCE, c.xd, &c.wsz, &rsz));
    const size_t nx = size_t(T) * Bc * H, ns = size_t(Bc) * H;
    CK(cudaMalloc(&c.x, nx * es));
    CK(cudaMalloc(&c.y, nx * es));
    for (void** p : {&c.hx, &c.cx, &c.hy, &c.cy}) CK(cudaMalloc(p, ns * es));
    CK(cudaMalloc(&c.ws, std::max<size_t>(c.wsz, 1)));
    CK(cudaMemcpy2D(c.x, size_t(Bc) * H * es, static_cast<const char*>(x_full) + size_t(k) * Bc * H * es,
                    size_t(B) * H * es, size_t(Bc) * H * es, T, cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy(c.hx, static_cast<const char*>(hx_full) + size_t(k) * ns * es, ns * es, cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy(c.cx, static_cast<const char*>(cx_full) + size_t(k) * ns * es, ns * es, cudaMemcpyDeviceToDevice));
  }
  auto calls = [&] {
    for (Chunk& c : ch)
      RNN_OK(openrnn_forward(c.h, rd, OPENRNN_FWD_INFERENCE, c.xd, c.x, c.y, c.hx, c.hy, lstm ? c.cx : nullptr,
                             lstm ? c.cy : nullptr, w, wb, c.ws, c.wsz, nullptr, 0));
  };
  calls();  // eager warm-up (plans, cuBLAS heuristics)
  calls();
  CK(cudaDeviceSynchronize());
  // y of all chunks, gathered into the one-call layout [T, B, H]
  const size_t ny = size_t(T) * B * H;
  y_out->assign(ny, 0);
  for (int k = 0; k < K; ++k)
    CK(cudaMemcpy2D(y_out->data() + size_t(k) * Bc * H, size_t(B) * H * es, ch[size_t(k)].y, size_t(Bc) * H * es,
                    size_t(Bc) * H * es, T, cudaMemcpyDeviceToHost));
  Result r;
  if (!y_ref.empty())
    for (size_t i = 0; i < ny; ++i)
      r.max_diff = std::max(r.max_diff, std::fabs(to_float((*y_out)[i], dt) - to_float(y_ref[i], dt)));
  // One graph: fork from main_st to every chunk's stream, the K calls, join back.
  cudaEvent_t fork, t0, t1;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  std::vector<cudaEvent_t> join(static_cast<size_t>(K));
  for (auto& e : join) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(main_st, cudaStreamCaptureModeThreadLocal));
  CK(cudaEventRecord(fork, main_st));
  for (Chunk& c : ch) CK(cudaStreamWaitEvent(c.st, fork, 0));
  calls();
  for (int k = 0; k < K; ++k) {
    CK(cudaEventRecord(join[size_t(k)], ch[size_t(k)].st));
    CK(cudaStreamWaitEvent(main_st, join[size_t(k)], 0));
  }
  CK(cudaStreamEndCapture(main_st, &g));
  cudaGraphExec_t ge;
  CK(cudaGraphInstantiate(&ge, g, 0));
  std::vector<float> t;
  for (int i = 0; i < reps + 2; ++i) {
    CK(cudaMemsetAsync(flush, i & 0xff, flush_bytes, main_st));  // L2 flush, outside the events
    CK(cudaEventRecord(t0, main_st));
    CK(cudaGraphLaunch(ge, main_st));
    CK(cudaEventRecord(t1, main_st));
    CK(cudaStreamSynchronize(main_st));
    if (i < 2) continue;
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, t0, t1));
    t.push_back(ms * 1000.f / T);
  }
  r.us_per_step = median(t);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  for (auto& e : join) CK(cudaEventDestroy(e));
  for (cudaEvent_t e : {fork, t0, t1}) CK(cudaEventDestroy(e));
  for (Chunk& c : ch) {
    for (void* p : {c.x, c.y, c.hx, c.cx, c.hy, c.cy, c.ws}) CK(cudaFree(p));
    openrnn_destroy_seq_desc(c.xd);
    openrnn_destroy_handle(c.h);
    CK(cudaStreamDestroy(c.st));
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cells = "lstm,gru", hidden = "512,1024,2048", batch = "256", splits = "1,2,4", dtype = "float16",
              algo = "standard";
  int T = 100, reps = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--cell") cells = v;
    else if (k == "--hidden") hidden = v;
    else if (k == "--batch") batch = v;
    else if (k == "--split") splits = v;
    else if (k == "--seq") T = std::atoi(v.c_str());
    else if (k == "--dtype") dtype = v;
    else if (k == "--algo") algo = v;
    else if (k == "--reps") reps = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "batch_split_probe: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const openrnn_data_type dt = dtype == "bfloat16" ? OPENRNN_DATA_BFLOAT16 : OPENRNN_DATA_HALF;
  cudaStream_t main_st;
  CK(cudaStreamCreateWithFlags(&main_st, cudaStreamNonBlocking));
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const size_t flush_bytes = size_t(2) * l2;
  void* flush;
  CK(cudaMalloc(&flush, flush_bytes));
  openrnn_handle_t h0;
  RNN_OK(openrnn_create_handle(&h0, OPENRNN_DEVICE_CUDA, 0));
  std::printf("cell,dtype,algo,H,B,T,chunks,us_per_step,vs_one_call,max_abs_diff_y\n");
  for (const auto& c : split_list(cells))
    for (const auto& hs : split_list(hidden))
      for (const auto& bs : split_list(batch)) {
        const bool lstm = c != "gru";
        const int H = std::atoi(hs.c_str()), B = std::atoi(bs.c_str());
        openrnn_rnn_config cfg;
        RNN_OK(openrnn_rnn_config_init(&cfg));
        cfg.cell = lstm ? OPENRNN_CELL_LSTM : OPENRNN_CELL_GRU;
        cfg.input_size = H;
        cfg.hidden_size = H;
        cfg.data_type = dt;
        cfg.algo = algo == "auto" ? OPENRNN_ALGO_AUTO : OPENRNN_ALGO_STANDARD;
        openrnn_rnn_desc_t rd;
        RNN_OK(openrnn_create_rnn_desc(&rd, &cfg));
        size_t wb = 0;
        RNN_OK(openrnn_get_weight_space_size(h0, rd, &wb));
        const size_t es = 2, nx = size_t(T) * B * H, ns = size_t(B) * H;
        void *w, *x, *hx, *cx;
        CK(cudaMalloc(&w, wb));
        CK(cudaMalloc(&x, nx * es));
        CK(cudaMalloc(&hx, ns * es));
        CK(cudaMalloc(&cx, ns * es));
        const float ws = 1.f / std::sqrt(float(H));
        fill16(dt, w, wb / es, ws, 5);
        fill16(dt, x, nx, 1.f, 1);
        fill16(dt, hx, ns, .5f, 3);
        fill16(dt, cx, ns, .5f, 4);
        CK(cudaDeviceSynchronize());
        std::vector<unsigned short> y_ref, y;
        float one = 0;
        for (const auto& ks : split_list(splits)) {
          const int K = std::atoi(ks.c_str());
          if (K < 1 || B % K) continue;
          const Result r = run_variant(rd, dt, lstm, H, B, T, K, w, wb, x, hx, cx, y_ref, &y, reps, main_st, flush,
                                       flush_bytes);
          if (y_ref.empty()) {
            y_ref = y;
            one = r.us_per_step;
          }
          std::printf("%s,%s,%s,%d,%d,%d,%d,%.3f,%.3f,%.3g\n", c.c_str(), dtype.c_str(), algo.c_str(), H, B, T, K,
                      r.us_per_step, one > 0 ? r.us_per_step / one : 0.0, r.max_diff);
          std::fflush(stdout);
        }
        for (void* p : {w, x, hx, cx}) CK(cudaFree(p));
        openrnn_destroy_rnn_desc(rd);
      }
  openrnn_destroy_handle(h0);
  CK(cudaFree(flush));
  return 0;
}
