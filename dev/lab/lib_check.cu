// Library-level check of the PERSISTENT algorithm through the public C API: every case runs forward(INFERENCE) with
// PERSISTENT forced and with STANDARD on the same random inputs; y, hy, cy are compared (relative L2), and a few
// shapes are timed (median of 20, CUDA events). Also prints query_algo's reasons for refused problems.
//   lib_check            (GPU machine; links libopenrnn)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "openrnn/openrnn.h"

#define CK(x)                                                                                          \
  do {                                                                                                 \
    openrnn_status s_ = (x);                                                                           \
    if (s_ != OPENRNN_STATUS_SUCCESS) {                                                                \
      printf("FAIL %s:%d %s -> %s: %s\n", __FILE__, __LINE__, #x, openrnn_status_string(s_), openrnn_last_error()); \
      return false;                                                                                    \
    }                                                                                                  \
  } while (0)

namespace {

size_t esize(openrnn_data_type dt) { return dt == OPENRNN_DATA_FLOAT ? 4 : 2; }

// Random values in the storage type (bit patterns written on the host).
std::vector<unsigned char> random_bytes(size_t n, openrnn_data_type dt, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<unsigned char> b(n * esize(dt));
  for (size_t i = 0; i < n; ++i) {
    const float v = u(rng);
    uint32_t bits;
    memcpy(&bits, &v, 4);
    if (dt == OPENRNN_DATA_FLOAT) {
      memcpy(&b[i * 4], &v, 4);
    } else if (dt == OPENRNN_DATA_BFLOAT16) {
      const uint16_t h = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
      memcpy(&b[i * 2], &h, 2);
    } else {
      // float16 via the hardware-independent route: scale stays small, so a plain conversion is exact enough here.
      const float a = std::fabs(v);
      int e;
      const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
      uint16_t h = 0;
      if (a >= 6.1035156e-05f) {
        const int he = e - 1 + 15;
        const uint32_t mant = uint32_t(std::lround((m * 2.f - 1.f) * 1024.f));
        h = uint16_t((he << 10) + mant);
      }
      if (v < 0) h |= 0x8000;
      memcpy(&b[i * 2], &h, 2);
    }
  }
  return b;
}
std::vector<double> to_double(const std::vector<unsigned char>& b, openrnn_data_type dt) {
  const size_t n = b.size() / esize(dt);
  std::vector<double> o(n);
  for (size_t i = 0; i < n; ++i) {
    if (dt == OPENRNN_DATA_FLOAT) {
      float v;
      memcpy(&v, &b[i * 4], 4);
      o[i] = v;
    } else if (dt == OPENRNN_DATA_BFLOAT16) {
      uint16_t h;
      memcpy(&h, &b[i * 2], 2);
      uint32_t bits = uint32_t(h) << 16;
      float v;
      memcpy(&v, &bits, 4);
      o[i] = v;
    } else {
      uint16_t h;
      memcpy(&h, &b[i * 2], 2);
      const int e = (h >> 10) & 31, m = h & 1023;
      double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
      if (e == 31) v = NAN;
      o[i] = (h & 0x8000) ? -v : v;
    }
  }
  return o;
}
double rel(const std::vector<double>& a, const std::vector<double>& b) {
  double n = 0, d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    n += b[i] * b[i];
    d += (a[i] - b[i]) * (a[i] - b[i]);
  }
  return std::sqrt(d / std::max(n, 1e-300));
}

struct Case {
  openrnn_cell cell;
  openrnn_data_type dt;
  int H, B, T, L, D;
  bool ragged, batch_major;
  double fill, clip;
};

bool run_case(openrnn_handle_t h, const Case& c, bool timing, int& fails) {
  const int I = 128;
  openrnn_rnn_config cfg;
  CK(openrnn_rnn_config_init(&cfg));
  cfg.cell = c.cell;
  cfg.input_size = I;
  cfg.hidden_size = c.H;
  cfg.num_layers = c.L;
  cfg.bidirectional = c.D == 2;
  cfg.data_type = c.dt;
  cfg.cell_clip = c.clip;
  std::mt19937 rng(c.H * 31 + c.B * 7 + c.L + c.D * 3 + int(c.dt));
  std::vector<int32_t> lens(c.B, c.T);
  if (c.ragged) {
    std::uniform_int_distribution<int> ul(1, c.T);
    for (auto& l : lens) l = ul(rng);
    lens[c.B / 2] = c.T;
  }
  openrnn_seq_desc_t xd;
  CK(openrnn_create_seq_desc(&xd, c.dt, c.batch_major ? OPENRNN_LAYOUT_BATCH_MAJOR : OPENRNN_LAYOUT_SEQ_MAJOR, c.T,
                             c.B, I, c.ragged ? lens.data() : nullptr, c.fill));
  const size_t es = esize(c.dt), nx = size_t(c.T) * c.B * I, ny = size_t(c.T) * c.B * c.D * c.H,
               ns = size_t(c.L) * c.D * c.B * c.H;
  std::vector<unsigned char> hxv = random_bytes(ns, c.dt, 0.5f, rng), cxv = random_bytes(ns, c.dt, 0.5f, rng),
                             xv = random_bytes(nx, c.dt, 1.f, rng);
  void *x, *y, *hx, *cx, *hy, *cy, *w, *ws = nullptr;
  cudaMalloc(&x, nx * es);
  cudaMalloc(&y, ny * es);
  cudaMalloc(&hx, ns * es);
  cudaMalloc(&cx, ns * es);
  cudaMalloc(&hy, ns * es);
  cudaMalloc(&cy, ns * es);
  cudaMemcpy(x, xv.data(), nx * es, cudaMemcpyHostToDevice);
  cudaMemcpy(hx, hxv.data(), ns * es, cudaMemcpyHostToDevice);
  cudaMemcpy(cx, cxv.data(), ns * es, cudaMemcpyHostToDevice);
  const bool lstm = c.cell == OPENRNN_CELL_LSTM;
  std::vector<double> out[2][3];
  double us[2] = {0, 0};
  char reason[512] = {0};
  for (int a = 0; a < 2; ++a) {
    cfg.algo = a == 0 ? OPENRNN_ALGO_PERSISTENT : OPENRNN_ALGO_STANDARD;
    openrnn_rnn_desc_t rd;
    CK(openrnn_create_rnn_desc(&rd, &cfg));
    int sup = 0;
    CK(openrnn_query_algo(h, rd, OPENRNN_FWD_INFERENCE, xd, cfg.algo, &sup, nullptr, reason, sizeof reason));
    if (!sup) {
      printf("REFUSED %s H=%d B=%d D=%d dt=%d: %s\n", a == 0 ? "persistent" : "standard", c.H, c.B, c.D, int(c.dt),
             reason);
      openrnn_destroy_rnn_desc(rd);
      openrnn_destroy_seq_desc(xd);
      ++fails;
      return true;
    }
    size_t wb = 0, wsz = 0, rsz = 0;
    CK(openrnn_get_weight_space_size(h, rd, &wb));
    CK(openrnn_get_temp_space_sizes(h, rd, OPENRNN_FWD_INFERENCE, xd, &wsz, &rsz));
    if (a == 0) {
      std::vector<unsigned char> wv = random_bytes(wb / es, c.dt, 1.f / std::sqrt(float(c.H)), rng);
      cudaMalloc(&w, wb);
      cudaMemcpy(w, wv.data(), wb, cudaMemcpyHostToDevice);
    }
    cudaMalloc(&ws, wsz);
    cudaMemset(y, 0xff, ny * es);
    cudaMemset(hy, 0xff, ns * es);
    cudaMemset(cy, 0xff, ns * es);
    CK(openrnn_forward(h, rd, OPENRNN_FWD_INFERENCE, xd, x, y, hx, hy, lstm ? cx : nullptr, lstm ? cy : nullptr, w,
                       wb, ws, wsz, nullptr, 0));
    if (cudaDeviceSynchronize() != cudaSuccess) {
      printf("FAIL CUDA error %s\n", cudaGetErrorString(cudaGetLastError()));
      return false;
    }
    std::vector<unsigned char> b(ny * es);
    cudaMemcpy(b.data(), y, ny * es, cudaMemcpyDeviceToHost);
    out[a][0] = to_double(b, c.dt);
    b.resize(ns * es);
    cudaMemcpy(b.data(), hy, ns * es, cudaMemcpyDeviceToHost);
    out[a][1] = to_double(b, c.dt);
    cudaMemcpy(b.data(), cy, ns * es, cudaMemcpyDeviceToHost);
    out[a][2] = to_double(b, c.dt);
    if (timing) {
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      std::vector<float> t;
      for (int r = 0; r < 23; ++r) {
        cudaEventRecord(e0);
        openrnn_forward(h, rd, OPENRNN_FWD_INFERENCE, xd, x, y, hx, hy, lstm ? cx : nullptr, lstm ? cy : nullptr,
                        w, wb, ws, wsz, nullptr, 0);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r >= 3) t.push_back(ms * 1000.f / (c.T * c.L));
      }
      std::sort(t.begin(), t.end());
      us[a] = t[t.size() / 2];
    }
    cudaFree(ws);
    openrnn_destroy_rnn_desc(rd);
  }
  const double tol = c.dt == OPENRNN_DATA_FLOAT ? 1e-5 : 2e-2;
  const double ey = rel(out[0][0], out[1][0]), eh = rel(out[0][1], out[1][1]),
               ec = lstm ? rel(out[0][2], out[1][2]) : 0.0;
  const bool ok = ey <= tol && eh <= tol && ec <= tol;
  if (!ok) ++fails;
  printf("%s %s dt=%d H=%d B=%d T=%d L=%d D=%d ragged=%d bm=%d fill=%g clip=%g | persistent vs standard: y %.2e "
         "hy %.2e cy %.2e",
         ok ? "ok  " : "FAIL", c.cell == OPENRNN_CELL_LSTM ? "lstm" : c.cell == OPENRNN_CELL_GRU ? "gru " : c.cell == OPENRNN_CELL_RNN_TANH ? "tanh" : "relu", int(c.dt), c.H, c.B, c.T, c.L, c.D, c.ragged, c.batch_major,
         c.fill, c.clip, ey, eh, ec);
  if (timing) printf(" | us/step persistent %.3f standard %.3f (x%.2f)", us[0], us[1], us[1] / us[0]);
  printf("\n");
  cudaFree(x);
  cudaFree(y);
  cudaFree(hx);
  cudaFree(cx);
  cudaFree(hy);
  cudaFree(cy);
  cudaFree(w);
  openrnn_destroy_seq_desc(xd);
  return true;
}

}  // namespace

int main() {
  openrnn_handle_t h;
  if (openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0) != OPENRNN_STATUS_SUCCESS) {
    printf("no CUDA handle: %s\n", openrnn_last_error());
    return 1;
  }
  int fails = 0;
  const openrnn_data_type F = OPENRNN_DATA_FLOAT, BF = OPENRNN_DATA_BFLOAT16, HF = OPENRNN_DATA_HALF;
  const Case cases[] = {
      {OPENRNN_CELL_LSTM, F, 256, 3, 17, 1, 1, false, false, 0, 0},
      {OPENRNN_CELL_LSTM, F, 256, 5, 13, 2, 2, true, true, -1.5, 0},
      {OPENRNN_CELL_GRU, F, 512, 4, 11, 1, 2, true, false, 0, 0},
      {OPENRNN_CELL_LSTM, F, 1024, 3, 9, 1, 1, true, false, 0, 0.5},
      {OPENRNN_CELL_GRU, BF, 256, 7, 15, 2, 1, true, true, 0, 0},
      {OPENRNN_CELL_LSTM, BF, 512, 2, 12, 1, 2, false, false, 0, 0},
      {OPENRNN_CELL_LSTM, HF, 1024, 6, 10, 1, 1, true, false, 0, 0},
      {OPENRNN_CELL_GRU, HF, 512, 33, 8, 1, 1, true, false, 0, 0},
      // Padded hidden sizes (run on the next compiled size) and RNN cells (v4).
      {OPENRNN_CELL_LSTM, F, 1, 3, 7, 2, 2, true, false, 0, 0},
      {OPENRNN_CELL_LSTM, F, 17, 5, 9, 1, 2, true, true, 0.5, 0},
      {OPENRNN_CELL_GRU, F, 255, 4, 8, 2, 1, true, false, 0, 0},
      {OPENRNN_CELL_GRU, BF, 300, 9, 7, 1, 2, true, false, 0, 0},
      {OPENRNN_CELL_LSTM, HF, 700, 5, 6, 1, 1, true, false, 0, 0.5},
      {OPENRNN_CELL_RNN_TANH, F, 3, 6, 9, 2, 2, true, false, 0, 0},
      {OPENRNN_CELL_RNN_RELU, F, 256, 4, 8, 1, 1, false, false, 0, 0},
      {OPENRNN_CELL_RNN_TANH, BF, 512, 5, 8, 1, 2, true, false, 0, 0},
      {OPENRNN_CELL_RNN_RELU, HF, 1000, 3, 8, 1, 1, true, false, 0, 0},
  };
  bool all = true;
  for (const Case& c : cases) all = run_case(h, c, false, fails) && all;
  const Case timed[] = {
      {OPENRNN_CELL_LSTM, F, 256, 1, 100, 1, 1, false, false, 0, 0},
      {OPENRNN_CELL_LSTM, F, 512, 4, 100, 1, 1, false, false, 0, 0},
      {OPENRNN_CELL_LSTM, F, 1024, 16, 100, 1, 1, false, false, 0, 0},
      {OPENRNN_CELL_GRU, BF, 512, 16, 100, 1, 1, false, false, 0, 0},
      {OPENRNN_CELL_LSTM, BF, 1024, 64, 100, 1, 1, false, false, 0, 0},
  };
  for (const Case& c : timed) all = run_case(h, c, true, fails) && all;
  // Refusals, in words.
  openrnn_rnn_config cfg;
  openrnn_rnn_config_init(&cfg);
  cfg.input_size = 64;
  cfg.algo = OPENRNN_ALGO_PERSISTENT;
  struct R {
    int H, D;
    openrnn_fwd_mode mode;
  } refusals[] = {{3072, 1, OPENRNN_FWD_INFERENCE}, {1024, 2, OPENRNN_FWD_INFERENCE}, {512, 1, OPENRNN_FWD_TRAINING},
                  {300, 1, OPENRNN_FWD_INFERENCE}, {1025, 1, OPENRNN_FWD_INFERENCE}};
  for (const R& r : refusals) {
    cfg.hidden_size = r.H;
    cfg.bidirectional = r.D == 2;
    openrnn_rnn_desc_t rd;
    openrnn_seq_desc_t xd;
    openrnn_create_rnn_desc(&rd, &cfg);
    openrnn_create_seq_desc(&xd, OPENRNN_DATA_FLOAT, OPENRNN_LAYOUT_SEQ_MAJOR, 10, 4, 64, nullptr, 0.0);
    int sup = -1;
    openrnn_algo chosen;
    char reason[512] = {0};
    openrnn_query_algo(h, rd, r.mode, xd, OPENRNN_ALGO_PERSISTENT, &sup, &chosen, reason, sizeof reason);
    printf("query H=%d D=%d mode=%d: supported=%d reason: %s\n", r.H, r.D, int(r.mode), sup, reason);
    int sup2 = -1;
    openrnn_query_algo(h, rd, r.mode, xd, OPENRNN_ALGO_AUTO, &sup2, &chosen, reason, sizeof reason);
    printf("   AUTO -> %s\n", chosen == OPENRNN_ALGO_PERSISTENT ? "PERSISTENT" : "STANDARD");
    openrnn_destroy_rnn_desc(rd);
    openrnn_destroy_seq_desc(xd);
  }
  openrnn_destroy_handle(h);
  printf("LIB_CHECK SUMMARY: %d failures%s\n", fails, all ? "" : " (aborted case)");
  return fails == 0 && all ? 0 : 1;
}
