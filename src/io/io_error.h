// Errors of the file-format code. Every parser throws FormatError whose message names the file (or "<memory>") and
// says what is wrong and where; callers print it as is. Nothing in src/io exits or aborts.
#pragma once

#include <stdexcept>
#include <string>

namespace openrnn::io {

class FormatError : public std::runtime_error {
 public:
  explicit FormatError(const std::string& message) : std::runtime_error(message) {}
};

// I/O failures (open, read, write, fsync, rename); the message carries strerror(errno).
class IoError : public std::runtime_error {
 public:
  explicit IoError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace openrnn::io
