#include "text.h"

#include <array>

#include "io_error.h"
#include "file_util.h"

namespace openrnn::io {

CharCorpus load_char_corpus(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  if (bytes.empty()) throw FormatError(path + ": the text file is empty");
  std::array<int32_t, 256> id;
  id.fill(-1);
  for (uint8_t b : bytes) id[b] = 0;
  CharCorpus c;
  for (int b = 0; b < 256; ++b)
    if (id[b] == 0) {
      id[b] = static_cast<int32_t>(c.vocab.size());
      c.vocab.push_back(static_cast<uint8_t>(b));
    }
  if (c.vocab.size() < 2) throw FormatError(path + ": the text has fewer than 2 distinct characters");
  c.ids.resize(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) c.ids[i] = id[bytes[i]];
  return c;
}

std::vector<int32_t> encode_chars(const std::string& text, const std::vector<uint8_t>& vocab) {
  std::array<int32_t, 256> id;
  id.fill(-1);
  for (size_t i = 0; i < vocab.size(); ++i) id[vocab[i]] = static_cast<int32_t>(i);
  std::vector<int32_t> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    if (id[b] < 0)
      throw FormatError("character " + std::to_string(b) + " at position " + std::to_string(i) +
                        " of the text is not in the model's vocabulary");
    out.push_back(id[b]);
  }
  return out;
}

}  // namespace openrnn::io
