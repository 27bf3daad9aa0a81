#include "file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io_error.h"

namespace openrnn::io {

namespace {
std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw IoError("cannot write " + path + ": " + errno_text());
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}
}  // namespace

std::vector<uint8_t> read_file_bytes(const std::string& path, uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open " + path + ": " + errno_text());
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const std::string e = errno_text();
    ::close(fd);
    throw IoError("cannot stat " + path + ": " + e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(path + " is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw IoError(path + " is " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                  std::to_string(max_bytes));
  }
  std::vector<uint8_t> out(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      const std::string e = errno_text();
      ::close(fd);
      throw IoError("cannot read " + path + ": " + e);
    }
    if (r == 0) break;  // shrank while reading
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

std::string dir_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void write_file_atomic(const std::string& path, const void* bytes, size_t n) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError("cannot create " + tmp + ": " + errno_text());
  try {
    write_all(fd, static_cast<const uint8_t*>(bytes), n, tmp);
    if (::fsync(fd) != 0) throw IoError("fsync " + tmp + ": " + errno_text());
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const std::string e = errno_text();
    ::unlink(tmp.c_str());
    throw IoError("close " + tmp + ": " + e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string e = errno_text();
    ::unlink(tmp.c_str());
    throw IoError("cannot rename " + tmp + " to " + path + ": " + e);
  }
  // The rename is durable only once the directory entry is on disk.
  const std::string dir = dir_name(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw IoError("cannot open directory " + dir + " to fsync it: " + errno_text());
  const int rc = ::fsync(dfd);
  const std::string e = rc != 0 ? errno_text() : "";
  ::close(dfd);
  if (rc != 0 && errno != EINVAL) throw IoError("fsync directory " + dir + ": " + e);
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void make_dirs(const std::string& path) {
  if (path.empty()) return;
  std::string cur;
  size_t i = 0;
  while (i <= path.size()) {
    const size_t j = path.find('/', i);
    const size_t end = j == std::string::npos ? path.size() : j;
    cur = path.substr(0, end);
    if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
      throw IoError("cannot create directory " + cur + ": " + errno_text());
    if (j == std::string::npos) break;
    i = j + 1;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw IoError(path + " is not a directory");
}

}  // namespace openrnn::io
