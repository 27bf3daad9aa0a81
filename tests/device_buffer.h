// Test buffers on either backend: host memory for the CPU, device memory for CUDA. Each buffer sits between two
// 64-byte guard regions holding a canary pattern, so a call that writes one byte outside its tensor is caught, and
// the whole data region can be poisoned (e.g. NaN-filled) before a call to see what the call wrote.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "openrnn/openrnn.h"

namespace ort {

enum class Backend { CPU, CUDA };

inline const char* backend_tag(Backend b) { return b == Backend::CPU ? "cpu" : "cuda"; }
inline openrnn_device backend_device(Backend b) { return b == Backend::CPU ? OPENRNN_DEVICE_CPU : OPENRNN_DEVICE_CUDA; }

// Backends the test binary was built for (CUDA only when the library was built with OPENRNN_CUDA).
std::vector<Backend> compiled_backends();
// Whether a backend can run here: CPU always; CUDA when a device is present (cudaGetDeviceCount > 0). When not,
// *why says so (for GTEST_SKIP).
bool backend_available(Backend b, std::string* why);
// Waits for all device work (no-op on the CPU).
void backend_sync(Backend b);

class DeviceBuffer {
 public:
  static constexpr size_t kGuard = 64;

  DeviceBuffer() = default;
  DeviceBuffer(Backend be, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }

  // The data region (between the guards). Valid, distinct and 64-byte aligned even for 0 bytes.
  void* data() { return base_ ? base_ + kGuard : nullptr; }
  const void* data() const { return base_ ? base_ + kGuard : nullptr; }
  size_t bytes() const { return bytes_; }
  Backend backend() const { return be_; }

  // Copies host bytes into the data region (from byte `offset`).
  void upload(const void* host, size_t n, size_t offset = 0);
  void upload(const std::vector<unsigned char>& host) { upload(host.data(), host.size()); }
  // Copies the data region to the host.
  std::vector<unsigned char> download() const;
  // Fills the data region by repeating `pattern` (e.g. the bytes of one NaN element).
  void fill(const std::vector<unsigned char>& pattern);
  // Whether both guard regions still hold the canary; when not, *what names the first changed byte.
  bool guards_intact(std::string* what) const;

 private:
  void swap(DeviceBuffer& o) noexcept;
  Backend be_ = Backend::CPU;
  unsigned char* base_ = nullptr;  // allocation start: guard | data | guard
  size_t bytes_ = 0;
};

}  // namespace ort
