// cuDNN comparator for the lab: cudnnRNNForward (inference) on the same shape, every algorithm cuDNN accepts.
// Packed sequence-major data, equal lengths, I = H, double bias; float32 strict (CUDNN_FMA_MATH: cuDNN's default
// math would allow TF32 on Hopper, seen in the first lab run), 16-bit types
// with tensor-op math and float32 accumulation (as in /work/shared/anchors). Random weights (not zeros).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "lab.h"

namespace lab {
namespace {

__global__ void fill_random_f32(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    p[i] = (float(h & 0xffff) / 65535.f - 0.5f) * 0.1f;
  }
}
__global__ void fill_random_bf16(__nv_bfloat16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    p[i] = __float2bfloat16((float(h & 0xffff) / 65535.f - 0.5f) * 0.1f);
  }
}
__global__ void fill_random_f16(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    p[i] = __float2half((float(h & 0xffff) / 65535.f - 0.5f) * 0.1f);
  }
}

void fill(void* p, size_t bytes, DType dt, unsigned seed) {
  if (dt == DType::F32)
    fill_random_f32<<<256, 256>>>(static_cast<float*>(p), bytes / 4, seed);
  else if (dt == DType::BF16)
    fill_random_bf16<<<256, 256>>>(static_cast<__nv_bfloat16*>(p), bytes / 2, seed);
  else
    fill_random_f16<<<256, 256>>>(static_cast<__half*>(p), bytes / 2, seed);
}

#define CK(x)                                                                  \
  do {                                                                         \
    cudnnStatus_t s_ = (x);                                                    \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                          \
      if (err) *err = std::string(#x) + ": " + cudnnGetErrorString(s_);        \
      result = -1;                                                             \
      goto done;                                                               \
    }                                                                          \
  } while (0)

}  // namespace

double cudnn_forward_us(int cell, DType dt, int H, int B, int T, int D, int algo, int reps, std::string* err) {
  static cudnnHandle_t handle = nullptr;
  if (!handle && cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
    if (err) *err = "cudnnCreate failed";
    return -1;
  }
  double result = -1;
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnDropoutDescriptor_t drop = nullptr;
  cudnnRNNDataDescriptor_t xd = nullptr, yd = nullptr;
  cudnnTensorDescriptor_t hd = nullptr;
  void *x = nullptr, *y = nullptr, *w = nullptr, *ws = nullptr, *rs = nullptr, *hx = nullptr, *cx = nullptr;
  int* dlen = nullptr;
  size_t wsz = 0, wksz = 0, rsz = 0;
  const cudnnDataType_t cdt =
      dt == DType::F32 ? CUDNN_DATA_FLOAT : dt == DType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  const size_t es = dtype_size(dt);
  const cudnnRNNMode_t mode = cell == 0 ? CUDNN_LSTM : cell == 1 ? CUDNN_GRU : cell == 2 ? CUDNN_RNN_TANH : CUDNN_RNN_RELU;
  std::vector<int> lens(B, T);
  int dims[3] = {D, B, H}, strides[3] = {B * H, H, 1};
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> times;

  CK(cudnnCreateRNNDescriptor(&rnn));
  CK(cudnnCreateDropoutDescriptor(&drop));
  CK(cudnnSetDropoutDescriptor(drop, handle, 0.f, nullptr, 0, 0));
  CK(cudnnSetRNNDescriptor_v8(rnn, cudnnRNNAlgo_t(algo), mode, CUDNN_RNN_DOUBLE_BIAS,
                              D == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, cdt,
                              CUDNN_DATA_FLOAT, dt == DType::F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH, H, H, H,
                              1, drop, CUDNN_RNN_PADDED_IO_DISABLED));
  if (algo == 2) CK(cudnnBuildRNNDynamic(handle, rnn, B));
  CK(cudnnCreateRNNDataDescriptor(&xd));
  CK(cudnnCreateRNNDataDescriptor(&yd));
  CK(cudnnSetRNNDataDescriptor(xd, cdt, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, T, B, H, lens.data(), nullptr));
  CK(cudnnSetRNNDataDescriptor(yd, cdt, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, T, B, D * H, lens.data(), nullptr));
  CK(cudnnCreateTensorDescriptor(&hd));
  CK(cudnnSetTensorNdDescriptor(hd, cdt, 3, dims, strides));
  CK(cudnnGetRNNWeightSpaceSize(handle, rnn, &wsz));
  CK(cudnnGetRNNTempSpaceSizes(handle, rnn, CUDNN_FWD_MODE_INFERENCE, xd, &wksz, &rsz));
  if (cudaMalloc(&x, size_t(T) * B * H * es) || cudaMalloc(&y, size_t(T) * B * D * H * es) || cudaMalloc(&w, wsz) ||
      cudaMalloc(&ws, wksz + 256) || cudaMalloc(&hx, size_t(D) * B * H * es) ||
      cudaMalloc(&cx, size_t(D) * B * H * es) || cudaMalloc(&dlen, sizeof(int) * B)) {
    if (err) *err = "cudaMalloc failed";
    goto done;
  }
  if (rsz) cudaMalloc(&rs, rsz);
  cudaMemcpy(dlen, lens.data(), sizeof(int) * B, cudaMemcpyHostToDevice);
  fill(x, size_t(T) * B * H * es, dt, 1);
  fill(w, wsz, dt, 2);
  fill(hx, size_t(D) * B * H * es, dt, 3);
  fill(cx, size_t(D) * B * H * es, dt, 4);
  for (int i = 0; i < 3 + reps; ++i) {
    l2_flush(nullptr);
    cudaEventRecord(e0);
    CK(cudnnRNNForward(handle, rnn, CUDNN_FWD_MODE_INFERENCE, dlen, xd, x, yd, y, hd, hx, nullptr, hd,
                       mode == CUDNN_LSTM ? cx : nullptr, nullptr, wsz, w, wksz, ws, rsz, rs));
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i >= 3) times.push_back(ms * 1000.f);
  }
  if (cudaGetLastError() != cudaSuccess) {
    if (err) *err = "CUDA error in cuDNN call";
    goto done;
  }
  std::sort(times.begin(), times.end());
  result = times[times.size() / 2];
done:
  cudaFree(x);
  cudaFree(y);
  cudaFree(w);
  cudaFree(ws);
  cudaFree(rs);
  cudaFree(hx);
  cudaFree(cx);
  cudaFree(dlen);
  if (xd) cudnnDestroyRNNDataDescriptor(xd);
  if (yd) cudnnDestroyRNNDataDescriptor(yd);
  if (hd) cudnnDestroyTensorDescriptor(hd);
  if (rnn) cudnnDestroyRNNDescriptor(rnn);
  if (drop) cudnnDestroyDropoutDescriptor(drop);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGetLastError();
  return result;
}

}  // namespace lab
