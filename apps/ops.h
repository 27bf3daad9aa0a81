// The training stack's device layer: buffers and the handful of kernels a small trainer needs, with one CPU
// implementation (ops_cpu.cpp: OpenBLAS + loops) and one CUDA implementation (cuda/ops_cuda.cu: cuBLAS + small
// kernels). Every op is deterministic: the same inputs give the same bits run to run on one device (reductions go in
// a fixed order; no atomics), which is what makes a resumed run repeat the uninterrupted one exactly.
//
// Pointers passed to an Ops are of its device (host for CPU, device memory for CUDA) unless the name says _host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace openrnn::app {

class Ops {
 public:
  virtual ~Ops() = default;
  virtual bool is_cuda() const = 0;
  virtual std::string name() const = 0;
  virtual void* stream() const { return nullptr; }  // cudaStream_t for CUDA

  virtual void* alloc(size_t bytes) = 0;  // zero-filled
  virtual void release(void* p) noexcept = 0;
  virtual void to_device(void* dst, const void* src_host, size_t bytes) = 0;
  virtual void to_host(void* dst_host, const void* src, size_t bytes) = 0;  // waits for the data
  virtual void zero(void* p, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void sync() = 0;

  // Row-major C[M, N] = alpha * op(A) * op(B) + beta * C, op(A) [M, K], op(B) [K, N]; lda/ldb/ldc are row strides
  // of A, B, C as stored.
  virtual void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                    const float* B, int ldb, float beta, float* C, int ldc) = 0;
  // Y[N, M] += b[M] broadcast over rows.
  virtual void add_row_vector(float* Y, const float* b, int N, int M) = 0;
  // db[M] += column sums of dY[N, M] (rows summed in order 0..N-1).
  virtual void col_sums_add(const float* dY, int N, int M, float* db) = 0;
  // out[n, :] = E[ids[n], :], E [V, C], out [N, C]; ids are device int32 in 0..V-1.
  virtual void embedding_forward(const int32_t* ids, int N, const float* E, int C, float* out) = 0;
  // dE[v, :] += sum over n with ids[n] == v of dout[n, :] (n ascending).
  virtual void embedding_backward(const int32_t* ids, int N, const float* dout, int V, int C, float* dE) = 0;
  // Softmax cross-entropy over logits [N, V] with targets [N] (device int32). row_loss_host[N] receives
  // -log softmax(logits)[target]; argmax_host[N] (may be null) the arg max. When dlogits is not null it receives
  // (softmax - onehot(target)) * grad_scale ([N, V]; may alias logits).
  virtual void softmax_xent(const float* logits, const int32_t* targets, int N, int V, float grad_scale,
                            float* dlogits, float* row_loss_host, int32_t* argmax_host) = 0;
  // Inverted dropout in place on x [rows, width]: element (r, u) is kept iff
  // openrnn::dropout_keep(seed, offset, stream_id, r * width + u, threshold(p)), kept ones scaled by 1/(1-p).
  // Forward and backward use the same call (the mask is recomputed).
  virtual void dropout(float* x, size_t rows, int width, uint64_t seed, uint64_t offset, int stream_id,
                       double p) = 0;
  // sum x[i]^2 in double, fixed order.
  virtual double sum_squares(const float* x, size_t n) = 0;
  virtual void scale(float* x, size_t n, float s) = 0;

  // Optimiser updates (PyTorch's formulas; see optim.h).
  virtual void sgd_step(float* p, const float* g, float* buf, size_t n, float lr, float momentum, bool first) = 0;
  // Decay rates come in double so that 1 - beta is formed before rounding to float (as torch.optim does).
  virtual void rmsprop_step(float* p, const float* g, float* sq, size_t n, float lr, double alpha, float eps) = 0;
  virtual void adam_step(float* p, const float* g, float* m, float* v, size_t n, float lr, double beta1, double beta2,
                         float eps, double bias_corr1, double bias_corr2) = 0;
};

std::unique_ptr<Ops> make_cpu_ops();
// Throws std::runtime_error when the CLI was built without CUDA or the device is absent.
std::unique_ptr<Ops> make_cuda_ops(int ordinal);

// An owned array of T on an Ops' device.
template <typename T>
class DevArray {
 public:
  DevArray() = default;
  DevArray(Ops& ops, size_t n) : ops_(&ops), n_(n) { p_ = static_cast<T*>(ops.alloc(n * sizeof(T) + (n == 0))); }
  DevArray(const DevArray&) = delete;
  DevArray& operator=(const DevArray&) = delete;
  DevArray(DevArray&& o) noexcept { *this = std::move(o); }
  DevArray& operator=(DevArray&& o) noexcept {
    if (this != &o) {
      reset();
      ops_ = o.ops_;
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  ~DevArray() { reset(); }
  void reset() noexcept {
    if (p_) ops_->release(p_);
    p_ = nullptr;
    n_ = 0;
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  void upload(const T* host) { ops_->to_device(p_, host, bytes()); }
  void download(T* host) const { ops_->to_host(host, p_, bytes()); }
  void zero() { ops_->zero(p_, bytes()); }

 private:
  Ops* ops_ = nullptr;
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace openrnn::app
