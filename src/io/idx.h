// IDX files (the MNIST format): big-endian magic 0x0000TTNN (TT element type, NN number of dimensions), NN
// big-endian u32 dimensions, then the elements, big-endian. Files may be gzip-compressed (detected by the gzip magic,
// not by the name).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace openrnn::io {

struct IdxArray {
  uint8_t type_code = 0;        // 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64
  std::vector<uint32_t> dims;   // e.g. [N, 28, 28]
  std::vector<uint8_t> data;    // the raw big-endian elements, prod(dims) * element size bytes
  uint32_t magic() const { return (uint32_t{type_code} << 8) | static_cast<uint32_t>(dims.size()); }
};

// Parses an uncompressed IDX image; the size must match the dimensions exactly. FormatError names source.
IdxArray parse_idx(const uint8_t* bytes, size_t n, const std::string& source = "<memory>");

// Inflates a gzip stream; FormatError on corrupt or truncated input or when the output would exceed max_out.
std::vector<uint8_t> gunzip(const uint8_t* bytes, size_t n, const std::string& source, size_t max_out);

// Reads path (gzip or plain) and parses it.
IdxArray load_idx(const std::string& path);

// MNIST-style data set: images u8 [N, rows, cols] (magic 2051), labels u8 [N] (magic 2049) in 0..classes-1.
struct ImageSet {
  uint32_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // [N, rows, cols]
  std::vector<uint8_t> labels;  // [N]
};
// Checks the magic numbers, that the counts agree and that every label is < classes. FormatError names the file.
ImageSet load_image_set(const std::string& images_path, const std::string& labels_path, int classes = 10);

}  // namespace openrnn::io
