// The CPU backend: the Backend interface (src/backend.h) over the passes in cpu_forward.cpp, cpu_backward.cpp and
// cpu_wgrad.cpp. float64 problems run in double; float32, float16 and bfloat16 in float (16-bit tensors are
// converted into the workspace and results rounded back to nearest-even).
//
// Threads: a handle's thread count (default std::thread::hardware_concurrency(), OPENRNN_NUM_THREADS in the
// environment overrides) sizes the OpenMP regions: the step loops, and the products over all steps, whose rows are
// split over the OpenMP threads, each calling OpenBLAS on its slice (par_gemm in cpu_gemm.h). OpenBLAS itself is
// set to one thread (openblas_set_num_threads(1) before each call) so that only one pool of threads runs. That
// setting is process-global: other OpenBLAS users in the same process run single-threaded after an openrnn CPU
// call unless they set their own count again.
// Oversubscribed machines: like libgomp's OMP_DYNAMIC, a call runs on one thread when the 1-minute load average
// exceeds the number of cores by more than one (other processes hold the cores; every per-step barrier would then
// wait for a scheduler time slice: measured 10-50x slower per step than one thread on the shared 2-core build
// machine at load ~11). OPENRNN_CPU_ADAPT_THREADS=0 turns this off; the load is sampled at most every 0.5 s.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "backend.h"
#include "cpu_internal.h"
#include "error.h"

namespace openrnn {
namespace cpu {
namespace {

bool adapt_threads() {
  static const bool on = [] {
    const char* e = std::getenv("OPENRNN_CPU_ADAPT_THREADS");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

// True when the machine has more runnable work than cores (see the file comment).
bool machine_oversubscribed() {
  using clock = std::chrono::steady_clock;
  static std::atomic<long long> last_ns{-1};
  static std::atomic<bool> busy{false};
  const long long now = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
  const long long prev = last_ns.load(std::memory_order_relaxed);
  if (prev < 0 || now - prev > 500000000LL) {
    double load = 0.0;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const bool b = getloadavg(&load, 1) == 1 && load > static_cast<double>(cores) + 1.0;
    busy.store(b, std::memory_order_relaxed);
    last_ns.store(now, std::memory_order_relaxed);
  }
  return busy.load(std::memory_order_relaxed);
}

int default_threads() {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  if (n < 1) n = 1;
  if (const char* e = std::getenv("OPENRNN_NUM_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (end != e && *end == '\0' && v >= 1 && v <= 1024) n = static_cast<int>(v);
  }
  return n;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() : nt_(default_threads()) {}

  void set_num_threads(int n) override { nt_ = n; }
  int num_threads() const override { return nt_; }

  AlgoQuery query_algo(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, openrnn_fwd_mode,
                       openrnn_algo algo) const override {
    AlgoQuery q;
    q.chosen = OPENRNN_ALGO_STANDARD;
    // The BLAS takes 32-bit dimensions: the T*B rows of the products over all steps must fit (the widths G*H, I and
    // D*Hout are at most 2^26 by the descriptor's limits).
    (void)rnn;
    const long long TB = static_cast<long long>(x.T) * x.B;
    if (TB > INT_MAX) {
      q.supported = false;
      q.reason = "T*B = " + std::to_string(TB) +
                 " rows exceed the 32-bit dimensions of the CPU backend's BLAS (at most 2147483647)";
      return q;
    }
    if (algo == OPENRNN_ALGO_PERSISTENT) {
      q.supported = false;
      q.chosen = OPENRNN_ALGO_PERSISTENT;
      q.reason = "PERSISTENT is a GPU algorithm; the CPU backend runs STANDARD";
    } else {
      q.supported = true;
    }
    return q;
  }

  TempSizes temp_sizes(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, openrnn_fwd_mode mode) const override {
    const Dims d = make_dims(rnn, x);
    TempSizes t;
    const bool training = mode == OPENRNN_FWD_TRAINING;
    size_t ws = forward_ws(d, training).bytes;
    if (training) {
      ws = std::max(ws, backward_ws(d).bytes);
      ws = std::max(ws, wgrad_ws(d).bytes);
      t.reserve = reserve_bytes(d);
    }
    t.workspace = ws + 64;  // room to align the caller's base up to 64 bytes
    return t;
  }

  void forward(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const ForwardArgs& a) override {
    const int nt = prepare();
    if (rnn.cfg.data_type == OPENRNN_DATA_DOUBLE)
      forward_pass<double>(rnn, x, a, nt);
    else
      forward_pass<float>(rnn, x, a, nt);
  }
  void backward_data(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const BackwardDataArgs& a) override {
    const int nt = prepare();
    if (rnn.cfg.data_type == OPENRNN_DATA_DOUBLE)
      backward_data_pass<double>(rnn, x, a, nt);
    else
      backward_data_pass<float>(rnn, x, a, nt);
  }
  void backward_weights(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                        const BackwardWeightsArgs& a) override {
    const int nt = prepare();
    if (rnn.cfg.data_type == OPENRNN_DATA_DOUBLE)
      backward_weights_pass<double>(rnn, x, a, nt);
    else
      backward_weights_pass<float>(rnn, x, a, nt);
  }

 private:
  // The thread count of this call: the handle's, or 1 on an oversubscribed machine. OpenBLAS runs single-threaded
  // inside our threads.
  int prepare() const {
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    return (nt_ > 1 && adapt_threads() && machine_oversubscribed()) ? 1 : nt_;
  }
  int nt_;
};

}  // namespace
}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<cpu::CpuBackend>(); }

}  // namespace openrnn
