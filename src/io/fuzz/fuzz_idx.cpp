// libFuzzer target for the IDX parser and the gzip path in front of it: FormatError or success, nothing else.
#include <cstdint>
#include <cstdlib>

#include "io_error.h"
#include "idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace openrnn::io;
  try {
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
      const std::vector<uint8_t> raw = gunzip(data, size, "fuzz", size_t{1} << 24);
      parse_idx(raw.data(), raw.size(), "fuzz");
    } else {
      const IdxArray a = parse_idx(data, size, "fuzz");
      size_t n = 1;
      for (uint32_t d : a.dims) n *= d;
      if (a.data.size() < n) std::abort();
    }
  } catch (const FormatError&) {
  }
  return 0;
}
