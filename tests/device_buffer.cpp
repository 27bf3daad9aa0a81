// DeviceBuffer: host allocations for the CPU backend, cudaMalloc for CUDA (only when the tests are built with
// OPENRNN_TEST_WITH_CUDA, i.e. the library has a CUDA backend).
#include "device_buffer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#ifdef OPENRNN_TEST_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace ort {

namespace {

unsigned char canary(size_t i) { return static_cast<unsigned char>(0xA5u ^ (i * 0x3Bu)); }

#ifdef OPENRNN_TEST_WITH_CUDA
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
#endif

void copy_to(Backend be, void* dst, const void* src, size_t n) {
  if (n == 0) return;
#ifdef OPENRNN_TEST_WITH_CUDA
  if (be == Backend::CUDA) {
    cuda_check(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    return;
  }
#endif
  (void)be;
  std::memcpy(dst, src, n);
}

void copy_from(Backend be, void* dst, const void* src, size_t n) {
  if (n == 0) return;
#ifdef OPENRNN_TEST_WITH_CUDA
  if (be == Backend::CUDA) {
    cuda_check(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return;
  }
#endif
  (void)be;
  std::memcpy(dst, src, n);
}

}  // namespace

std::vector<Backend> compiled_backends() {
#ifdef OPENRNN_TEST_WITH_CUDA
  return {Backend::CPU, Backend::CUDA};
#else
  return {Backend::CPU};
#endif
}

bool backend_available(Backend b, std::string* why) {
  if (b == Backend::CPU) return true;
#ifdef OPENRNN_TEST_WITH_CUDA
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) cudaGetLastError();  // clear the error so later CUDA calls are not poisoned by it
  if (e != cudaSuccess || n == 0) {
    if (why)
      *why = std::string("no CUDA device present (cudaGetDeviceCount: ") +
             (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + "); CUDA cases run on the GPU machine";
    return false;
  }
  return true;
#else
  if (why) *why = "this build has no CUDA backend (OPENRNN_CUDA=OFF)";
  return false;
#endif
}

void backend_sync(Backend b) {
#ifdef OPENRNN_TEST_WITH_CUDA
  if (b == Backend::CUDA) cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
#endif
  (void)b;
}

DeviceBuffer::DeviceBuffer(Backend be, size_t bytes) : be_(be), bytes_(bytes) {
  const size_t total = bytes + 2 * kGuard;
  if (be == Backend::CPU) {
    base_ = static_cast<unsigned char*>(std::aligned_alloc(64, (total + 63) / 64 * 64));
    if (!base_) throw std::runtime_error("DeviceBuffer: host allocation failed");
  } else {
#ifdef OPENRNN_TEST_WITH_CUDA
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, total), "cudaMalloc");
    base_ = static_cast<unsigned char*>(p);
#else
    throw std::runtime_error("DeviceBuffer: CUDA buffer requested in a build without CUDA");
#endif
  }
  std::vector<unsigned char> g(kGuard);
  for (size_t i = 0; i < kGuard; ++i) g[i] = canary(i);
  copy_to(be_, base_, g.data(), kGuard);
  for (size_t i = 0; i < kGuard; ++i) g[i] = canary(i + 7);
  copy_to(be_, base_ + kGuard + bytes_, g.data(), kGuard);
  fill({0xCD});
}

DeviceBuffer::~DeviceBuffer() {
  if (!base_) return;
  if (be_ == Backend::CPU) {
    std::free(base_);
  } else {
#ifdef OPENRNN_TEST_WITH_CUDA
    cudaFree(base_);
#endif
  }
}

void DeviceBuffer::swap(DeviceBuffer& o) noexcept {
  std::swap(be_, o.be_);
  std::swap(base_, o.base_);
  std::swap(bytes_, o.bytes_);
}

void DeviceBuffer::upload(const void* host, size_t n, size_t offset) {
  if (offset + n > bytes_) throw std::runtime_error("DeviceBuffer::upload past the end");
  copy_to(be_, base_ + kGuard + offset, host, n);
}

std::vector<unsigned char> DeviceBuffer::download() const {
  std::vector<unsigned char> out(bytes_);
  copy_from(be_, out.data(), base_ + kGuard, bytes_);
  return out;
}

void DeviceBuffer::fill(const std::vector<unsigned char>& pattern) {
  std::vector<unsigned char> v(bytes_);
  for (size_t i = 0; i < bytes_; ++i) v[i] = pattern[i % pattern.size()];
  copy_to(be_, base_ + kGuard, v.data(), bytes_);
}

bool DeviceBuffer::guards_intact(std::string* what) const {
  std::vector<unsigned char> lo(kGuard), hi(kGuard);
  copy_from(be_, lo.data(), base_, kGuard);
  copy_from(be_, hi.data(), base_ + kGuard + bytes_, kGuard);
  for (size_t i = 0; i < kGuard; ++i) {
    if (lo[i] != canary(i)) {
      if (what) *what = "guard byte " + std::to_string(kGuard - i) + " before the buffer changed";
      return false;
    }
    if (hi[i] != canary(i + 7)) {
      if (what) *what = "guard byte " + std::to_string(i) + " after the buffer (of " + std::to_string(bytes_) +
                        " bytes) changed";
      return false;
    }
  }
  return true;
}

}  // namespace ort
