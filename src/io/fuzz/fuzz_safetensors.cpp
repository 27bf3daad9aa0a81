// libFuzzer target: parse_safetensors must either return a consistent object or throw FormatError, never crash,
// hang or read out of bounds. A successful parse must serialize and parse back to the same tensors.
#include <cstdint>
#include <cstdlib>

#include "io_error.h"
#include "safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace openrnn::io;
  try {
    SafeTensors st = parse_safetensors(data, size, "fuzz");
    const std::vector<uint8_t> again = serialize_safetensors(st);
    SafeTensors st2 = parse_safetensors(again.data(), again.size(), "fuzz-roundtrip");
    if (st2.tensors.size() != st.tensors.size() || st2.metadata != st.metadata) std::abort();
    for (const auto& kv : st.tensors) {
      const Tensor& b = st2.tensors.at(kv.first);
      if (b.dtype != kv.second.dtype || b.shape != kv.second.shape || b.data != kv.second.data) std::abort();
    }
  } catch (const FormatError&) {
  }
  return 0;
}
