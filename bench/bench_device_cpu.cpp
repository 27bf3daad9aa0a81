#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <new>
#include <stdexcept>
#include <vector>

#include "bench_device.h"

namespace openrnn {
namespace bench {
namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

class CpuDevice final : public Device {
 public:
  bool is_gpu() const override { return false; }
  std::string name() const override { return cpu_model(); }
  void* alloc(size_t bytes) override {
    const size_t n = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, n ? n : 64);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void fill(void* dst, int byte, size_t bytes) override { std::memset(dst, byte, bytes); }
  void sync() override {}
  double time_us(const std::function<void()>& before, const std::function<void()>& region,
                 const Timing& timing) override {
    using clock = std::chrono::steady_clock;
    for (int i = 0; i < timing.warmup; ++i) {
      before();
      region();
    }
    std::vector<double> t;
    t.reserve(timing.reps);
    for (int i = 0; i < timing.reps; ++i) {
      before();
      if (timing.process_clock) {
        timespec a{}, b{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        region();
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        t.push_back(1e6 * double(b.tv_sec - a.tv_sec) + 1e-3 * double(b.tv_nsec - a.tv_nsec));
        continue;
      }
      const auto t0 = clock::now();
      region();
      const auto t1 = clock::now();
      t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return median(t);
  }
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

#ifndef OPENRNN_BENCH_HAVE_CUDA
std::unique_ptr<Device> make_cuda_device(int) {
  throw std::runtime_error("openrnn-bench was built without CUDA (configure with -DOPENRNN_CUDA=ON)");
}
#endif

}  // namespace bench
}  // namespace openrnn
