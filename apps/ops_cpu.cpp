// CPU implementation of Ops: OpenBLAS sgemm for the products, plain loops for the rest. Loops that reduce run in
// index order so results do not depend on the thread count.
#include <cblas.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "ops.h"
#include "philox.h"

namespace openrnn::app {
namespace {

class CpuOps final : public Ops {
 public:
  bool is_cuda() const override { return false; }
  std::string name() const override { return "cpu"; }

  void* alloc(size_t bytes) override {
    void* p = std::calloc(1, bytes ? bytes : 1);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }
  void to_device(void* dst, const void* src, size_t n) override { if (n) std::memcpy(dst, src, n); }
  void to_host(void* dst, const void* src, size_t n) override { if (n) std::memcpy(dst, src, n); }
  void zero(void* p, size_t n) override { if (n) std::memset(p, 0, n); }
  void copy(void* dst, const void* src, size_t n) override { if (n) std::memmove(dst, src, n); }
  void sync() override {}

  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
            float beta, float* C, int ldc) override {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
                B, ldb, beta, C, ldc);
  }
  void add_row_vector(float* Y, const float* b, int N, int M) override {
    for (int n = 0; n < N; ++n)
      for (int m = 0; m < M; ++m) Y[static_cast<size_t>(n) * M + m] += b[m];
  }
  void col_sums_add(const float* dY, int N, int M, float* db) override {
    for (int n = 0; n < N; ++n)
      for (int m = 0; m < M; ++m) db[m] += dY[static_cast<size_t>(n) * M + m];
  }
  void embedding_forward(const int32_t* ids, int N, const float* E, int C, float* out) override {
    for (int n = 0; n < N; ++n)
      std::memcpy(out + static_cast<size_t>(n) * C, E + static_cast<size_t>(ids[n]) * C, sizeof(float) * C);
  }
  void embedding_backward(const int32_t* ids, int N, const float* dout, int, int C, float* dE) override {
    for (int n = 0; n < N; ++n) {
      float* row = dE + static_cast<size_t>(ids[n]) * C;
      const float* d = dout + static_cast<size_t>(n) * C;
      for (int c = 0; c < C; ++c) row[c] += d[c];
    }
  }
  void softmax_xent(const float* logits, const int32_t* targets, int N, int V, float grad_scale, float* dlogits,
                    float* row_loss, int32_t* argmax) override {
    for (int n = 0; n < N; ++n) {
      const float* z = logits + static_cast<size_t>(n) * V;
      float mx = z[0];
      int am = 0;
      for (int v = 1; v < V; ++v)
        if (z[v] > mx) { mx = z[v]; am = v; }
      double sum = 0;
      for (int v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v]) - mx);
      const double lse = mx + std::log(sum);
      const int t = targets[n];
      row_loss[n] = static_cast<float>(lse - z[t]);
      if (argmax) argmax[n] = am;
      if (dlogits) {
        float* d = dlogits + static_cast<size_t>(n) * V;
        for (int v = 0; v < V; ++v) {
          const double p = std::exp(static_cast<double>(z[v]) - lse);
          d[v] = static_cast<float>((p - (v == t ? 1.0 : 0.0)) * grad_scale);
        }
      }
    }
  }
  void dropout(float* x, size_t rows, int width, uint64_t seed, uint64_t offset, int stream_id, double p) override {
    const uint32_t thr = openrnn::dropout_threshold(p);
    const float keep_scale = static_cast<float>(1.0 / (1.0 - p));
    const size_t n = rows * static_cast<size_t>(width);
    for (size_t i = 0; i < n; ++i)
      x[i] = openrnn::dropout_keep(seed, offset, stream_id, i, thr) ? x[i] * keep_scale : 0.0f;
  }
  double sum_squares(const float* x, size_t n) override {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
    return s;
  }
  void scale(float* x, size_t n, float s) override {
    for (size_t i = 0; i < n; ++i) x[i] *= s;
  }
  void sgd_step(float* p, const float* g, float* buf, size_t n, float lr, float mom, bool first) override {
    for (size_t i = 0; i < n; ++i) {
      float b = g[i];
      if (mom != 0.0f) {
        b = first ? g[i] : mom * buf[i] + g[i];
        buf[i] = b;
      }
      p[i] -= lr * b;
    }
  }
  void rmsprop_step(float* p, const float* g, float* sq, size_t n, float lr, double alpha_d, float eps) override {
    const float alpha = static_cast<float>(alpha_d), one_minus = static_cast<float>(1.0 - alpha_d);
    for (size_t i = 0; i < n; ++i) {
      sq[i] = alpha * sq[i] + one_minus * g[i] * g[i];
      p[i] -= lr * g[i] / (std::sqrt(sq[i]) + eps);
    }
  }
  void adam_step(float* p, const float* g, float* m, float* v, size_t n, float lr, double b1d, double b2d, float eps,
                 double bc1, double bc2) override {
    const float step = static_cast<float>(lr / bc1);
    const float sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
    const float b1 = static_cast<float>(b1d), c1 = static_cast<float>(1.0 - b1d);
    const float b2 = static_cast<float>(b2d), c2 = static_cast<float>(1.0 - b2d);
    for (size_t i = 0; i < n; ++i) {
      m[i] = b1 * m[i] + c1 * g[i];
      v[i] = b2 * v[i] + c2 * g[i] * g[i];
      p[i] -= step * m[i] / (std::sqrt(v[i]) / sqrt_bc2 + eps);
    }
  }
};

}  // namespace

std::unique_ptr<Ops> make_cpu_ops() { return std::make_unique<CpuOps>(); }

}  // namespace openrnn::app
