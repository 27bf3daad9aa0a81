// openrnn-bench: where buffers live and how a region is timed.
//
// CPU: host memory (64-byte aligned), std::chrono::steady_clock around the region.
// CUDA: device memory on one stream; CUDA events recorded on that stream around the region; before every repeat
// (outside the events) the L2 cache is overwritten with a buffer twice its size, so that a small problem is not
// timed out of a warm cache. Both: `warmup` untimed calls, then the median of `reps` timed calls.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "bench_common.h"

namespace openrnn {
namespace bench {

class Device {
 public:
  virtual ~Device() = default;
  virtual bool is_gpu() const = 0;
  virtual std::string name() const = 0;          // "AMD EPYC (2 threads)" / "NVIDIA H100 80GB HBM3 (sm_90, ...)"
  virtual void* alloc(size_t bytes) = 0;         // never null; throws on failure; 0 bytes gives a 1-byte block
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* host_src, size_t bytes) = 0;   // synchronous
  virtual void download(void* host_dst, const void* src, size_t bytes) = 0; // synchronous (waits for the stream)
  virtual void fill(void* dst, int byte, size_t bytes) = 0;                 // stream-ordered on the GPU
  virtual void sync() = 0;
  virtual void* stream() const { return nullptr; }  // cudaStream_t for CUDA
  // Runs before() then region() warmup times untimed, then reps times with only region() timed; returns the
  // median time of region() in microseconds. before() is where buffers that accumulate are reset.
  virtual double time_us(const std::function<void()>& before, const std::function<void()>& region,
                         const Timing& timing) = 0;
};

std::unique_ptr<Device> make_cpu_device();
// Throws std::runtime_error when the bench was built without CUDA or the device does not exist.
std::unique_ptr<Device> make_cuda_device(int ordinal);

// A buffer on a Device, released when it goes out of scope.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device& dev, size_t bytes) : dev_(&dev), bytes_(bytes), p_(dev.alloc(bytes)) {}
  ~Buffer() { if (p_) dev_->release(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept : dev_(o.dev_), bytes_(o.bytes_), p_(o.p_) { o.p_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      if (p_) dev_->release(p_);
      dev_ = o.dev_; bytes_ = o.bytes_; p_ = o.p_; o.p_ = nullptr;
    }
    return *this;
  }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  Device* dev_ = nullptr;
  size_t bytes_ = 0;
  void* p_ = nullptr;
};

}  // namespace bench
}  // namespace openrnn
