// CUDA side of the bench's Device: one non-blocking stream shared by openrnn and cuDNN, CUDA events, L2 flush.
#include <cuda_runtime.h>

#include <cstdlib>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_device.h"

namespace openrnn {
namespace bench {
namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {
    int n = 0;
    cuda_check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
    if (ordinal < 0 || ordinal >= n)
      throw std::runtime_error("CUDA device " + std::to_string(ordinal) + " does not exist (" + std::to_string(n) +
                               " present)");
    cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
    cuda_check(cudaGetDeviceProperties(&prop_, ordinal), "cudaGetDeviceProperties");
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
    // Twice the L2 size: writing it evicts every line a previous repeat left behind.
    flush_bytes_ = size_t(prop_.l2CacheSize > 0 ? prop_.l2CacheSize : (64 << 20)) * 2;
    cuda_check(cudaMalloc(&flush_, flush_bytes_), "cudaMalloc (L2 flush buffer)");
    // OPENRNN_BENCH_PAD_MIB=n (developer switch, session 44): n MiB allocated here and held for the process, so that
    // every later buffer lands at other device addresses (for timings that depend on where the buffers are).
    if (const char* c = std::getenv("OPENRNN_BENCH_PAD_MIB")) {
      const long mib = std::strtol(c, nullptr, 10);
      if (mib > 0 && mib <= 65536) cuda_check(cudaMalloc(&pad_, size_t(mib) << 20), "cudaMalloc (address pad)");
    }
    // OPENRNN_BENCH_CACHE_CONFIG=l1|shared|equal (developer switch, docs/performance.md session 30): the context's
    // cache preference (cudaDeviceSetCacheConfig) for kernels that set none of their own.
    if (const char* c = std::getenv("OPENRNN_BENCH_CACHE_CONFIG")) {
      const std::string v = c;
      const cudaFuncCache pref = v == "l1" ? cudaFuncCachePreferL1
                                 : v == "shared" ? cudaFuncCachePreferShared
                                 : v == "equal" ? cudaFuncCachePreferEqual
                                                : cudaFuncCachePreferNone;
      cuda_check(cudaDeviceSetCacheConfig(pref), "cudaDeviceSetCacheConfig");
    }
  }
  ~CudaDevice() override {
    cudaFree(flush_);
    if (pad_) cudaFree(pad_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  bool is_gpu() const override { return true; }
  std::string name() const override {
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    std::ostringstream s;
    s << prop_.name << " (sm_" << prop_.major << prop_.minor << ", " << prop_.multiProcessorCount << " SMs, L2 "
      << (prop_.l2CacheSize >> 20) << " MiB, " << (prop_.totalGlobalMem >> 30) << " GiB; driver " << driver
      << ", runtime " << runtime << ")";
    return s.str();
  }
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* dst, const void* src, size_t bytes) override {
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync H2D");
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void download(void* dst, const void* src, size_t bytes) override {
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync D2H");
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void fill(void* dst, int byte, size_t bytes) override {
    cuda_check(cudaMemsetAsync(dst, byte, bytes, stream_), "cudaMemsetAsync");
  }
  void sync() override {
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    cuda_check(cudaGetLastError(), "kernel launch");
  }
  void* stream() const override { return stream_; }

  double time_us(const std::function<void()>& before, const std::function<void()>& region,
                 const Timing& timing) override {
    std::vector<double> t;
    t.reserve(timing.reps);
    cudaGraphExec_t exec = nullptr;
    for (int i = 0; i < timing.warmup + timing.reps; ++i) {
      before();
      if (timing.graph && i == timing.warmup) exec = capture(region);
      if (timing.flush_l2)
        cuda_check(cudaMemsetAsync(flush_, i & 0xff, flush_bytes_, stream_), "cudaMemsetAsync (L2 flush)");
      cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
      if (exec) {
        const cudaError_t e = cudaGraphLaunch(exec, stream_);
        if (e != cudaSuccess) cudaGraphExecDestroy(exec);
        cuda_check(e, "cudaGraphLaunch");
      } else {
        region();
      }
      cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      cuda_check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      cuda_check(cudaGetLastError(), "kernel launch");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      if (i >= timing.warmup) t.push_back(1000.0 * ms);
    }
    if (exec) cudaGraphExecDestroy(exec);
    return median(t);
  }

 private:
  // One call of `region` captured from the stream into an instantiated graph (the caller destroys it).
  cudaGraphExec_t capture(const std::function<void()>& region) {
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    cuda_check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    cudaGraph_t g = nullptr;
    try {
      region();
    } catch (...) {
      cudaStreamEndCapture(stream_, &g);
      if (g) cudaGraphDestroy(g);
      cudaGetLastError();
      throw;
    }
    cuda_check(cudaStreamEndCapture(stream_, &g), "cudaStreamEndCapture (the call could not be captured)");
    // OPENRNN_BENCH_GRAPH_DOT=prefix (developer switch, session 46): each captured graph written as prefixN.dot with
    // every node's parameters and attributes (cudaGraphDebugDotPrint, verbose), N counting the process's captures;
    // for comparing what two processes captured for the same row.
    if (const char* dot = std::getenv("OPENRNN_BENCH_GRAPH_DOT")) {
      const std::string path = std::string(dot) + std::to_string(captures_++) + ".dot";
      cuda_check(cudaGraphDebugDotPrint(g, path.c_str(), cudaGraphDebugDotFlagsVerbose), "cudaGraphDebugDotPrint");
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    cuda_check(e, "cudaGraphInstantiate");
    return exec;
  }

  int ordinal_;
  cudaDeviceProp prop_{};
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  void* flush_ = nullptr;
  void* pad_ = nullptr;  // OPENRNN_BENCH_PAD_MIB
  int captures_ = 0;      // OPENRNN_BENCH_GRAPH_DOT
  size_t flush_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(int ordinal) { return std::make_unique<CudaDevice>(ordinal); }

}  // namespace bench
}  // namespace openrnn
