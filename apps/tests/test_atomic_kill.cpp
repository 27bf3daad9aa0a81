// Crash safety of write_file_atomic: a child process rewrites a checkpoint in a loop and is killed with SIGKILL at
// an arbitrary moment; the file must then hold one complete checkpoint (old or new), never a torn one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "file_util.h"
#include "io_error.h"
#include "safetensors.h"

using namespace openrnn::io;

namespace {
SafeTensors version(uint8_t k) {
  SafeTensors st;
  std::vector<uint8_t> payload(size_t{8} << 20, k);  // 8 MiB: the write takes long enough to be interrupted
  st.tensors["payload"] = Tensor::from_u8(payload.data(), {static_cast<int64_t>(payload.size())});
  st.metadata["version"] = std::to_string(k);
  return st;
}
}  // namespace

TEST(AtomicWrite, SurvivesSigkillAtAnyMoment) {
  char tmpl[] = "/tmp/openrnn_atomic_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/ck.safetensors";
  write_safetensors_atomic(path, version(0));
  const int delays_ms[] = {1, 7, 23, 61, 150, 300, 420};
  for (int delay : delays_ms) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (uint8_t k = 1;; k = static_cast<uint8_t>(k % 250 + 1)) write_safetensors_atomic(path, version(k));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    const SafeTensors st = read_safetensors(path);  // throws on a torn file
    const Tensor& t = st.get("payload");
    const uint8_t k = static_cast<uint8_t>(std::stoi(st.meta("version")));
    ASSERT_EQ(t.data.size(), size_t{8} << 20);
    for (size_t i = 0; i < t.data.size(); i += 4096) ASSERT_EQ(t.data[i], k) << "mixed content after kill";
    ASSERT_EQ(t.data.back(), k);
  }
  std::system(("rm -rf " + dir).c_str());
}
