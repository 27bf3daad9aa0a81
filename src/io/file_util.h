// Whole-file reads and crash-safe writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace openrnn::io {

// Reads the whole file; IoError naming the path on failure. max_bytes guards against reading something huge by
// mistake (IoError when the file is larger).
std::vector<uint8_t> read_file_bytes(const std::string& path, uint64_t max_bytes = (uint64_t{1} << 36));

// Writes `bytes` to `path` so that after a crash (kill -9, power loss) path holds either its old content or the
// complete new content, never a mix: write "<path>.tmp.<pid>" in the same directory, fsync it, rename over path,
// fsync the directory. On any failure the temporary file is removed and IoError is thrown; path is untouched.
void write_file_atomic(const std::string& path, const void* bytes, size_t n);

bool file_exists(const std::string& path);
// mkdir -p; IoError on failure.
void make_dirs(const std::string& path);
std::string dir_name(const std::string& path);  // "." for a bare file name

}  // namespace openrnn::io
