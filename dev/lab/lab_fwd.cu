// Persistent-kernel lab driver: builds random problems, checks every kernel variant against a float64 CPU reference
// and times it (cuBLAS input GEMM + persistent kernel, CUDA events, median) beside cuDNN's algorithms.
//
//   lab_fwd check                       correctness sweep: ragged unsorted lengths, D=1/2, odd B, determinism
//   lab_fwd bench [T] [reps]            timing grid (LSTM, GRU x f32/bf16/f16 x H 256/512/1024 x B 1..256), D=1
//   lab_fwd one NAME_SUBSTR B T D RAGGED  one checked call of the first matching variant (for compute-sanitizer)
//   lab_fwd prof NAME_SUBSTR B T        per-phase cycle counts of one step (v2 kernels)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lab.h"

using namespace lab;

#define CUDA_OK(x)                                                                                     \
  do {                                                                                                 \
    cudaError_t e_ = (x);                                                                              \
    if (e_ != cudaSuccess) {                                                                           \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));               \
      exit(1);                                                                                         \
    }                                                                                                  \
  } while (0)
#define CUBLAS_OK(x)                                                              \
  do {                                                                            \
    cublasStatus_t s_ = (x);                                                      \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                            \
      fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #x, s_); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

namespace lab {
static void* g_flush = nullptr;
static const size_t kFlushBytes = size_t(128) << 20;
void l2_flush(cudaStream_t s) {
  if (!g_flush) CUDA_OK(cudaMalloc(&g_flush, kFlushBytes));
  CUDA_OK(cudaMemsetAsync(g_flush, int(rand() & 0xff), kFlushBytes, s));
}
}  // namespace lab

namespace {

int gates(int cell) { return cell == 0 ? 4 : cell == 1 ? 3 : 1; }

// Value as stored in dtype dt, returned as float (the reference sees exactly what the GPU sees).
float round_to(float v, DType dt) {
  if (dt == DType::BF16) return __bfloat162float(__float2bfloat16(v));
  if (dt == DType::F16) return __half2float(__float2half(v));
  return v;
}
void to_device(const std::vector<float>& h, DType dt, void* d) {
  const size_t n = h.size();
  if (dt == DType::F32) {
    CUDA_OK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
  } else if (dt == DType::BF16) {
    std::vector<__nv_bfloat16> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = __float2bfloat16(h[i]);
    CUDA_OK(cudaMemcpy(d, t.data(), n * 2, cudaMemcpyHostToDevice));
  } else {
    std::vector<__half> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = __float2half(h[i]);
    CUDA_OK(cudaMemcpy(d, t.data(), n * 2, cudaMemcpyHostToDevice));
  }
}
std::vector<float> from_device(const void* d, size_t n, DType dt) {
  std::vector<float> h(n);
  if (dt == DType::F32) {
    CUDA_OK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
  } else if (dt == DType::BF16) {
    std::vector<__nv_bfloat16> t(n);
    CUDA_OK(cudaMemcpy(t.data(), d, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) h[i] = __bfloat162float(t[i]);
  } else {
    std::vector<__half> t(n);
    CUDA_OK(cudaMemcpy(t.data(), d, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) h[i] = __half2float(t[i]);
  }
  return h;
}

// One problem: host values (already rounded to the storage type) and the device buffers.
struct Problem {
  int cell, T, B, H, I, D;
  DType dt;
  std::vector<float> x;                             // [T, B, I]
  std::vector<float> wih[2], whh[2], bih[2], bhh[2];  // canonical
  std::vector<float> h0[2], c0[2];                  // [B, H]
  std::vector<int> len;                             // [B]
  bool ragged = false;
  // device
  void *dx = nullptr, *dwih[2] = {}, *dwhh[2] = {}, *dy = nullptr;
  float *dbx[2] = {}, *dbh[2] = {}, *dh0[2] = {}, *dc0[2] = {}, *dxp[2] = {}, *dhn[2] = {}, *dcn[2] = {}, *dhg[2] = {};
  unsigned* dflags[2] = {};
  int* dlen = nullptr;
  DevProblem dev;

  Problem(int cell_, DType dt_, int T_, int B_, int H_, int D_, bool ragged_, unsigned seed)
      : cell(cell_), T(T_), B(B_), H(H_), I(H_), D(D_), dt(dt_), ragged(ragged_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    const int G = gates(cell);
    const float k = 1.f / std::sqrt(float(H));
    x.resize(size_t(T) * B * I);
    for (auto& v : x) v = round_to(u(rng), dt);
    for (int d = 0; d < D; ++d) {
      wih[d].resize(size_t(G) * H * I);
      whh[d].resize(size_t(G) * H * H);
      bih[d].resize(G * H);
      bhh[d].resize(G * H);
      h0[d].resize(size_t(B) * H);
      c0[d].resize(size_t(B) * H);
      for (auto& v : wih[d]) v = round_to(k * u(rng), dt);
      for (auto& v : whh[d]) v = round_to(k * u(rng), dt);
      for (auto& v : bih[d]) v = k * u(rng);
      for (auto& v : bhh[d]) v = k * u(rng);
      for (auto& v : h0[d]) v = 0.5f * u(rng);
      for (auto& v : c0[d]) v = 0.5f * u(rng);
    }
    len.assign(B, T);
    if (ragged) {
      std::uniform_int_distribution<int> ul(0, T);
      for (int b = 0; b < B; ++b) len[b] = ul(rng);
      len[B / 2] = T;  // the longest sequence need not come first (unsorted)
      if (B > 2) len[B - 1] = 0;
    }
    const size_t es = dtype_size(dt);
    CUDA_OK(cudaMalloc(&dx, x.size() * es));
    to_device(x, dt, dx);
    CUDA_OK(cudaMalloc(&dy, size_t(T) * B * D * H * es));
    CUDA_OK(cudaMalloc(&dlen, sizeof(int) * B));
    CUDA_OK(cudaMemcpy(dlen, len.data(), sizeof(int) * B, cudaMemcpyHostToDevice));
    for (int d = 0; d < D; ++d) {
      CUDA_OK(cudaMalloc(&dwih[d], wih[d].size() * es));
      CUDA_OK(cudaMalloc(&dwhh[d], whh[d].size() * es));
      to_device(wih[d], dt, dwih[d]);
      to_device(whh[d], dt, dwhh[d]);
      std::vector<float> bx(G * H), bh(G * H, 0.f);
      for (int r = 0; r < G * H; ++r) {
        const bool gru_n = cell == 1 && r >= 2 * H;
        bx[r] = gru_n ? bih[d][r] : bih[d][r] + bhh[d][r];
        bh[r] = gru_n ? bhh[d][r] : 0.f;
      }
      CUDA_OK(cudaMalloc(&dbx[d], G * H * 4));
      CUDA_OK(cudaMalloc(&dbh[d], G * H * 4));
      to_device(bx, DType::F32, dbx[d]);
      to_device(bh, DType::F32, dbh[d]);
      CUDA_OK(cudaMalloc(&dh0[d], size_t(B) * H * 4));
      CUDA_OK(cudaMalloc(&dc0[d], size_t(B) * H * 4));
      to_device(h0[d], DType::F32, dh0[d]);
      to_device(c0[d], DType::F32, dc0[d]);
      CUDA_OK(cudaMalloc(&dxp[d], size_t(T) * B * G * H * 4));
      CUDA_OK(cudaMalloc(&dhn[d], size_t(B) * H * 4));
      CUDA_OK(cudaMalloc(&dcn[d], size_t(B) * H * 4));
      CUDA_OK(cudaMalloc(&dhg[d], size_t(2) * B * H * 4));
      CUDA_OK(cudaMalloc(&dflags[d], 256 * sizeof(unsigned)));
    }
    dev = DevProblem{};
    dev.cell = cell;
    dev.T = T;
    dev.B = B;
    dev.H = H;
    dev.D = D;
    dev.dt = dt;
    dev.y = dy;
    dev.lengths = ragged ? dlen : nullptr;
    for (int d = 0; d < D; ++d) {
      dev.xproj[d] = dxp[d];
      dev.whh[d] = dwhh[d];
      dev.bx[d] = dbx[d];
      dev.bh[d] = dbh[d];
      dev.h0[d] = dh0[d];
      dev.c0[d] = dc0[d];
      dev.hn[d] = dhn[d];
      dev.cn[d] = dcn[d];
      dev.hg[d] = dhg[d];
      dev.flags[d] = dflags[d];
    }
  }
  ~Problem() {
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dlen);
    for (int d = 0; d < 2; ++d) {
      cudaFree(dwih[d]);
      cudaFree(dwhh[d]);
      cudaFree(dbx[d]);
      cudaFree(dbh[d]);
      cudaFree(dh0[d]);
      cudaFree(dc0[d]);
      cudaFree(dxp[d]);
      cudaFree(dhn[d]);
      cudaFree(dcn[d]);
      cudaFree(dhg[d]);
      cudaFree(dflags[d]);
    }
  }

  // xproj[d] [T*B, G*H] = x [T*B, I] . W_ih^T, float32 output (strict float32 for f32: no TF32).
  void input_gemm(cublasHandle_t h) const {
    const int G = gates(cell);
    const float one = 1.f, zero = 0.f;
    const cudaDataType_t at = dt == DType::F32 ? CUDA_R_32F : dt == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
    for (int d = 0; d < D; ++d)
      CUBLAS_OK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, G * H, T * B, I, &one, dwih[d], at, I, dx, at, I, &zero,
                             dxp[d], CUDA_R_32F, G * H, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
};

struct RefOut {
  std::vector<int> cols;
  std::vector<double> y;       // [ncol][T][D*H]
  std::vector<double> hn, cn;  // [ncol][D][H]
};

double sigm(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Float64 reference on a subset of batch columns (independent of the kernels: plain loops).
RefOut reference(const Problem& p, const std::vector<int>& cols) {
  RefOut r;
  r.cols = cols;
  const int T = p.T, H = p.H, I = p.I, D = p.D, G = gates(p.cell), nc = int(cols.size());
  r.y.assign(size_t(nc) * T * D * H, 0.0);
  r.hn.assign(size_t(nc) * D * H, 0.0);
  r.cn.assign(size_t(nc) * D * H, 0.0);
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int ci = 0; ci < nc; ++ci) {
    for (int d = 0; d < D; ++d) {
      const int b = cols[ci], len = p.len[b];
      std::vector<double> h(H), c(H), a(size_t(G) * H), ah(size_t(G) * H);
      for (int k = 0; k < H; ++k) {
        h[k] = p.h0[d][size_t(b) * H + k];
        c[k] = p.c0[d][size_t(b) * H + k];
      }
      for (int s = 0; s < len; ++s) {
        const int t = d == 0 ? s : len - 1 - s;
        const float* xt = &p.x[(size_t(t) * p.B + b) * I];
        for (int row = 0; row < G * H; ++row) {
          double sx = p.bih[d][row], sh = p.bhh[d][row];
          const float* wi = &p.wih[d][size_t(row) * I];
          const float* wh = &p.whh[d][size_t(row) * H];
          for (int k = 0; k < I; ++k) sx += double(wi[k]) * xt[k];
          for (int k = 0; k < H; ++k) sh += double(wh[k]) * h[k];
          a[row] = sx;
          ah[row] = sh;
        }
        for (int u = 0; u < H; ++u) {
          if (p.cell == 0) {
            const double i = sigm(a[u] + ah[u]), f = sigm(a[H + u] + ah[H + u]);
            const double g = std::tanh(a[2 * H + u] + ah[2 * H + u]), o = sigm(a[3 * H + u] + ah[3 * H + u]);
            c[u] = f * c[u] + i * g;
            h[u] = o * std::tanh(c[u]);
          } else if (p.cell == 1) {
            const double rr = sigm(a[u] + ah[u]), z = sigm(a[H + u] + ah[H + u]);
            const double n = std::tanh(a[2 * H + u] + rr * ah[2 * H + u]);
            h[u] = (1 - z) * n + z * h[u];
          } else {
            const double v = a[u] + ah[u];
            h[u] = p.cell == 2 ? std::tanh(v) : (v > 0 ? v : 0);
          }
        }
        for (int u = 0; u < H; ++u) r.y[(size_t(ci) * T + t) * D * H + d * H + u] = h[u];
      }
      for (int u = 0; u < H; ++u) {
        r.hn[(size_t(ci) * D + d) * H + u] = h[u];
        r.cn[(size_t(ci) * D + d) * H + u] = c[u];
      }
    }
  }
  return r;
}

struct CheckResult {
  double err_y = 0, err_h = 0, err_c = 0;
  bool nan = false;
  double worst() const { return nan ? INFINITY : std::max(err_y, std::max(err_h, err_c)); }
};

CheckResult compare(const Problem& p, const RefOut& r) {
  CheckResult cr;
  const int T = p.T, H = p.H, D = p.D, B = p.B;
  const auto y = from_device(p.dy, size_t(T) * B * D * H, p.dt);
  double ny = 0, dy = 0, nh = 0, dh = 0, nc = 0, dc = 0;
  for (size_t ci = 0; ci < r.cols.size(); ++ci) {
    const int b = r.cols[ci];
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < D * H; ++k) {
        const double g = y[(size_t(t) * B + b) * D * H + k], e = r.y[(ci * T + t) * D * H + k];
        if (std::isnan(g)) cr.nan = true;
        ny += e * e;
        dy += (g - e) * (g - e);
      }
    for (int d = 0; d < D; ++d) {
      const auto hn = from_device(p.dhn[d] + size_t(b) * H, H, DType::F32);
      const auto cn = from_device(p.dcn[d] + size_t(b) * H, H, DType::F32);
      for (int k = 0; k < H; ++k) {
        const double eh = r.hn[(ci * D + d) * H + k], ec = r.cn[(ci * D + d) * H + k];
        if (std::isnan(hn[k]) || (p.cell == 0 && std::isnan(cn[k]))) cr.nan = true;
        nh += eh * eh;
        dh += (hn[k] - eh) * (hn[k] - eh);
        nc += ec * ec;
        dc += (cn[k] - ec) * (cn[k] - ec);
      }
    }
  }
  cr.err_y = std::sqrt(dy / std::max(ny, 1e-300));
  cr.err_h = std::sqrt(dh / std::max(nh, 1e-300));
  cr.err_c = p.cell == 0 ? std::sqrt(dc / std::max(nc, 1e-300)) : 0.0;
  return cr;
}

double tolerance(DType dt) { return dt == DType::F32 ? 1e-5 : dt == DType::BF16 ? 1e-2 : 2e-3; }

// Poison outputs (NaN bit patterns), run once, synchronise.
cudaError_t run_once(const Variant& v, const Plan& pl, Problem& p, cublasHandle_t cb) {
  const size_t es = dtype_size(p.dt);
  CUDA_OK(cudaMemset(p.dy, 0xff, size_t(p.T) * p.B * p.D * p.H * es));
  for (int d = 0; d < p.D; ++d) {
    CUDA_OK(cudaMemset(p.dhn[d], 0xff, size_t(p.B) * p.H * 4));
    CUDA_OK(cudaMemset(p.dcn[d], 0xff, size_t(p.B) * p.H * 4));
  }
  if (p.cell != 0)
    for (int d = 0; d < p.D; ++d) CUDA_OK(cudaMemset(p.dcn[d], 0, size_t(p.B) * p.H * 4));
  p.input_gemm(cb);
  cudaError_t e = v.run(p.dev, pl, nullptr);
  if (e != cudaSuccess) return e;
  return cudaDeviceSynchronize();
}

// Median µs per call of (input GEMMs + kernel), and of the kernel alone.
void time_variant(const Variant& v, const Plan& pl, Problem& p, cublasHandle_t cb, int reps, double& total_us,
                  double& kernel_us) {
  cudaEvent_t e0, e1, e2;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  CUDA_OK(cudaEventCreate(&e2));
  std::vector<float> tt, tk;
  for (int i = 0; i < reps + 3; ++i) {
    l2_flush(nullptr);
    CUDA_OK(cudaEventRecord(e0));
    p.input_gemm(cb);
    CUDA_OK(cudaEventRecord(e1));
    CUDA_OK(v.run(p.dev, pl, nullptr));
    CUDA_OK(cudaEventRecord(e2));
    CUDA_OK(cudaEventSynchronize(e2));
    float a = 0, b = 0;
    CUDA_OK(cudaEventElapsedTime(&a, e0, e2));
    CUDA_OK(cudaEventElapsedTime(&b, e1, e2));
    if (i >= 3) {
      tt.push_back(a * 1000.f);
      tk.push_back(b * 1000.f);
    }
  }
  std::sort(tt.begin(), tt.end());
  std::sort(tk.begin(), tk.end());
  total_us = tt[tt.size() / 2];
  kernel_us = tk[tk.size() / 2];
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaEventDestroy(e2);
}

std::vector<std::unique_ptr<Variant>> all_variants() {
  std::vector<std::unique_ptr<Variant>> v;
  add_variants_f32(v);
  add_variants_bf16(v);
  add_variants_f16(v);
  return v;
}

std::vector<int> pick_cols(int B, bool all) {
  std::vector<int> c;
  if (all) {
    for (int b = 0; b < B; ++b) c.push_back(b);
  } else {
    c.push_back(0);
    if (B > 2) c.push_back(B / 2);
    if (B > 1) c.push_back(B - 1);
  }
  return c;
}

int cmd_check(cublasHandle_t cb, const char* filter) {
  auto vars = all_variants();
  int fails = 0, runs = 0;
  printf("variant,B,T,D,ragged,C,BT,groups,smem,regs,local,err_y,err_h,err_c,deterministic,status\n");
  struct Case {
    int B, T, D;
    bool ragged;
  };
  const Case cases[] = {{1, 23, 1, false}, {5, 19, 2, true}, {33, 11, 1, true}, {18, 9, 2, true}};
  for (auto& v : vars) {
    if (filter && v->name().find(filter) == std::string::npos) continue;
    for (const Case& cs : cases) {
      Problem p(v->cell(), v->dtype(), cs.T, cs.B, v->H(), cs.D, cs.ragged, 1234 + runs);
      const Plan pl = v->plan(cs.B, cs.D);
      if (!pl.ok) {
        printf("%s,%d,%d,%d,%d,,,,,,,,,,,REFUSED: %s\n", v->name().c_str(), cs.B, cs.T, cs.D, cs.ragged,
               pl.why.c_str());
        continue;
      }
      ++runs;
      cudaError_t e = run_once(*v, pl, p, cb);
      if (e != cudaSuccess) {
        printf("%s,%d,%d,%d,%d,,,,,,,,,,,LAUNCH FAILED: %s\n", v->name().c_str(), cs.B, cs.T, cs.D, cs.ragged,
               cudaGetErrorString(e));
        ++fails;
        cudaGetLastError();
        continue;
      }
      const auto ref = reference(p, pick_cols(cs.B, true));
      const CheckResult cr = compare(p, ref);
      const auto y1 = from_device(p.dy, size_t(p.T) * p.B * p.D * p.H, p.dt);
      const auto h1 = from_device(p.dhn[0], size_t(p.B) * p.H, DType::F32);
      CUDA_OK(run_once(*v, pl, p, cb));
      const auto y2 = from_device(p.dy, size_t(p.T) * p.B * p.D * p.H, p.dt);
      const auto h2 = from_device(p.dhn[0], size_t(p.B) * p.H, DType::F32);
      const bool det = memcmp(y1.data(), y2.data(), y1.size() * 4) == 0 && memcmp(h1.data(), h2.data(), h1.size() * 4) == 0;
      const bool ok = cr.worst() <= tolerance(p.dt) && det;
      if (!ok) ++fails;
      printf("%s,%d,%d,%d,%d,%d,%d,%d,%zu,%d,%d,%.3g,%.3g,%.3g,%d,%s\n", v->name().c_str(), cs.B, cs.T, cs.D,
             cs.ragged, pl.C, pl.BT, pl.groups, pl.smem, pl.regs, pl.local_bytes, cr.err_y, cr.err_h, cr.err_c, det,
             ok ? "ok" : "FAIL");
      fflush(stdout);
    }
  }
  printf("CHECK SUMMARY: %d runs, %d failures\n", runs, fails);
  return fails ? 1 : 0;
}

int cmd_one(cublasHandle_t cb, const char* sub, int B, int T, int D, bool ragged) {
  auto vars = all_variants();
  for (auto& v : vars) {
    if (v->name().find(sub) == std::string::npos) continue;
    Problem p(v->cell(), v->dtype(), T, B, v->H(), D, ragged, 77);
    const Plan pl = v->plan(B, D);
    if (!pl.ok) {
      printf("%s refused: %s\n", v->name().c_str(), pl.why.c_str());
      return 1;
    }
    CUDA_OK(run_once(*v, pl, p, cb));
    const CheckResult cr = compare(p, reference(p, pick_cols(B, true)));
    printf("%s B=%d T=%d D=%d ragged=%d err_y=%.3g err_h=%.3g err_c=%.3g %s\n", v->name().c_str(), B, T, D, ragged,
           cr.err_y, cr.err_h, cr.err_c, cr.worst() <= tolerance(p.dt) ? "ok" : "FAIL");
    return cr.worst() <= tolerance(p.dt) ? 0 : 1;
  }
  printf("no variant matches %s\n", sub);
  return 1;
}

// Per-phase clock64 deltas (CTA 0, thread 0, steps 8..23) of one v2 variant: where a step's time goes.
int cmd_prof(cublasHandle_t cb, const char* sub, int B, int T) {
  auto vars = all_variants();
  for (auto& v : vars) {
    if (v->name().find(sub) == std::string::npos) continue;
    Problem p(v->cell(), v->dtype(), T, B, v->H(), 1, false, 99);
    const Plan pl = v->plan(B, 1);
    if (!pl.ok) {
      printf("%s refused: %s\n", v->name().c_str(), pl.why.c_str());
      return 1;
    }
    long long* dprof = nullptr;
    CUDA_OK(cudaMalloc(&dprof, 16 * 8 * sizeof(long long)));
    CUDA_OK(cudaMemset(dprof, 0, 16 * 8 * sizeof(long long)));
    p.dev.prof = dprof;
    CUDA_OK(run_once(*v, pl, p, cb));  // warm
    CUDA_OK(run_once(*v, pl, p, cb));
    std::vector<long long> h(16 * 8);
    CUDA_OK(cudaMemcpy(h.data(), dprof, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    double d[7] = {0};
    for (int s = 0; s < 15; ++s) {
      for (int k = 0; k < 6; ++k) d[k] += double(h[s * 8 + k + 1] - h[s * 8 + k]) / 15;
      d[6] += double(h[(s + 1) * 8] - h[s * 8 + 6]) / 15;
    }
    // Stamp slots differ by version: v4 has a gate phase and a cell phase (persistent_fwd.cuh), v2/v3 one
    // pointwise phase and an x-staging wait before the barrier.
    const bool v4 = v->name().rfind("v4_", 0) == 0;
    if (v->name().rfind("v6_", 0) == 0) {
      printf("prof %s B=%d groups=%d BT=%d cycles/step: matvec %.0f | reduce %.0f | gates+cell %.0f | push+arrive %.0f "
             "| writes+x %.0f | wait %.0f | total %.0f\n",
             v->name().c_str(), B, pl.groups, pl.BT, d[0], d[1], d[2], d[3], d[4], d[5],
             d[0] + d[1] + d[2] + d[3] + d[4] + d[5] + d[6]);
      cudaFree(dprof);
      return 0;
    }
    printf(v4 ? "prof %s B=%d groups=%d BT=%d cycles/step: matvec0 %.0f | sync %.0f | gates+sync %.0f | cell+push %.0f "
                "| other chunks %.0f | barrier %.0f | grid wait+load %.0f | total %.0f\n"
              : "prof %s B=%d groups=%d BT=%d cycles/step: matvec0 %.0f | sync %.0f | pointwise0 %.0f | other chunks "
                "%.0f | exchange %.0f | barrier %.0f | grid wait+load %.0f | total %.0f\n",
           v->name().c_str(), B, pl.groups, pl.BT, d[0], d[1], d[2], d[3], d[4], d[5], d[6],
           d[0] + d[1] + d[2] + d[3] + d[4] + d[5] + d[6]);
    cudaFree(dprof);
    return 0;
  }
  printf("no variant matches %s\n", sub);
  return 1;
}

int cmd_bench(cublasHandle_t cb, int T, int reps, const char* only_cell, const char* filter) {
  auto vars = all_variants();
  const char* algo_names[4] = {"std", "ps", "pd", "psh"};
  struct Row {
    std::string key, best_variant;
    double ours = 0, cudnn_best = 0, cudnn_std = 0, best_v1 = INFINITY;
    std::string cudnn_algo;
    double err = 0;
  };
  std::vector<Row> rows;
  printf("cell,dtype,H,B,T,variant,C,BT,groups,smem,regs,local,us_step_total,us_step_kernel,err,ok\n");
  for (int cell = 0; cell < 2; ++cell) {
    if (only_cell && strcmp(only_cell, cell_name(cell)) != 0) continue;
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
      for (int H : {256, 512, 1024}) {
        for (int B : {1, 4, 16, 64, 256}) {
          Problem p(cell, dt, T, B, H, 1, false, unsigned(cell * 1000 + H + B));
          RefOut ref;
          bool have_ref = false;
          Row row;
          char key[64];
          snprintf(key, sizeof key, "%s %s H=%d B=%d", cell_name(cell), dtype_name(dt), H, B);
          row.key = key;
          row.ours = INFINITY;
          for (auto& v : vars) {
            if (v->cell() != cell || v->dtype() != dt || v->H() != H) continue;
            if (filter && v->name().find(filter) == std::string::npos) continue;
            const Plan pl = v->plan(B, 1);
            if (!pl.ok) {
              printf("%s,%s,%d,%d,%d,%s,,,,,,,,,,REFUSED: %s\n", cell_name(cell), dtype_name(dt), H, B, T,
                     v->name().c_str(), pl.why.c_str());
              continue;
            }
            cudaError_t e = run_once(*v, pl, p, cb);
            if (e != cudaSuccess) {
              printf("%s,%s,%d,%d,%d,%s,,,,,,,,,,LAUNCH FAILED: %s\n", cell_name(cell), dtype_name(dt), H, B, T,
                     v->name().c_str(), cudaGetErrorString(e));
              cudaGetLastError();
              continue;
            }
            if (!have_ref) {
              ref = reference(p, pick_cols(B, false));
              have_ref = true;
            }
            const CheckResult cr = compare(p, ref);
            const bool ok = cr.worst() <= tolerance(dt);
            double tot = 0, ker = 0;
            time_variant(*v, pl, p, cb, reps, tot, ker);
            printf("%s,%s,%d,%d,%d,%s,%d,%d,%d,%zu,%d,%d,%.3f,%.3f,%.3g,%s\n", cell_name(cell), dtype_name(dt), H, B,
                   T, v->name().c_str(), pl.C, pl.BT, pl.groups, pl.smem, pl.regs, pl.local_bytes, tot / T, ker / T,
                   cr.worst(), ok ? "ok" : "FAIL");
            fflush(stdout);
            // "ours" = the shipped version (v4); the v3 column keeps the previous version beside it.
            if (ok && v->name().rfind("v3_", 0) == 0) {
              if (tot / T < row.best_v1) row.best_v1 = tot / T;
              continue;
            }
            if (ok && tot / T < row.ours) {
              row.ours = tot / T;
              row.best_variant = v->name();
              row.err = cr.worst();
            }
          }
          row.cudnn_best = INFINITY;
          for (int a = 0; a < 4; ++a) {
            std::string err;
            const double us = cudnn_forward_us(cell, dt, H, B, T, 1, a, reps, &err);
            printf("cudnn,%s,%s,%d,%d,%d,%s,%.3f,%s\n", cell_name(cell), dtype_name(dt), H, B, T, algo_names[a],
                   us > 0 ? us / T : -1.0, us > 0 ? "" : err.c_str());
            if (a == 0) row.cudnn_std = us > 0 ? us / T : -1;
            if (us > 0 && us / T < row.cudnn_best) {
              row.cudnn_best = us / T;
              row.cudnn_algo = algo_names[a];
            }
          }
          rows.push_back(row);
          fflush(stdout);
        }
      }
    }
  }
  int dev = 0;
  cudaDeviceProp prop;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  printf("\nSUMMARY (%s, T=%d, inference, 1 layer, D=1, µs/step incl. input GEMM; cuDNN best algo in same run)\n",
         prop.name, T);
  printf("%-26s %9s %9s %9s %-5s %9s %7s  %s\n", "shape", "ours", "v3", "cudnn", "algo", "cudnnstd", "speedup",
         "variant");
  double lsum = 0;
  int n = 0;
  for (const Row& r : rows) {
    const double sp = r.cudnn_best / r.ours;
    if (std::isfinite(sp) && sp > 0) {
      lsum += std::log(sp);
      ++n;
    }
    printf("%-26s %9.3f %9.3f %9.3f %-5s %9.3f %7.2f  %s\n", r.key.c_str(), r.ours, r.best_v1, r.cudnn_best,
           r.cudnn_algo.c_str(), r.cudnn_std, sp, r.best_variant.c_str());
  }
  printf("geomean speedup vs cuDNN best over %d rows: %.2f\n", n, n ? std::exp(lsum / n) : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s check [FILTER] | bench [T] [reps] [cell|all] [FILTER] | one NAME B T D RAGGED | prof NAME B T\n", argv[0]);
    return 2;
  }
  cublasHandle_t cb;
  CUBLAS_OK(cublasCreate(&cb));
  CUBLAS_OK(cublasSetMathMode(cb, CUBLAS_DEFAULT_MATH));  // COMPUTE_32F + default math: no TF32
  const std::string cmd = argv[1];
  int rc = 2;
  if (cmd == "check") rc = cmd_check(cb, argc > 2 ? argv[2] : nullptr);
  if (cmd == "bench")
    rc = cmd_bench(cb, argc > 2 ? atoi(argv[2]) : 100, argc > 3 ? atoi(argv[3]) : 20,
                   argc > 4 && strcmp(argv[4], "all") ? argv[4] : nullptr, argc > 5 ? argv[5] : nullptr);
  if (cmd == "prof" && argc >= 5) rc = cmd_prof(cb, argv[2], atoi(argv[3]), atoi(argv[4]));
  if (cmd == "one" && argc >= 7) rc = cmd_one(cb, argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
  cublasDestroy(cb);
  return rc;
}
