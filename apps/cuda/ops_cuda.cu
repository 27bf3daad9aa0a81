// CUDA implementation of Ops: cuBLAS for the products, one small kernel per remaining op. Everything is ordered on
// one stream (the openrnn handle's); reductions are two-pass with a fixed block layout and no atomics, so results are
// bitwise repeatable run to run. Kept simple on purpose: these ops are a small share of a step next to the RNN.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "../ops.h"
#include "philox.h"

namespace openrnn::app {
namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}
void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error in ") + what + ": status " + std::to_string(int(s)));
}
#define LAUNCH_CHECK(what) check_cuda(cudaGetLastError(), what)

constexpr int kThreads = 256;
inline unsigned blocks_for(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 16 ? (b ? b : 1) : 65535 * 16);
}

__global__ void add_row_vector_k(float* Y, const float* b, int N, int M) {
  const size_t total = static_cast<size_t>(N) * M;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x)
    Y[i] += b[i % M];
}
// One thread per column; rows summed in order.
__global__ void col_sums_add_k(const float* dY, int N, int M, float* db) {
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= M) return;
  float s = 0.f;
  for (int n = 0; n < N; ++n) s += dY[static_cast<size_t>(n) * M + m];
  db[m] += s;
}
__global__ void embedding_forward_k(const int32_t* ids, int N, const float* E, int C, float* out) {
  const size_t total = static_cast<size_t>(N) * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x)
    out[i] = E[static_cast<size_t>(ids[i / C]) * C + i % C];
}
// Block v owns row v of dE and scans every id in order: deterministic without atomics. V and N are small
// (vocabulary of a text, T*B tokens), so the O(V*N) scan is cheap.
__global__ void embedding_backward_k(const int32_t* ids, int N, const float* dout, int C, float* dE) {
  const int v = blockIdx.x;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float s = 0.f;
    for (int n = 0; n < N; ++n)
      if (ids[n] == v) s += dout[static_cast<size_t>(n) * C + c];
    dE[static_cast<size_t>(v) * C + c] += s;
  }
}
// One block per row: max, log-sum-exp, loss, gradient.
__global__ void softmax_xent_k(const float* logits, const int32_t* targets, int V, float scale, float* dlogits,
                               float* row_loss, int32_t* argmax) {
  __shared__ float smax[kThreads];
  __shared__ int sarg[kThreads];
  __shared__ double ssum[kThreads];
  const int n = blockIdx.x;
  const float* z = logits + static_cast<size_t>(n) * V;
  float mx = -INFINITY;
  int am = 0;
  for (int v = threadIdx.x; v < V; v += blockDim.x)
    if (z[v] > mx) { mx = z[v]; am = v; }
  smax[threadIdx.x] = mx;
  sarg[threadIdx.x] = am;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float o = smax[threadIdx.x + s];
      const int oa = sarg[threadIdx.x + s];
      if (o > smax[threadIdx.x] || (o == smax[threadIdx.x] && oa < sarg[threadIdx.x])) {
        smax[threadIdx.x] = o;
        sarg[threadIdx.x] = oa;
      }
    }
    __syncthreads();
  }
  mx = smax[0];
  double sum = 0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) sum += exp(double(z[v]) - mx);
  ssum[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) ssum[threadIdx.x] += ssum[threadIdx.x + s];
    __syncthreads();
  }
  const double lse = mx + log(ssum[0]);
  const int t = targets[n];
  if (threadIdx.x == 0) {
    row_loss[n] = static_cast<float>(lse - z[t]);
    argmax[n] = sarg[0];
  }
  if (dlogits) {
    __syncthreads();  // dlogits may alias logits: every read of z above is done
    float* d = dlogits + static_cast<size_t>(n) * V;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
      const double p = exp(double(z[v]) - lse);
      d[v] = static_cast<float>((p - (v == t ? 1.0 : 0.0)) * scale);
    }
  }
}
__global__ void dropout_k(float* x, size_t n, uint64_t seed, uint64_t offset, int stream_id, uint32_t thr, float ks) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = openrnn::dropout_keep(seed, offset, stream_id, i, thr) ? x[i] * ks : 0.0f;
}
// Pass 1 of sum of squares: fixed grid, each block writes one partial (tree-reduced in shared memory).
constexpr int kSumBlocks = 256;
__global__ void sum_squares_k(const float* x, size_t n, double* partial) {
  __shared__ double s[kThreads];
  double acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    acc += double(x[i]) * x[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
__global__ void scale_k(float* x, size_t n, float a) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) x[i] *= a;
}
__global__ void sgd_k(float* p, const float* g, float* buf, size_t n, float lr, float mom, bool first) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float b = g[i];
    if (mom != 0.0f) {
      b = first ? g[i] : mom * buf[i] + g[i];
      buf[i] = b;
    }
    p[i] -= lr * b;
  }
}
__global__ void rmsprop_k(float* p, const float* g, float* sq, size_t n, float lr, float alpha, float one_minus,
                          float eps) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    sq[i] = alpha * sq[i] + one_minus * g[i] * g[i];
    p[i] -= lr * g[i] / (sqrtf(sq[i]) + eps);
  }
}
__global__ void adam_k(float* p, const float* g, float* m, float* v, size_t n, float step, float b1, float c1,
                       float b2, float c2, float eps, float sqrt_bc2) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    m[i] = b1 * m[i] + c1 * g[i];
    v[i] = b2 * v[i] + c2 * g[i] * g[i];
    p[i] -= step * m[i] / (sqrtf(v[i]) / sqrt_bc2 + eps);
  }
}

class CudaOps final : public Ops {
 public:
  explicit CudaOps(int ordinal) {
    int count = 0;
    check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (ordinal < 0 || ordinal >= count)
      throw std::runtime_error("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                               std::to_string(count) + " found)");
    check_cuda(cudaSetDevice(ordinal), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cublas(cublasCreate(&blas_), "cublasCreate");
    check_cublas(cublasSetStream(blas_, stream_), "cublasSetStream");
    // Strict float32 products (no TF32), matching the CPU within float32 rounding.
    check_cublas(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check_cuda(cudaMalloc(&partial_, kSumBlocks * sizeof(double)), "cudaMalloc");
  }
  ~CudaOps() override {
    cudaFree(partial_);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }
  bool is_cuda() const override { return true; }
  std::string name() const override { return "cuda"; }
  void* stream() const override { return stream_; }

  void* alloc(size_t bytes) override {
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
    check_cuda(cudaMemsetAsync(p, 0, bytes ? bytes : 1, stream_), "cudaMemsetAsync");
    return p;
  }
  void release(void* p) noexcept override { cudaFree(p); }
  void to_device(void* dst, const void* src, size_t n) override {
    // The host buffer may be reused as soon as we return, so this copy is synchronous with the stream.
    check_cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync H2D");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void to_host(void* dst, const void* src, size_t n) override {
    check_cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync D2H");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void zero(void* p, size_t n) override { check_cuda(cudaMemsetAsync(p, 0, n, stream_), "cudaMemsetAsync"); }
  void copy(void* dst, const void* src, size_t n) override {
    check_cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync D2D");
  }
  void sync() override { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands and M/N.
  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
            float beta, float* C, int ldc) override {
    check_cublas(cublasSgemm(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                             B, ldb, A, lda, &beta, C, ldc),
                 "cublasSgemm");
  }
  void add_row_vector(float* Y, const float* b, int N, int M) override {
    add_row_vector_k<<<blocks_for(size_t(N) * M), kThreads, 0, stream_>>>(Y, b, N, M);
    LAUNCH_CHECK("add_row_vector");
  }
  void col_sums_add(const float* dY, int N, int M, float* db) override {
    col_sums_add_k<<<(M + 127) / 128, 128, 0, stream_>>>(dY, N, M, db);
    LAUNCH_CHECK("col_sums_add");
  }
  void embedding_forward(const int32_t* ids, int N, const float* E, int C, float* out) override {
    embedding_forward_k<<<blocks_for(size_t(N) * C), kThreads, 0, stream_>>>(ids, N, E, C, out);
    LAUNCH_CHECK("embedding_forward");
  }
  void embedding_backward(const int32_t* ids, int N, const float* dout, int V, int C, float* dE) override {
    embedding_backward_k<<<V, 128, 0, stream_>>>(ids, N, dout, C, dE);
    LAUNCH_CHECK("embedding_backward");
  }
  void softmax_xent(const float* logits, const int32_t* targets, int N, int V, float scale, float* dlogits,
                    float* row_loss_host, int32_t* argmax_host) override {
    ensure_rows(N);
    softmax_xent_k<<<N, kThreads, 0, stream_>>>(logits, targets, V, scale, dlogits, rows_loss_, rows_arg_);
    LAUNCH_CHECK("softmax_xent");
    to_host(row_loss_host, rows_loss_, sizeof(float) * N);
    if (argmax_host) to_host(argmax_host, rows_arg_, sizeof(int32_t) * N);
  }
  void dropout(float* x, size_t rows, int width, uint64_t seed, uint64_t offset, int stream_id, double p) override {
    const size_t n = rows * width;
    dropout_k<<<blocks_for(n), kThreads, 0, stream_>>>(x, n, seed, offset, stream_id, openrnn::dropout_threshold(p),
                                                       static_cast<float>(1.0 / (1.0 - p)));
    LAUNCH_CHECK("dropout");
  }
  double sum_squares(const float* x, size_t n) override {
    sum_squares_k<<<kSumBlocks, kThreads, 0, stream_>>>(x, n, partial_);
    LAUNCH_CHECK("sum_squares");
    double h[kSumBlocks];
    to_host(h, partial_, sizeof h);
    double s = 0;
    for (double v : h) s += v;
    return s;
  }
  void scale(float* x, size_t n, float a) override {
    scale_k<<<blocks_for(n), kThreads, 0, stream_>>>(x, n, a);
    LAUNCH_CHECK("scale");
  }
  void sgd_step(float* p, const float* g, float* buf, size_t n, float lr, float mom, bool first) override {
    sgd_k<<<blocks_for(n), kThreads, 0, stream_>>>(p, g, buf, n, lr, mom, first);
    LAUNCH_CHECK("sgd_step");
  }
  void rmsprop_step(float* p, const float* g, float* sq, size_t n, float lr, double alpha, float eps) override {
    rmsprop_k<<<blocks_for(n), kThreads, 0, stream_>>>(p, g, sq, n, lr, static_cast<float>(alpha),
                                                       static_cast<float>(1.0 - alpha), eps);
    LAUNCH_CHECK("rmsprop_step");
  }
  void adam_step(float* p, const float* g, float* m, float* v, size_t n, float lr, double b1, double b2, float eps,
                 double bc1, double bc2) override {
    adam_k<<<blocks_for(n), kThreads, 0, stream_>>>(p, g, m, v, n, static_cast<float>(lr / bc1),
                                                    static_cast<float>(b1), static_cast<float>(1.0 - b1),
                                                    static_cast<float>(b2), static_cast<float>(1.0 - b2), eps,
                                                    static_cast<float>(std::sqrt(bc2)));
    LAUNCH_CHECK("adam_step");
  }

 private:
  void ensure_rows(int N) {
    if (N <= rows_cap_) return;
    cudaFree(rows_loss_);
    cudaFree(rows_arg_);
    rows_loss_ = nullptr;
    rows_arg_ = nullptr;
    check_cuda(cudaMalloc(&rows_loss_, sizeof(float) * N), "cudaMalloc");
    check_cuda(cudaMalloc(&rows_arg_, sizeof(int32_t) * N), "cudaMalloc");
    rows_cap_ = N;
  }
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  double* partial_ = nullptr;
  float* rows_loss_ = nullptr;
  int32_t* rows_arg_ = nullptr;
  int rows_cap_ = 0;
};

}  // namespace

std::unique_ptr<Ops> make_cuda_ops(int ordinal) { return std::make_unique<CudaOps>(ordinal); }

}  // namespace openrnn::app
