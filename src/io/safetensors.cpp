#include "safetensors.h"

#include <algorithm>
#include <cstring>

#include "io_error.h"
#include "file_util.h"
#include "json.h"

namespace openrnn::io {

namespace {
struct DTypeInfo {
  DType t;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {{DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2},
                                 {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
                                 {DType::I16, "I16", 2}, {DType::I8, "I8", 1},   {DType::U64, "U64", 8},
                                 {DType::U32, "U32", 4}, {DType::U16, "U16", 2}, {DType::U8, "U8", 1},
                                 {DType::BOOL, "BOOL", 1}};

// The host must be little-endian for the memcpy-based typed copies (x86-64, aarch64).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

template <typename T>
Tensor make(DType dt, const T* p, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dt;
  t.shape = std::move(shape);
  t.data.resize(t.numel() * sizeof(T));
  if (!t.data.empty()) std::memcpy(t.data.data(), p, t.data.size());
  return t;
}
}  // namespace

const char* dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.t == t) return d.name;
  return "?";
}
size_t dtype_size(DType t) {
  for (const auto& d : kDTypes)
    if (d.t == t) return d.size;
  return 0;
}
bool dtype_from_name(const std::string& name, DType* out) {
  for (const auto& d : kDTypes)
    if (name == d.name) {
      *out = d.t;
      return true;
    }
  return false;
}

size_t Tensor::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}
std::vector<float> Tensor::to_f32(const std::string& name) const {
  if (dtype != DType::F32) throw FormatError("tensor " + name + " has dtype " + dtype_name(dtype) + ", expected F32");
  std::vector<float> v(numel());
  if (!v.empty()) std::memcpy(v.data(), data.data(), data.size());
  return v;
}
std::vector<int32_t> Tensor::to_i32(const std::string& name) const {
  if (dtype != DType::I32) throw FormatError("tensor " + name + " has dtype " + dtype_name(dtype) + ", expected I32");
  std::vector<int32_t> v(numel());
  if (!v.empty()) std::memcpy(v.data(), data.data(), data.size());
  return v;
}
Tensor Tensor::from_f32(const float* p, std::vector<int64_t> shape) { return make(DType::F32, p, std::move(shape)); }
Tensor Tensor::from_i32(const int32_t* p, std::vector<int64_t> shape) { return make(DType::I32, p, std::move(shape)); }
Tensor Tensor::from_u8(const uint8_t* p, std::vector<int64_t> shape) { return make(DType::U8, p, std::move(shape)); }
Tensor Tensor::from_f64(const double* p, std::vector<int64_t> shape) { return make(DType::F64, p, std::move(shape)); }

const Tensor& SafeTensors::get(const std::string& name, const std::string& source) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw FormatError(source + ": no tensor \"" + name + "\"");
  return it->second;
}
const std::string& SafeTensors::meta(const std::string& key, const std::string& source) const {
  auto it = metadata.find(key);
  if (it == metadata.end()) throw FormatError(source + ": no metadata entry \"" + key + "\"");
  return it->second;
}

SafeTensors parse_safetensors(const uint8_t* bytes, size_t n, const std::string& source) {
  auto bad = [&](const std::string& what) -> FormatError {
    return FormatError(source + ": not a valid safetensors file: " + what);
  };
  if (n < 8) throw bad("it is " + std::to_string(n) + " bytes long, shorter than the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxSafetensorsHeader)
    throw bad("header length " + std::to_string(header_len) + " exceeds the limit of " +
              std::to_string(kMaxSafetensorsHeader) + " bytes");
  if (header_len > n - 8)
    throw bad("header length " + std::to_string(header_len) + " runs past the end of the file (" +
              std::to_string(n) + " bytes; truncated?)");
  const std::string header(reinterpret_cast<const char*>(bytes + 8), static_cast<size_t>(header_len));
  Json root;
  try {
    root = Json::parse(header, 8);
  } catch (const FormatError& e) {
    throw bad(std::string("header: ") + e.what());
  }
  if (!root.is_object()) throw bad("header is not a JSON object");
  const uint8_t* buffer = bytes + 8 + header_len;
  const uint64_t buffer_len = n - 8 - header_len;

  SafeTensors st;
  struct Span {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Span> spans;
  for (const auto& kv : root.members()) {
    const std::string& name = kv.first;
    const Json& v = kv.second;
    try {
      if (name == "__metadata__") {
        for (const auto& m : v.members("__metadata__"))
          st.metadata[m.first] = m.second.as_string(("__metadata__." + m.first).c_str());
        continue;
      }
      if (!v.is_object()) throw FormatError("entry is not an object");
      for (const auto& field : v.members())
        if (field.first != "dtype" && field.first != "shape" && field.first != "data_offsets")
          throw FormatError("unknown field \"" + field.first + "\"");
      Tensor t;
      const std::string& dt = v.at("dtype").as_string("dtype");
      if (!dtype_from_name(dt, &t.dtype)) throw FormatError("unknown dtype \"" + dt + "\"");
      uint64_t numel = 1;
      for (const Json& d : v.at("shape").items("shape")) {
        const uint64_t dim = d.as_uint64("shape entry");
        if (dim != 0 && numel > (uint64_t{1} << 62) / dim) throw FormatError("shape overflows 64 bits");
        numel *= dim;
        t.shape.push_back(static_cast<int64_t>(dim));
      }
      const auto& off = v.at("data_offsets").items("data_offsets");
      if (off.size() != 2) throw FormatError("data_offsets must have 2 entries");
      const uint64_t begin = off[0].as_uint64("data_offsets[0]"), end = off[1].as_uint64("data_offsets[1]");
      if (end < begin) throw FormatError("data_offsets end < begin");
      if (end > buffer_len)
        throw FormatError("data_offsets end " + std::to_string(end) + " is past the data buffer of " +
                          std::to_string(buffer_len) + " bytes (truncated file?)");
      const uint64_t want = numel * dtype_size(t.dtype);
      if (end - begin != want)
        throw FormatError("holds " + std::to_string(end - begin) + " bytes but dtype and shape need " +
                          std::to_string(want));
      t.data.assign(buffer + begin, buffer + end);
      auto ins = st.tensors.emplace(name, std::move(t));
      spans.push_back({begin, end, &ins.first->first});
    } catch (const FormatError& e) {
      throw bad("tensor \"" + name + "\": " + e.what());
    }
  }
  // The tensors must tile [0, buffer_len) exactly.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  for (const Span& s : spans) {
    if (s.begin != pos)
      throw bad("tensor \"" + *s.name + "\" starts at " + std::to_string(s.begin) + ", expected " +
                std::to_string(pos) + (s.begin < pos ? " (overlap)" : " (gap)"));
    pos = s.end;
  }
  if (pos != buffer_len)
    throw bad(std::to_string(buffer_len - pos) + " bytes after the last tensor are not described by the header");
  return st;
}

SafeTensors read_safetensors(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> serialize_safetensors(const SafeTensors& st) {
  Json root = Json::object();
  if (!st.metadata.empty()) {
    Json meta = Json::object();
    for (const auto& kv : st.metadata) meta.set(kv.first, Json::string(kv.second));
    root.set("__metadata__", std::move(meta));
  }
  uint64_t offset = 0;
  for (const auto& kv : st.tensors) {
    const Tensor& t = kv.second;
    if (t.data.size() != t.numel() * dtype_size(t.dtype))
      throw FormatError("tensor " + kv.first + ": " + std::to_string(t.data.size()) + " bytes do not match its shape");
    Json e = Json::object();
    e.set("dtype", Json::string(dtype_name(t.dtype)));
    Json shape = Json::array();
    for (int64_t d : t.shape) shape.push(Json::integer(d));
    e.set("shape", std::move(shape));
    Json off = Json::array();
    off.push(Json::integer(static_cast<int64_t>(offset)));
    offset += t.data.size();
    off.push(Json::integer(static_cast<int64_t>(offset)));
    e.set("data_offsets", std::move(off));
    root.set(kv.first, std::move(e));
  }
  std::string header = root.dump();
  while ((header.size() + 8) % 8 != 0) header += ' ';
  std::vector<uint8_t> out(8 + header.size() + offset);
  const uint64_t hl = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(hl >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  uint8_t* p = out.data() + 8 + header.size();
  for (const auto& kv : st.tensors) {
    if (!kv.second.data.empty()) std::memcpy(p, kv.second.data.data(), kv.second.data.size());
    p += kv.second.data.size();
  }
  return out;
}

void write_safetensors_atomic(const std::string& path, const SafeTensors& st) {
  const std::vector<uint8_t> bytes = serialize_safetensors(st);
  write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace openrnn::io
