// Small elementwise kernels shared by the CUDA algorithms (cuda_ops.h, cuda_backend.h).
#include "cuda_backend.h"
#include "cuda_ops.h"
#include "philox.h"

namespace openrnn {
namespace cuda {

namespace {

constexpr int kBlock = 256;

// Kernel parameters carry up to kLenChunk lengths by value (4008 bytes: under the classic 4 KB parameter limit).
constexpr int kLenChunk = 1000;
struct LenChunk {
  int first;
  int count;
  int32_t v[kLenChunk];
};

__global__ void lengths_kernel(const LenChunk c, int32_t* dst) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < c.count) dst[c.first + i] = c.v[i];
}

template <typename Src, typename Dst>
__global__ void convert_kernel(const Src* src, Dst* dst, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    st(dst + i, src ? to_f(src[i]) : decltype(to_f(Src()))(0));
}

template <typename Src, typename Dst>
__global__ void copy_rows_kernel(const Src* src, RowMap sr, Dst* dst, RowMap dr, int T, int B, int W,
                                 const int32_t* lens, double fill) {
  using A = decltype(to_f(Src()));
  const long long n = (long long)T * B * W;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const int u = static_cast<int>(i % W);
    const long long tb = i / W;
    const int b = static_cast<int>(tb % B), t = static_cast<int>(tb / B);
    const bool active = !lens || t < lens[b];
    st(dst + dr.row(t, b) * W + u, active ? to_f(src[sr.row(t, b) * W + u]) : static_cast<A>(fill));
  }
}

template <typename T>
__global__ void dropout_kernel(const T* src, T* dst, long long n, long long first, uint64_t seed, uint64_t offset,
                               int layer, uint32_t threshold, double scale) {
  using A = decltype(to_f(T()));
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const bool keep = dropout_keep(seed, offset, layer, static_cast<uint64_t>(first + i), threshold);
    st(dst + i, keep ? to_f(src[i]) * static_cast<A>(scale) : static_cast<A>(0));
  }
}

template <typename T>
__global__ void fill_kernel(T* dst, long long n, double v) {
  using A = decltype(to_f(T()));
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    st(dst + i, static_cast<A>(v));
}

template <typename T>
__global__ void state_in_kernel(const T* src, T* dst, int B, int W, int ld) {
  const long long n = (long long)B * ld;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const int b = static_cast<int>(i / ld), u = static_cast<int>(i % ld);
    dst[i] = (src && u < W) ? src[(long long)b * W + u] : T(0.0f);
  }
}

template <typename T>
__global__ void state_out_kernel(const T* src, T* dst, int B, int W, int ld) {
  const long long n = (long long)B * W;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[(i / W) * ld + i % W];
}

template <typename T>
__global__ void dup_cols_kernel(const T* src, T* dst, int rows, int cols) {
  const long long n = (long long)rows * cols * 2;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / (2 * cols);
    const int j = static_cast<int>(i % (2 * cols));
    dst[i] = src[r * cols + (j < cols ? j : j - cols)];
  }
}

// 32 x 32 tiles through shared memory: coalesced reads and writes.
template <typename T>
__global__ void transpose_kernel(const T* src, T* dst, int rows, int cols) {
  __shared__ T tile[32][33];
  const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = src[(long long)r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) dst[(long long)c * rows + r] = tile[threadIdx.x][i];
  }
}

unsigned grid_capped(long long n) {
  const unsigned g = grid_for(n, kBlock);
  return g > 65535u * 8u ? 65535u * 8u : g;
}

}  // namespace

void upload_lengths(const openrnn_seq_desc& seq, int32_t* dst, cudaStream_t s) {
  LenChunk c;
  for (int first = 0; first < seq.B; first += kLenChunk) {
    c.first = first;
    c.count = seq.B - first < kLenChunk ? seq.B - first : kLenChunk;
    for (int i = 0; i < c.count; ++i) c.v[i] = seq.lengths[static_cast<size_t>(first + i)];
    lengths_kernel<<<grid_for(c.count, kBlock), kBlock, 0, s>>>(c, dst);
    OPENRNN_LAUNCH_CHECK("lengths_kernel");
  }
}

template <typename Src, typename Dst>
void convert_or_zero(const Src* src, Dst* dst, long long n, cudaStream_t s) {
  if (n <= 0) return;
  convert_kernel<<<grid_capped(n), kBlock, 0, s>>>(src, dst, n);
  OPENRNN_LAUNCH_CHECK("convert_kernel");
}

template <typename Src, typename Dst>
void copy_rows(const Src* src, RowMap sr, Dst* dst, RowMap dr, int T, int B, int W, const int32_t* lens, double fill,
               cudaStream_t s) {
  const long long n = (long long)T * B * W;
  if (n <= 0) return;
  copy_rows_kernel<<<grid_capped(n), kBlock, 0, s>>>(src, sr, dst, dr, T, B, W, lens, fill);
  OPENRNN_LAUNCH_CHECK("copy_rows_kernel");
}

template <typename T>
void dropout_apply(const T* src, T* dst, long long n, uint64_t seed, uint64_t offset, int layer, uint32_t threshold,
                   double scale, cudaStream_t s, long long first) {
  if (n <= 0) return;
  dropout_kernel<<<grid_capped(n), kBlock, 0, s>>>(src, dst, n, first, seed, offset, layer, threshold, scale);
  OPENRNN_LAUNCH_CHECK("dropout_kernel");
}

template <typename T>
void fill_value(T* dst, long long n, double v, cudaStream_t s) {
  if (n <= 0) return;
  fill_kernel<<<grid_capped(n), kBlock, 0, s>>>(dst, n, v);
  OPENRNN_LAUNCH_CHECK("fill_kernel");
}

template <typename T>
void state_in(const T* src, T* dst, int B, int W, int ld, cudaStream_t s) {
  const long long n = (long long)B * ld;
  if (n <= 0) return;
  state_in_kernel<<<grid_capped(n), kBlock, 0, s>>>(src, dst, B, W, ld);
  OPENRNN_LAUNCH_CHECK("state_in_kernel");
}

template <typename T>
void state_out(const T* src, T* dst, int B, int W, int ld, cudaStream_t s) {
  const long long n = (long long)B * W;
  if (n <= 0) return;
  state_out_kernel<<<grid_capped(n), kBlock, 0, s>>>(src, dst, B, W, ld);
  OPENRNN_LAUNCH_CHECK("state_out_kernel");
}

template <typename T>
void transpose(const T* src, T* dst, int rows, int cols, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 grid((cols + 31) / 32, (rows + 31) / 32), block(32, 8);
  transpose_kernel<<<grid, block, 0, s>>>(src, dst, rows, cols);
  OPENRNN_LAUNCH_CHECK("transpose_kernel");
}

template <typename T>
void dup_cols(const T* src, T* dst, int rows, int cols, cudaStream_t s) {
  const long long n = (long long)rows * cols * 2;
  if (n <= 0) return;
  dup_cols_kernel<<<grid_capped(n), kBlock, 0, s>>>(src, dst, rows, cols);
  OPENRNN_LAUNCH_CHECK("dup_cols_kernel");
}

#define OPENRNN_INST_T(T)                                                                                       \
  template void dropout_apply<T>(const T*, T*, long long, uint64_t, uint64_t, int, uint32_t, double,           \
                                 cudaStream_t, long long);                                                      \
  template void fill_value<T>(T*, long long, double, cudaStream_t);                                            \
  template void state_in<T>(const T*, T*, int, int, int, cudaStream_t);                                         \
  template void state_out<T>(const T*, T*, int, int, int, cudaStream_t);                                        \
  template void dup_cols<T>(const T*, T*, int, int, cudaStream_t);                                              \
  template void transpose<T>(const T*, T*, int, int, cudaStream_t);                                             \
  template void convert_or_zero<T, T>(const T*, T*, long long, cudaStream_t);                                  \
  template void copy_rows<T, T>(const T*, RowMap, T*, RowMap, int, int, int, const int32_t*, double, cudaStream_t);
OPENRNN_INST_T(float)
OPENRNN_INST_T(double)
OPENRNN_INST_T(__half)
OPENRNN_INST_T(__nv_bfloat16)
#undef OPENRNN_INST_T

#define OPENRNN_INST_TS(T, S)                                                   \
  template void convert_or_zero<T, S>(const T*, S*, long long, cudaStream_t); \
  template void convert_or_zero<S, T>(const S*, T*, long long, cudaStream_t);
OPENRNN_INST_TS(__half, float)
OPENRNN_INST_TS(__nv_bfloat16, float)
#undef OPENRNN_INST_TS

}  // namespace cuda
}  // namespace openrnn
