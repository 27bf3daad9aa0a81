// Plain-text corpora for character-level models: bytes, a sorted byte vocabulary, and the text as vocabulary ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace openrnn::io {

struct CharCorpus {
  std::vector<uint8_t> vocab;   // sorted distinct bytes; id i <-> byte vocab[i]
  std::vector<int32_t> ids;     // the text, one id per byte
};

// Reads the file (FormatError when it is empty or has fewer than 2 distinct bytes).
CharCorpus load_char_corpus(const std::string& path);
// Maps bytes through an existing vocabulary; FormatError naming the first byte that is not in it.
std::vector<int32_t> encode_chars(const std::string& text, const std::vector<uint8_t>& vocab);

}  // namespace openrnn::io
