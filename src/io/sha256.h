// SHA-256 (FIPS 180-4), streaming. Used to verify downloaded data sets against their published checksums.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace openrnn::io {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::array<uint8_t, 32> finish();  // the object must not be updated afterwards
  std::string finish_hex();          // 64 lowercase hex digits

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes
};

std::string sha256_hex(const void* data, size_t n);
// Streams the file; IoError when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace openrnn::io
