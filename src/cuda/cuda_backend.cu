// The CUDA backend object: owns the device context (aux streams, events, cuBLAS handles) and dispatches each call to
// the algorithm select.cu resolves. Validation already happened in api.cpp.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda_backend.h"
#include "cuda_common.cuh"

namespace openrnn {
namespace cuda {

void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  // The runtime also records a failed call as the thread's last error; a non-sticky one (a refused launch
  // configuration) would then be reported again by the next OPENRNN_LAUNCH_CHECK, in a later, unrelated call. This
  // call reports it; consume it here (a sticky error stays, and is reported by every later call, as it should).
  cudaGetLastError();
  const char* base = std::strrchr(file, '/');
  fail(OPENRNN_STATUS_CUDA_ERROR, std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                                      ") in " + what + " at " + (base ? base + 1 : file) + ":" + std::to_string(line));
}

void throw_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  fail(OPENRNN_STATUS_CUDA_ERROR, std::string("cuBLAS error ") + cublasGetStatusName(s) + " (" +
                                      cublasGetStatusString(s) + ") in " + what + " at " + (base ? base + 1 : file) +
                                      ":" + std::to_string(line));
}

DeviceGuard::DeviceGuard(int device) {
  OPENRNN_CUDA_CHECK(cudaGetDevice(&prev_));
  if (prev_ != device) {
    OPENRNN_CUDA_CHECK(cudaSetDevice(device));
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) cudaSetDevice(prev_);  // best effort: a destructor must not throw
}

void Context::fork(int n) const {
  if (n <= 1) return;
  OPENRNN_CUDA_CHECK(cudaEventRecord(events[0], stream));
  for (int i = 1; i < n; ++i) OPENRNN_CUDA_CHECK(cudaStreamWaitEvent(aux[i - 1], events[0], 0));
}

void Context::join(int n) const {
  for (int i = 1; i < n; ++i) {
    OPENRNN_CUDA_CHECK(cudaEventRecord(events[i], aux[i - 1]));
    OPENRNN_CUDA_CHECK(cudaStreamWaitEvent(stream, events[i], 0));
  }
}

bool Context::overlap_lanes() const {
  static const int forced = [] {
    const char* e = std::getenv("OPENRNN_OVERLAP_LANES");
    return !e ? -1 : std::strcmp(e, "0") == 0 ? 0 : std::strcmp(e, "1") == 0 ? 1 : -1;
  }();
  if (forced >= 0) return forced == 1;
  if (stream == nullptr || stream == cudaStreamLegacy) return false;  // the legacy stream cannot be captured
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  OPENRNN_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status == cudaStreamCaptureStatusActive;
}

size_t blas_ws_per_handle(long long B, long long H, openrnn_data_type dt, bool allow_tf32) {
  static const size_t forced = [] {
    const char* e = std::getenv("OPENRNN_CUBLAS_WS_MIB");
    int mib = 0;
    if (e && std::sscanf(e, "%d", &mib) == 1 && mib >= 1 && mib <= 256) return static_cast<size_t>(mib) << 20;
    return size_t(0);
  }();
  if (forced) return forced;
  if (B * H >= 65536 || H > 1024) return kCublasWorkspaceLargeBytes;
  static const bool mid16 = [] {  // developer switch OPENRNN_CUBLAS_WS16_MID=0: 4 MiB there again
    const char* e = std::getenv("OPENRNN_CUBLAS_WS16_MID");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  const bool half = dt == OPENRNN_DATA_HALF || dt == OPENRNN_DATA_BFLOAT16;
  if (mid16 && half && B * H >= 32768) return kCublasWorkspaceLargeBytes;
  if (dt == OPENRNN_DATA_FLOAT && !allow_tf32 && (B <= 4 || (H <= 512 && B <= 64))) return kCublasWorkspaceLargeBytes;
  return kCublasWorkspaceBytes;
}

size_t blas_step_ws(long long B, long long H, openrnn_data_type dt, bool allow_tf32, bool proj) {
  const size_t call = blas_ws_per_handle(B, H, dt, allow_tf32);
  static const size_t forced = [] {
    const char* e = std::getenv("OPENRNN_STD_STEP_WS_MIB");
    int mib = 0;
    if (e && std::sscanf(e, "%d", &mib) == 1 && mib >= 1 && mib <= 256) return static_cast<size_t>(mib) << 20;
    return size_t(0);
  }();
  if (forced) return std::min(forced, call);
  // The small-B float32 rule's 32 MiB is for the GEMMs over all T * B rows (session 42). The steps' own GEMMs are
  // M = B, and at B = 2-16 cuBLAS picks far slower kernels for some of them from 32 MiB (ncu, session 62 run 2: a
  // 32x128 xmma kernel of 51-64 µs per step GEMM). Only GRU reset-before and the LSTM projection run cuBLAS steps
  // there (the other cells take the fused step), and B = 1 H = 1024. Session 62 run 3 (H200, graph, float32, µs/step,
  // 32 -> 4 MiB for the steps, best of two processes): GRU reset-before H = 128 B = 8 / 16 inference 86.0 / 86.7 ->
  // 7.3 / 7.6, training 198 / 200 -> 20.6 / 21.1; H = 64-512 B = 4-16 inference -0.3% to +1075% faster, training
  // +4.2% to +864%; LSTM P = 64 / 256, H = 128-512 B = 4-16 inference 9-253% faster, training -35% (P = 64 H = 512
  // B = 4-8) to +96%. B = 32-64 lost 3-55% (kept at 32 MiB). At B = 1 H = 1024 GRU 7.79 -> 6.07 (training 19.2 ->
  // 17.4), GRU reset-before +7% / +34%, LSTM and RNN within 0.4%, LSTM P = 256 training -18% (kept).
  const bool small_b = dt == OPENRNN_DATA_FLOAT && !allow_tf32 && B * H < 65536 && H <= 1024 &&
                       (B <= 4 || (H <= 512 && B <= 64));  // blas_ws_per_handle's float32 clause
  if (small_b && ((B >= 2 && B <= 16 && H <= 512) || (B == 1 && H == 1024 && !proj)))
    return std::min(call, kCublasWorkspaceBytes);
  return call;
}

void Context::bind_blas_workspace(void* workspace, size_t ws) const {
  char* w = static_cast<char*>(workspace);
  OPENRNN_CUBLAS_CHECK(cublasSetStream(blas, stream));
  OPENRNN_CUBLAS_CHECK(cublasSetWorkspace(blas, w, ws));
  for (int i = 0; i < kAuxStreams; ++i) {
    OPENRNN_CUBLAS_CHECK(cublasSetStream(aux_blas[i], aux[i]));
    OPENRNN_CUBLAS_CHECK(cublasSetWorkspace(aux_blas[i], w + ws * (i + 1), ws));
  }
}

namespace {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int ordinal) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      cudaGetLastError();  // clear the sticky-free error state left by a failed query
      fail(OPENRNN_STATUS_NO_DEVICE, std::string("openrnn_create_handle: no CUDA device is available (") +
                                         (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
    }
    if (ordinal >= count)
      fail(OPENRNN_STATUS_NO_DEVICE, "openrnn_create_handle: CUDA ordinal " + std::to_string(ordinal) +
                                         " does not exist (" + std::to_string(count) + " device(s))");
    ctx_.device = ordinal;
    DeviceGuard g(ordinal);
    try {
      OPENRNN_CUDA_CHECK(cudaGetDeviceProperties(&ctx_.props, ordinal));
      for (int i = 0; i < kAuxStreams; ++i) {
        OPENRNN_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx_.aux[i], cudaStreamNonBlocking));
        OPENRNN_CUBLAS_CHECK(cublasCreate(&ctx_.aux_blas[i]));
      }
      for (int i = 0; i < kEvents; ++i)
        OPENRNN_CUDA_CHECK(cudaEventCreateWithFlags(&ctx_.events[i], cudaEventDisableTiming));
      OPENRNN_CUBLAS_CHECK(cublasCreate(&ctx_.blas));
      for (cublasHandle_t h : all_blas()) {
        // Strict float32 unless a descriptor opts into TF32 per GEMM (gemm_rm picks the compute type); pointer mode
        // host: alpha/beta are host scalars baked into captured graphs.
        OPENRNN_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
        OPENRNN_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
        OPENRNN_CUBLAS_CHECK(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));
      }
      algos_ = make_algos();
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudaBackend() override {
    try {
      DeviceGuard g(ctx_.device);
      release();
    } catch (...) {
    }
  }

  void set_stream(void* stream) override { ctx_.stream = static_cast<cudaStream_t>(stream); }
  void* stream() const override { return ctx_.stream; }

  AlgoQuery query_algo(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, openrnn_fwd_mode mode,
                       openrnn_algo algo) const override {
    return choose_algo(algos_, ctx_, rnn, x, mode, algo);
  }

  TempSizes temp_sizes(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, openrnn_fwd_mode mode) const override {
    return pick(rnn, x, mode).sizes(ctx_, rnn, x, mode);
  }

  void forward(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const ForwardArgs& a) override {
    DeviceGuard g(ctx_.device);
    pick(rnn, x, a.mode).forward(ctx_, rnn, x, a);
  }
  void backward_data(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const BackwardDataArgs& a) override {
    DeviceGuard g(ctx_.device);
    pick(rnn, x, OPENRNN_FWD_TRAINING).backward_data(ctx_, rnn, x, a);
  }
  void backward_weights(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                        const BackwardWeightsArgs& a) override {
    DeviceGuard g(ctx_.device);
    pick(rnn, x, OPENRNN_FWD_TRAINING).backward_weights(ctx_, rnn, x, a);
  }

 private:
  CudaAlgo& pick(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, openrnn_fwd_mode mode) const {
    const AlgoQuery q = choose_algo(algos_, ctx_, rnn, x, mode, rnn.cfg.algo);
    if (!q.supported) not_supported(q.reason);
    CudaAlgo* a = q.chosen == OPENRNN_ALGO_PERSISTENT ? algos_.persistent.get() : algos_.standard.get();
    if (!a) fail(OPENRNN_STATUS_INTERNAL_ERROR, "CUDA backend: the chosen algorithm is not built");
    return *a;
  }

  std::array<cublasHandle_t, 1 + kAuxStreams> all_blas() const {
    std::array<cublasHandle_t, 1 + kAuxStreams> h{};
    h[0] = ctx_.blas;
    for (int i = 0; i < kAuxStreams; ++i) h[static_cast<size_t>(i) + 1] = ctx_.aux_blas[i];
    return h;
  }

  void release() noexcept {
    algos_.standard.reset();
    algos_.persistent.reset();
    if (ctx_.blas) cublasDestroy(ctx_.blas);
    ctx_.blas = nullptr;
    for (int i = 0; i < kAuxStreams; ++i) {
      if (ctx_.aux_blas[i]) cublasDestroy(ctx_.aux_blas[i]);
      if (ctx_.aux[i]) cudaStreamDestroy(ctx_.aux[i]);
      ctx_.aux_blas[i] = nullptr;
      ctx_.aux[i] = nullptr;
    }
    for (int i = 0; i < kEvents; ++i) {
      if (ctx_.events[i]) cudaEventDestroy(ctx_.events[i]);
      ctx_.events[i] = nullptr;
    }
  }

  Context ctx_;
  AlgoSet algos_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Backend> make_cuda_backend(int ordinal) { return std::make_unique<cuda::CudaBackend>(ordinal); }

}  // namespace openrnn
