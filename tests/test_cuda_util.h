// Helpers for the CUDA-only tests (tests/test_cuda_*.cpp): device buffers, dtype encoding, one call sequence
// (forward, backward_data, backward_weights) through the public C API, and a small float64 reference written from
// the equations in docs/numerics.md (simple loops, no library headers), used to check the GPU independently of the
// shared harness. Only compiled when OPENRNN_TEST_CUDA is defined.
#pragma once

// The tests owner's CMake defines OPENRNN_TEST_WITH_CUDA when OPENRNN_CUDA is ON; either name enables these tests.
#if defined(OPENRNN_TEST_WITH_CUDA) && !defined(OPENRNN_TEST_CUDA)
#define OPENRNN_TEST_CUDA 1
#endif

#ifdef OPENRNN_TEST_CUDA

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "openrnn/openrnn.h"

namespace cudatest {

inline bool has_device() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

#define CUDATEST_SKIP_IF_NO_GPU() \
  if (!cudatest::has_device()) GTEST_SKIP() << "no CUDA device"

#define CUDATEST_OK(call) ASSERT_EQ((call), OPENRNN_STATUS_SUCCESS) << #call << ": " << openrnn_last_error()
#define CUDATEST_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

inline size_t dsize(openrnn_data_type t) {
  return t == OPENRNN_DATA_DOUBLE ? 8 : t == OPENRNN_DATA_FLOAT ? 4 : 2;
}

inline std::vector<unsigned char> encode(const std::vector<double>& v, openrnn_data_type t) {
  std::vector<unsigned char> out(v.size() * dsize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    unsigned char* p = out.data() + i * dsize(t);
    switch (t) {
      case OPENRNN_DATA_DOUBLE: std::memcpy(p, &v[i], 8); break;
      case OPENRNN_DATA_FLOAT: { const float f = static_cast<float>(v[i]); std::memcpy(p, &f, 4); break; }
      case OPENRNN_DATA_HALF: { const __half h = __float2half_rn(static_cast<float>(v[i])); std::memcpy(p, &h, 2); break; }
      case OPENRNN_DATA_BFLOAT16: {
        const __nv_bfloat16 h = __float2bfloat16_rn(static_cast<float>(v[i]));
        std::memcpy(p, &h, 2);
        break;
      }
    }
  }
  return out;
}

inline std::vector<double> decode(const std::vector<unsigned char>& b, openrnn_data_type t) {
  std::vector<double> out(b.size() / dsize(t));
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char* p = b.data() + i * dsize(t);
    switch (t) {
      case OPENRNN_DATA_DOUBLE: std::memcpy(&out[i], p, 8); break;
      case OPENRNN_DATA_FLOAT: { float f; std::memcpy(&f, p, 4); out[i] = f; break; }
      case OPENRNN_DATA_HALF: { __half h; std::memcpy(&h, p, 2); out[i] = __half2float(h); break; }
      case OPENRNN_DATA_BFLOAT16: { __nv_bfloat16 h; std::memcpy(&h, p, 2); out[i] = __bfloat162float(h); break; }
    }
  }
  return out;
}

// A device allocation; null when bytes == 0.
struct DevBuf {
  void* p = nullptr;
  size_t bytes = 0;
  DevBuf() = default;
  explicit DevBuf(size_t n) : bytes(n) {
    if (n && cudaMalloc(&p, n) != cudaSuccess) {
      p = nullptr;
      ADD_FAILURE() << "cudaMalloc(" << n << ") failed";
    }
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : p(o.p), bytes(o.bytes) { o.p = nullptr; o.bytes = 0; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(p, o.p);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  // NaN in every storage type (all-ones bit pattern).
  void poison() { if (p) cudaMemset(p, 0xff, bytes); }
};

inline DevBuf upload(const std::vector<double>& v, openrnn_data_type t) {
  const auto b = encode(v, t);
  DevBuf d(b.size());
  if (d.p) cudaMemcpy(d.p, b.data(), b.size(), cudaMemcpyHostToDevice);
  return d;
}

inline std::vector<double> download(const DevBuf& d, openrnn_data_type t) {
  std::vector<unsigned char> b(d.bytes);
  if (d.p) cudaMemcpy(b.data(), d.p, d.bytes, cudaMemcpyDeviceToHost);
  return decode(b, t);
}

// ---- problems -----------------------------------------------------------------------------------------------------
struct Problem {
  openrnn_rnn_config cfg{};
  int T = 4, B = 3;
  openrnn_layout layout = OPENRNN_LAYOUT_SEQ_MAJOR;
  std::vector<int32_t> lengths;  // empty = all T
  double fill = -7.5;
  uint64_t dropout_offset = 0;
  bool use_hx = true, use_cx = true, want_hy = true, want_cy = true, use_dhy = true, use_dcy = true;
  // false: the float64 finite-difference test skips this case (a large case that exists for a float32 kernel path,
  // whose float64 gradients the smaller cases already cover; its finite differences take ~30 s on a CPU).
  bool finite_differences = true;

  int D() const { return cfg.bidirectional ? 2 : 1; }
  int Hout() const { return cfg.proj_size > 0 ? cfg.proj_size : cfg.hidden_size; }
  bool lstm() const { return cfg.cell == OPENRNN_CELL_LSTM; }
  int len(int b) const { return lengths.empty() ? T : lengths[static_cast<size_t>(b)]; }
  size_t nx() const { return static_cast<size_t>(T) * B * cfg.input_size; }
  size_t ny() const { return static_cast<size_t>(T) * B * D() * Hout(); }
  size_t nh() const { return static_cast<size_t>(cfg.num_layers) * D() * B * Hout(); }
  size_t nc() const { return static_cast<size_t>(cfg.num_layers) * D() * B * cfg.hidden_size; }
  size_t vec(int t, int b, int W) const {
    return (layout == OPENRNN_LAYOUT_SEQ_MAJOR ? static_cast<size_t>(t) * B + b : static_cast<size_t>(b) * T + t) * W;
  }
};

inline openrnn_rnn_config base_config(openrnn_cell cell, int I, int H, int L, bool bidir,
                                      openrnn_data_type dt = OPENRNN_DATA_DOUBLE) {
  openrnn_rnn_config c;
  openrnn_rnn_config_init(&c);
  c.cell = cell;
  c.input_size = I;
  c.hidden_size = H;
  c.num_layers = L;
  c.bidirectional = bidir ? 1 : 0;
  c.data_type = dt;
  c.algo = OPENRNN_ALGO_STANDARD;
  return c;
}

struct Inputs {
  std::vector<double> x, hx, cx, w, dy, dhy, dcy, dw0;  // dw0: initial dweights for ADD
};

struct Outputs {
  std::vector<double> y, hy, cy, dx, dhx, dcx, dw;
};

inline size_t weight_count(const Problem& pr) {
  openrnn_rnn_desc_t d = nullptr;
  if (openrnn_create_rnn_desc(&d, &pr.cfg) != OPENRNN_STATUS_SUCCESS) return 0;
  int n = 0;
  openrnn_get_weight_param_count(d, &n);
  size_t total = 0;
  for (int i = 0; i < n; ++i) {
    openrnn_weight_param p;
    openrnn_get_weight_param(d, i, &p);
    total = std::max(total, p.offset + static_cast<size_t>(p.rows) * p.cols);
  }
  openrnn_destroy_rnn_desc(d);
  return total;
}

// Random inputs in [-a, a]; padding steps of x and dy hold NaN (they must never be read).
inline Inputs random_inputs(const Problem& pr, uint32_t seed, double wscale = 0.5) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto fill = [&](size_t n, double a) {
    std::vector<double> v(n);
    for (auto& e : v) e = a * u(rng);
    return v;
  };
  Inputs in;
  in.x = fill(pr.nx(), 1.0);
  in.hx = fill(pr.nh(), 0.5);
  in.cx = fill(pr.nc(), 0.5);
  in.w = fill(weight_count(pr), wscale);
  in.dy = fill(pr.ny(), 1.0);
  in.dhy = fill(pr.nh(), 1.0);
  in.dcy = fill(pr.nc(), 1.0);
  in.dw0 = fill(in.w.size(), 1.0);
  const int W = pr.D() * pr.Hout();
  for (int b = 0; b < pr.B; ++b)
    for (int t = pr.len(b); t < pr.T; ++t) {
      for (int i = 0; i < pr.cfg.input_size; ++i) in.x[pr.vec(t, b, pr.cfg.input_size) + i] = NAN;
      for (int i = 0; i < W; ++i) in.dy[pr.vec(t, b, W) + i] = NAN;
    }
  return in;
}

// Runs forward (and, when `backward`, backward_data + backward_weights) on `handle` (any device) on the handle's
// stream, then synchronises. Outputs are poisoned with NaN first. wgrad: SET, or ADD onto in.dw0.
inline Outputs run_api(openrnn_handle_t handle, const Problem& pr, const Inputs& in, openrnn_fwd_mode mode,
                       bool backward, openrnn_wgrad_mode wgrad = OPENRNN_WGRAD_SET) {
  Outputs o;
  const openrnn_data_type dt = pr.cfg.data_type;
  openrnn_device dev;
  int ord;
  openrnn_get_handle_device(handle, &dev, &ord);
  const bool gpu = dev == OPENRNN_DEVICE_CUDA;
  openrnn_rnn_desc_t rnn = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  EXPECT_EQ(openrnn_create_rnn_desc(&rnn, &pr.cfg), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  EXPECT_EQ(openrnn_create_seq_desc(&xd, dt, pr.layout, pr.T, pr.B, pr.cfg.input_size,
                                    pr.lengths.empty() ? nullptr : pr.lengths.data(), pr.fill),
            OPENRNN_STATUS_SUCCESS)
      << openrnn_last_error();
  if (!rnn || !xd) return o;
  openrnn_set_dropout_offset(rnn, pr.dropout_offset);
  size_t ws_bytes = 0, rs_bytes = 0;
  EXPECT_EQ(openrnn_get_temp_space_sizes(handle, rnn, mode, xd, &ws_bytes, &rs_bytes), OPENRNN_STATUS_SUCCESS)
      << openrnn_last_error();
  const bool lstm = pr.lstm();
  // Buffers live on the device for a CUDA handle and on the host for a CPU handle.
  struct Buf {
    DevBuf dev;
    std::vector<unsigned char> host;
    void* ptr() { return dev.p ? dev.p : (host.empty() ? nullptr : host.data()); }
  };
  auto make_in = [&](const std::vector<double>& v, bool use) {
    Buf b;
    if (!use || v.empty()) return b;
    if (gpu) b.dev = upload(v, dt);
    else b.host = encode(v, dt);
    return b;
  };
  auto make_out = [&](size_t n, bool want) {
    Buf b;
    if (!want || n == 0) return b;
    if (gpu) {
      b.dev = DevBuf(n * dsize(dt));
      b.dev.poison();
    } else {
      b.host.assign(n * dsize(dt), 0xff);
    }
    return b;
  };
  auto make_raw = [&](size_t bytes) {
    Buf b;
    if (!bytes) return b;
    if (gpu) {
      b.dev = DevBuf(bytes);
      b.dev.poison();
    } else {
      b.host.assign(bytes, 0xff);
    }
    return b;
  };
  auto get = [&](Buf& b) {
    if (gpu) return download(b.dev, dt);
    return decode(b.host, dt);
  };
  Buf x = make_in(in.x, true), hx = make_in(in.hx, pr.use_hx), cx = make_in(in.cx, lstm && pr.use_cx),
      w = make_in(in.w, true);
  Buf y = make_out(pr.ny(), true), hy = make_out(pr.nh(), pr.want_hy), cy = make_out(pr.nc(), lstm && pr.want_cy);
  Buf ws = make_raw(ws_bytes), rs = make_raw(mode == OPENRNN_FWD_TRAINING ? rs_bytes : 0);
  const size_t wb = in.w.size() * dsize(dt);
  EXPECT_EQ(openrnn_forward(handle, rnn, mode, xd, x.ptr(), y.ptr(), hx.ptr(), hy.ptr(), cx.ptr(), cy.ptr(), w.ptr(),
                            wb, ws.ptr(), ws_bytes, rs.ptr(), rs_bytes),
            OPENRNN_STATUS_SUCCESS)
      << openrnn_last_error();
  if (backward) {
    Buf dy = make_in(in.dy, true), dhy = make_in(in.dhy, pr.use_dhy), dcy = make_in(in.dcy, lstm && pr.use_dcy);
    Buf dx = make_out(pr.nx(), true), dhx = make_out(pr.nh(), true), dcx = make_out(pr.nc(), lstm);
    Buf dw = wgrad == OPENRNN_WGRAD_ADD ? make_in(in.dw0, true) : make_out(in.w.size(), true);
    EXPECT_EQ(openrnn_backward_data(handle, rnn, xd, dy.ptr(), dx.ptr(), dhy.ptr(), dhx.ptr(), dcy.ptr(), dcx.ptr(),
                                    w.ptr(), wb, ws.ptr(), ws_bytes, rs.ptr(), rs_bytes),
              OPENRNN_STATUS_SUCCESS)
        << openrnn_last_error();
    EXPECT_EQ(openrnn_backward_weights(handle, rnn, wgrad, xd, x.ptr(), dw.ptr(), wb, ws.ptr(), ws_bytes, rs.ptr(),
                                       rs_bytes),
              OPENRNN_STATUS_SUCCESS)
        << openrnn_last_error();
    if (gpu) {
      void* s = nullptr;
      openrnn_get_stream(handle, &s);
      EXPECT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), cudaSuccess);
    }
    o.dx = get(dx);
    o.dhx = get(dhx);
    if (lstm) o.dcx = get(dcx);
    o.dw = get(dw);
  }
  if (gpu) {
    void* s = nullptr;
    openrnn_get_stream(handle, &s);
    EXPECT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), cudaSuccess);
  }
  o.y = get(y);
  if (pr.want_hy) o.hy = get(hy);
  if (lstm && pr.want_cy) o.cy = get(cy);
  openrnn_destroy_seq_desc(xd);
  openrnn_destroy_rnn_desc(rnn);
  return o;
}

// ‖a − b‖ / ‖b‖; any NaN or Inf in a (an unwritten, poisoned element) or a size mismatch returns inf.
inline double rel_err(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isinf(a[i])) return INFINITY;
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// rel_err over the steps of a [T, B, W] sequence tensor (y, dx) within each sequence's length; a step past it must
// hold the same value in both (the fill value, dx's zeros), else inf, as for an unwritten (NaN) element. Over the
// whole tensor the fill (-7.5) at padded steps dominates ‖b‖ and hides the valid steps' error: in session 72's ragged
// two-layer LSTM case by 133x in y (TF32: 1.3e-6 whole, 1.75e-4 on the valid steps) and 44x in dx.
inline double seq_err(const Problem& pr, const std::vector<double>& got, const std::vector<double>& want) {
  const size_t TB = static_cast<size_t>(pr.T) * pr.B;
  if (got.size() != want.size() || pr.lengths.empty() || TB == 0 || got.size() % TB != 0) return rel_err(got, want);
  const int W = static_cast<int>(got.size() / TB);
  std::vector<double> g, w;
  g.reserve(got.size());
  w.reserve(got.size());
  for (int t = 0; t < pr.T; ++t)
    for (int b = 0; b < pr.B; ++b) {
      const size_t o = pr.vec(t, b, W);
      for (int i = 0; i < W; ++i) {
        if (t < pr.len(b)) {
          g.push_back(got[o + i]);
          w.push_back(want[o + i]);
        } else if (!(got[o + i] == want[o + i])) {
          return INFINITY;
        }
      }
    }
  return rel_err(g, w);
}

inline bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

}  // namespace cudatest

#endif  // OPENRNN_TEST_CUDA
