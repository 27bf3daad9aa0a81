// The CUDA backend object: owns the device context (aux streams, events, cuBLAS handles) and dispatches each call to
// the algorithm select.cu resolves. Validation already happened in api.cpp.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda_backend.h"
#include "cuda_common.cuh"
#include "standard_plan.h"  // env_int

namespace openrnn {
namespace cuda {

void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
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

size_t blas_ws_per_handle(long long B, long long H, openrnn_data_type dt, bool allow_tf32) {
  static const size_t forced = [] {
    const char* e = std::getenv("OPENRNN_CUBLAS_WS_MIB");
    int mib = 0;
    if (e && std::sscanf(e, "%d", &mib) == 1 && mib >= 1 && mib <= 256) return static_cast<size_t>(mib) << 20;
    return size_t(0);
  }();
  if (forced) return forced;
  if (B * H >= 65536 || H > 1024) return kCublasWorkspaceLargeBytes;
  if (dt == OPENRNN_DATA_FLOAT && !allow_tf32 && (B <= 4 || (H <= 512 && B <= 64))) return kCublasWorkspaceLargeBytes;
  return kCublasWorkspaceBytes;
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

__global__ void touch_kernel() {}  // OPENRNN_DEV_TOUCH_LANES=2

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
      touch_lanes();
    } catch (...) {
      release();
      throw;
    }
  }

  // OPENRNN_DEV_TOUCH_LANES (developer switch, session 44; docs/performance.md, "STANDARD's 16-bit B = 64 H = 1024
  // steps depend on the process's history"): work on the aux lanes at handle creation, to find which first use puts
  // later calls in the slow state. 1: an event recorded on lane 1 and waited for on lane 2 (no kernel); 2: an empty
  // kernel on lane 1; 3: a cuBLAS call on lane 1's handle (a 1 x 1 x 1 GEMM); 4: a CUDA graph captured on lane 1 with
  // a fork to lane 2 and back (an empty kernel on each), instantiated, launched once and destroyed. Unset: nothing.
  // (Session 44, run 10: 1-3 leave later calls fast.)
  void touch_lanes() {
    const int mode = env_int("OPENRNN_DEV_TOUCH_LANES");
    if (mode <= 0) return;
    if (mode == 1) {
      OPENRNN_CUDA_CHECK(cudaEventRecord(ctx_.events[0], ctx_.aux[0]));
      OPENRNN_CUDA_CHECK(cudaStreamWaitEvent(ctx_.aux[1], ctx_.events[0], 0));
    } else if (mode == 2) {
      touch_kernel<<<1, 32, 0, ctx_.aux[0]>>>();
      OPENRNN_LAUNCH_CHECK("touch_kernel");
    } else if (mode == 3) {
      float* d = nullptr;
      OPENRNN_CUDA_CHECK(cudaMalloc(&d, 3 * sizeof(float)));
      const float one = 1.f, zero = 0.f;
      OPENRNN_CUBLAS_CHECK(cublasSetStream(ctx_.aux_blas[0], ctx_.aux[0]));
      OPENRNN_CUBLAS_CHECK(cublasSgemm(ctx_.aux_blas[0], CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, d, 1, d + 1, 1, &zero,
                                       d + 2, 1));
      OPENRNN_CUDA_CHECK(cudaStreamSynchronize(ctx_.aux[0]));
      OPENRNN_CUDA_CHECK(cudaFree(d));
    } else if (mode == 4) {
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      OPENRNN_CUDA_CHECK(cudaStreamBeginCapture(ctx_.aux[0], cudaStreamCaptureModeThreadLocal));
      OPENRNN_CUDA_CHECK(cudaEventRecord(ctx_.events[0], ctx_.aux[0]));
      OPENRNN_CUDA_CHECK(cudaStreamWaitEvent(ctx_.aux[1], ctx_.events[0], 0));
      touch_kernel<<<1, 32, 0, ctx_.aux[0]>>>();
      touch_kernel<<<1, 32, 0, ctx_.aux[1]>>>();
      OPENRNN_CUDA_CHECK(cudaEventRecord(ctx_.events[1], ctx_.aux[1]));
      OPENRNN_CUDA_CHECK(cudaStreamWaitEvent(ctx_.aux[0], ctx_.events[1], 0));
      OPENRNN_CUDA_CHECK(cudaStreamEndCapture(ctx_.aux[0], &graph));
      OPENRNN_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      OPENRNN_CUDA_CHECK(cudaGraphLaunch(exec, ctx_.aux[0]));
      OPENRNN_CUDA_CHECK(cudaStreamSynchronize(ctx_.aux[0]));
      OPENRNN_CUDA_CHECK(cudaGraphExecDestroy(exec));
      OPENRNN_CUDA_CHECK(cudaGraphDestroy(graph));
    }
    OPENRNN_CUDA_CHECK(cudaDeviceSynchronize());
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
