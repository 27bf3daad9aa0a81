// safetensors (https://github.com/huggingface/safetensors) reader and writer.
//
// File: u64 little-endian N | N bytes of UTF-8 JSON header | data buffer.
// Header: {"__metadata__": {string: string}, "<tensor>": {"dtype": "F32", "shape": [d0, ...],
//          "data_offsets": [begin, end]}, ...}; offsets are relative to the data buffer, end - begin equals
// prod(shape) * dtype size, and the tensors tile the buffer exactly (no gaps, no overlaps). Multi-byte values are
// little-endian. The writer pads the header with spaces so the data buffer starts 8-byte aligned, and lays
// tensors out in name order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace openrnn::io {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL };

const char* dtype_name(DType t);     // "F32", ...
size_t dtype_size(DType t);          // bytes per element
bool dtype_from_name(const std::string& name, DType* out);

struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // [] is a scalar (one element)
  std::vector<uint8_t> data;   // little-endian, prod(shape) * dtype_size(dtype) bytes

  size_t numel() const;
  // Typed copies (the dtype must match; FormatError otherwise, naming `name`).
  std::vector<float> to_f32(const std::string& name) const;
  std::vector<int32_t> to_i32(const std::string& name) const;
  static Tensor from_f32(const float* p, std::vector<int64_t> shape);
  static Tensor from_i32(const int32_t* p, std::vector<int64_t> shape);
  static Tensor from_u8(const uint8_t* p, std::vector<int64_t> shape);
  static Tensor from_f64(const double* p, std::vector<int64_t> shape);
};

struct SafeTensors {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;

  // The tensor of that name; FormatError "<source>: no tensor <name>" when absent.
  const Tensor& get(const std::string& name, const std::string& source = "checkpoint") const;
  // The metadata value; FormatError when absent.
  const std::string& meta(const std::string& key, const std::string& source = "checkpoint") const;
};

// Parses a whole file image. source names it in error messages. Throws FormatError on any violation of the format
// (header length past the end, invalid JSON, unknown dtype, negative or overflowing shape, offsets out of range,
// size mismatch, gaps or overlaps, trailing bytes).
SafeTensors parse_safetensors(const uint8_t* bytes, size_t n, const std::string& source = "<memory>");
SafeTensors read_safetensors(const std::string& path);

std::vector<uint8_t> serialize_safetensors(const SafeTensors& st);
// serialize + write_file_atomic.
void write_safetensors_atomic(const std::string& path, const SafeTensors& st);

// Headers larger than this are rejected before they are parsed (the upstream library uses 100 MB).
constexpr uint64_t kMaxSafetensorsHeader = 100u << 20;

}  // namespace openrnn::io
