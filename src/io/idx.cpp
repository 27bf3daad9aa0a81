#include "idx.h"

#include <zlib.h>

#include <cstring>

#include "io_error.h"
#include "file_util.h"

namespace openrnn::io {

namespace {
size_t idx_elem_size(uint8_t code) {
  switch (code) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    case 0x0E: return 8;
    default: return 0;
  }
}
uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
}  // namespace

IdxArray parse_idx(const uint8_t* bytes, size_t n, const std::string& source) {
  auto bad = [&](const std::string& what) { return FormatError(source + ": not a valid IDX file: " + what); };
  if (n < 4) throw bad("shorter than the 4-byte magic number");
  if (bytes[0] != 0 || bytes[1] != 0) throw bad("magic number does not start with two zero bytes");
  IdxArray a;
  a.type_code = bytes[2];
  const size_t es = idx_elem_size(a.type_code);
  if (es == 0) throw bad("unknown element type code 0x" + std::to_string(a.type_code));
  const int nd = bytes[3];
  if (nd == 0) throw bad("zero dimensions");
  const size_t header = 4 + 4 * static_cast<size_t>(nd);
  if (n < header) throw bad("truncated in the dimension list (" + std::to_string(n) + " bytes)");
  uint64_t count = 1;
  for (int i = 0; i < nd; ++i) {
    const uint32_t d = be32(bytes + 4 + 4 * i);
    a.dims.push_back(d);
    if (d != 0 && count > (uint64_t{1} << 40) / d) throw bad("dimensions multiply past 2^40 elements");
    count *= d;
  }
  const uint64_t want = count * es;
  if (n - header != want)
    throw bad("dimensions need " + std::to_string(want) + " data bytes, the file holds " +
              std::to_string(n - header) + (n - header < want ? " (truncated?)" : " (trailing bytes)"));
  a.data.assign(bytes + header, bytes + n);
  return a;
}

std::vector<uint8_t> gunzip(const uint8_t* bytes, size_t n, const std::string& source, size_t max_out) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw FormatError(source + ": zlib inflateInit2 failed");
  std::vector<uint8_t> out;
  std::vector<uint8_t> chunk(1 << 18);
  zs.next_in = const_cast<Bytef*>(bytes);
  // zlib's avail_in is 32-bit; feed at most 1 GiB at a time.
  size_t remaining = n;
  int rc = Z_OK;
  for (;;) {
    if (zs.avail_in == 0 && remaining > 0) {
      const size_t take = remaining > (size_t{1} << 30) ? (size_t{1} << 30) : remaining;
      zs.avail_in = static_cast<uInt>(take);
      remaining -= take;
    }
    zs.next_out = chunk.data();
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    const size_t produced = chunk.size() - zs.avail_out;
    if (out.size() + produced > max_out) {
      inflateEnd(&zs);
      throw FormatError(source + ": decompresses to more than " + std::to_string(max_out) + " bytes");
    }
    out.insert(out.end(), chunk.data(), chunk.data() + produced);
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg ? zs.msg : "error " + std::to_string(rc);
      inflateEnd(&zs);
      throw FormatError(source + ": corrupt gzip data: " + msg);
    }
    if (produced == 0 && zs.avail_in == 0 && remaining == 0) {
      inflateEnd(&zs);
      throw FormatError(source + ": gzip data ends early (truncated file?)");
    }
  }
  inflateEnd(&zs);
  return out;
}

IdxArray load_idx(const std::string& path) {
  std::vector<uint8_t> raw = read_file_bytes(path);
  if (raw.size() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) raw = gunzip(raw.data(), raw.size(), path, size_t{1} << 32);
  return parse_idx(raw.data(), raw.size(), path);
}

ImageSet load_image_set(const std::string& images_path, const std::string& labels_path, int classes) {
  const IdxArray im = load_idx(images_path);
  if (im.magic() != 2051)
    throw FormatError(images_path + ": magic number " + std::to_string(im.magic()) +
                      ", expected 2051 (u8 images [N, rows, cols])");
  const IdxArray lb = load_idx(labels_path);
  if (lb.magic() != 2049)
    throw FormatError(labels_path + ": magic number " + std::to_string(lb.magic()) + ", expected 2049 (u8 labels [N])");
  if (im.dims[0] != lb.dims[0])
    throw FormatError(images_path + " holds " + std::to_string(im.dims[0]) + " images but " + labels_path +
                      " holds " + std::to_string(lb.dims[0]) + " labels");
  ImageSet s;
  s.count = im.dims[0];
  s.rows = im.dims[1];
  s.cols = im.dims[2];
  s.pixels = std::move(im.data);
  s.labels = lb.data;
  for (size_t i = 0; i < s.labels.size(); ++i)
    if (s.labels[i] >= classes)
      throw FormatError(labels_path + ": label " + std::to_string(s.labels[i]) + " at index " + std::to_string(i) +
                        " is not below " + std::to_string(classes));
  return s;
}

}  // namespace openrnn::io
