// Where a training call's time goes, per API call: forward(TRAINING), backward_data and backward_weights(SET) are
// captured into one CUDA graph with an external event record node before, between and after them, and each replay
// (after an L2 flush outside the timed region, as openrnn-bench does) reports the three parts. Over several T the
// per-part times give each part's fixed cost (the intercept of a least-squares line through time against T) and its
// cost per step (the slope). AUTO algorithm, one layer, one direction, I = H, random data.
//   call_split [--cell lstm,gru] [--hidden 256,512] [--batch 1,16] [--seq 25,50,100,200] [--dtype float16]
//              [--reps 15]
// (GPU machine; links libopenrnn. docs/performance.md, session 52.)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "lab_api.h"    // RNN_OK, fill<T>, split_list, median
#include "lab_check.h"  // CK(x): a CUDA runtime call checked (exit 1 on error)
#include "openrnn/openrnn.h"

namespace {

struct Parts {
  float fwd = 0, bwd_data = 0, bwd_weights = 0, total = 0;  // µs per call
};

Parts time_case(openrnn_handle_t h, cudaStream_t st, openrnn_cell cell, openrnn_data_type dt, int H, int B, int T,
                int reps, void* flush, size_t flush_bytes) {
  openrnn_rnn_config cfg;
  RNN_OK(openrnn_rnn_config_init(&cfg));
  cfg.cell = cell;
  cfg.input_size = H;
  cfg.hidden_size = H;
  cfg.num_layers = 1;
  cfg.bidirectional = 0;
  cfg.data_type = dt;
  cfg.algo = OPENRNN_ALGO_AUTO;
  openrnn_rnn_desc_t rd;
  RNN_OK(openrnn_create_rnn_desc(&rd, &cfg));
  openrnn_seq_desc_t xd;
  RNN_OK(openrnn_create_seq_desc(&xd, dt, OPENRNN_LAYOUT_SEQ_MAJOR, T, B, H, nullptr, 0.0));
  size_t wb = 0, wsz = 0, rsz = 0;
  RNN_OK(openrnn_get_weight_space_size(h, rd, &wb));
  RNN_OK(openrnn_get_temp_space_sizes(h, rd, OPENRNN_FWD_TRAINING, xd, &wsz, &rsz));
  const size_t es = 2, nx = size_t(T) * B * H, ns = size_t(B) * H;
  void *x, *y, *dy, *dx, *hx, *cx, *hy, *cy, *w, *dw, *ws, *rs;
  for (void** p : {&x, &y, &dy, &dx}) CK(cudaMalloc(p, nx * es));
  for (void** p : {&hx, &cx, &hy, &cy}) CK(cudaMalloc(p, ns * es));
  CK(cudaMalloc(&w, wb));
  CK(cudaMalloc(&dw, wb));
  CK(cudaMalloc(&ws, std::max<size_t>(wsz, 1)));
  CK(cudaMalloc(&rs, std::max<size_t>(rsz, 1)));
  fill16(dt, x, nx, 1.f, 1);
  fill16(dt, dy, nx, 1.f, 2);
  fill16(dt, hx, ns, 0.5f, 3);
  fill16(dt, cx, ns, 0.5f, 4);
  fill16(dt, w, wb / es, 0.0625f, 5);
  CK(cudaDeviceSynchronize());
  const bool lstm = cell == OPENRNN_CELL_LSTM;
  auto call = [&] {
    RNN_OK(openrnn_forward(h, rd, OPENRNN_FWD_TRAINING, xd, x, y, hx, hy, lstm ? cx : nullptr, lstm ? cy : nullptr, w,
                           wb, ws, wsz, rs, rsz));
  };
  auto bdata = [&] {
    RNN_OK(openrnn_backward_data(h, rd, xd, dy, dx, nullptr, nullptr, nullptr, nullptr, w, wb, ws, wsz, rs, rsz));
  };
  auto bweights = [&] {
    RNN_OK(openrnn_backward_weights(h, rd, OPENRNN_WGRAD_SET, xd, x, dw, wb, ws, wsz, rs, rsz));
  };
  for (int i = 0; i < 2; ++i) {  // warm-up, eager
    call();
    bdata();
    bweights();
  }
  CK(cudaStreamSynchronize(st));
  cudaEvent_t ev[4];
  for (auto& e : ev) CK(cudaEventCreate(&e));
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  CK(cudaEventRecordWithFlags(ev[0], st, cudaEventRecordExternal));
  call();
  CK(cudaEventRecordWithFlags(ev[1], st, cudaEventRecordExternal));
  bdata();
  CK(cudaEventRecordWithFlags(ev[2], st, cudaEventRecordExternal));
  bweights();
  CK(cudaEventRecordWithFlags(ev[3], st, cudaEventRecordExternal));
  CK(cudaStreamEndCapture(st, &g));
  cudaGraphExec_t ge;
  CK(cudaGraphInstantiate(&ge, g, 0));
  std::vector<float> t[4];
  for (int r = 0; r < reps + 2; ++r) {
    CK(cudaMemsetAsync(flush, r & 0xff, flush_bytes, st));  // L2 flush, outside the events
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    if (r < 2) continue;  // the first replays warm the graph up
    float ms[4];
    CK(cudaEventElapsedTime(&ms[0], ev[0], ev[1]));
    CK(cudaEventElapsedTime(&ms[1], ev[1], ev[2]));
    CK(cudaEventElapsedTime(&ms[2], ev[2], ev[3]));
    CK(cudaEventElapsedTime(&ms[3], ev[0], ev[3]));
    for (int k = 0; k < 4; ++k) t[k].push_back(ms[k] * 1000.f);
  }
  Parts p;
  p.fwd = median(t[0]);
  p.bwd_data = median(t[1]);
  p.bwd_weights = median(t[2]);
  p.total = median(t[3]);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  for (auto& e : ev) CK(cudaEventDestroy(e));
  for (void* q : {x, y, dy, dx, hx, cx, hy, cy, w, dw, ws, rs}) CK(cudaFree(q));
  openrnn_destroy_seq_desc(xd);
  openrnn_destroy_rnn_desc(rd);
  return p;
}

// Least-squares line y = a + b T.
void fit(const std::vector<int>& Ts, const std::vector<float>& y, double* a, double* b) {
  double mx = 0, my = 0;
  for (size_t i = 0; i < Ts.size(); ++i) {
    mx += Ts[i];
    my += y[i];
  }
  mx /= Ts.size();
  my /= Ts.size();
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < Ts.size(); ++i) {
    sxy += (Ts[i] - mx) * (y[i] - my);
    sxx += (Ts[i] - mx) * (Ts[i] - mx);
  }
  *b = sxx > 0 ? sxy / sxx : 0;
  *a = my - *b * mx;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cells = "lstm,gru", hidden = "256,512", batch = "1,16", seq = "25,50,100,200", dtype = "float16";
  int reps = 15;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--cell") cells = v;
    else if (k == "--hidden") hidden = v;
    else if (k == "--batch") batch = v;
    else if (k == "--seq") seq = v;
    else if (k == "--dtype") dtype = v;
    else if (k == "--reps") reps = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "call_split: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  openrnn_handle_t h;
  RNN_OK(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  RNN_OK(openrnn_set_stream(h, st));
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  const size_t flush_bytes = size_t(2) * l2;
  void* flush;
  CK(cudaMalloc(&flush, flush_bytes));
  std::vector<int> Ts;
  for (const auto& s : split_list(seq)) Ts.push_back(std::atoi(s.c_str()));
  const openrnn_data_type dt = dtype == "bfloat16" ? OPENRNN_DATA_BFLOAT16 : OPENRNN_DATA_HALF;
  std::printf("cell,dtype,H,B,T,fwd_us,bwd_data_us,bwd_weights_us,total_us\n");
  std::vector<std::string> fits;
  for (const auto& c : split_list(cells)) {
    const openrnn_cell cell = c == "gru" ? OPENRNN_CELL_GRU : OPENRNN_CELL_LSTM;
    for (const auto& hs : split_list(hidden))
      for (const auto& bs : split_list(batch)) {
        const int H = std::atoi(hs.c_str()), B = std::atoi(bs.c_str());
        std::vector<float> y[4];
        for (int T : Ts) {
          const Parts p = time_case(h, st, cell, dt, H, B, T, reps, flush, flush_bytes);
          std::printf("%s,%s,%d,%d,%d,%.2f,%.2f,%.2f,%.2f\n", c.c_str(), dtype.c_str(), H, B, T, p.fwd, p.bwd_data,
                      p.bwd_weights, p.total);
          y[0].push_back(p.fwd);
          y[1].push_back(p.bwd_data);
          y[2].push_back(p.bwd_weights);
          y[3].push_back(p.total);
        }
        char line[256];
        double a[4], b[4];
        for (int k = 0; k < 4; ++k) fit(Ts, y[k], &a[k], &b[k]);
        std::snprintf(line, sizeof line,
                      "# fit %s %s H=%d B=%d: fixed us (per-step us) fwd %.1f (%.3f) | bwd_data %.1f (%.3f) | "
                      "bwd_weights %.1f (%.3f) | total %.1f (%.3f)",
                      c.c_str(), dtype.c_str(), H, B, a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3]);
        fits.push_back(line);
      }
  }
  for (const auto& f : fits) std::printf("%s\n", f.c_str());
  CK(cudaFree(flush));
  openrnn_destroy_handle(h);
  return 0;
}
