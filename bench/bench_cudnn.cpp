// The GPU comparator: cuDNN 9's RNN API called directly (no framework), every algorithm that accepts the problem.
//
// Descriptor: cudnnSetRNNDescriptor_v8 with double bias, linear input, CUDNN_RNN_PADDED_IO_ENABLED and the data
// in the sequence-major unpacked layout [T, B, ·] (with equal lengths this is byte for byte openrnn's layout).
// Math: float32 strict = CUDNN_FMA_MATH (no TF32, as PyTorch with allow_tf32=False); float16 / bfloat16 =
// CUDNN_TENSOR_OP_MATH with float32 math precision; float64 = CUDNN_DEFAULT_MATH.
// Weights: cudnnGetRNNWeightParams gives, for each pseudo-layer (l*D + d) and linear-layer id, where a gate's
// matrix [H, I_l] and bias [H] live in cuDNN's weight space; ids 0..G-1 are the input side (W_ih, b_ih) and
// G..2G-1 the recurrent side (W_hh, b_hh), gates in PyTorch's order (LSTM i f g o, GRU r z n). The canonical
// tensors are scattered there once, outside timing; weight gradients are gathered back the same way.
// LSTM projection (--proj P): projSize = P (cuDNN: projSize == hiddenSize means none), so y, hx, hy and their
// gradients are P wide (hDesc [L*D, B, P]) while cx, cy stay H wide (cDesc [L*D, B, H]); the recurrent matrices
// (ids 4..7) are [H, P], and id 8 is the projection matrix W_hr [P, H], which has no bias (cuDNN's documentation
// of cudnnGetRNNWeightParams: for LSTM, linLayerID 8 is the projection matrix when enabled, with no bias).
// cuDNN documents the projection for CUDNN_RNN_ALGO_STANDARD only: a persistent algorithm that refuses it is
// reported as refused.
// cudnnRNNBackwardWeights_v8 supports CUDNN_WGRAD_MODE_ADD only, so dweights is zeroed before every call (outside
// the timed region). PERSIST_DYNAMIC is compiled for the batch size with cudnnBuildRNNDynamic before use.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "bench_cudnn.h"

namespace openrnn {
namespace bench {
namespace {

// A cuDNN call that failed: "refused" when it is cuDNN saying the problem is outside what the algorithm does.
struct CudnnFailure : std::runtime_error {
  cudnnStatus_t status;
  CudnnFailure(cudnnStatus_t s, const std::string& m) : std::runtime_error(m), status(s) {}
};

void ck(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  char msg[512] = {0};
  cudnnGetLastErrorString(msg, sizeof msg);
  throw CudnnFailure(s, std::string(what) + ": " + cudnnGetErrorString(s) + (msg[0] ? std::string(" (") + msg + ")" : ""));
}

template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
struct Desc {
  T d = nullptr;
  Desc() { ck(Create(&d), "cudnnCreate*Descriptor"); }
  ~Desc() { Destroy(d); }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
};
using RnnDesc = Desc<cudnnRNNDescriptor_t, cudnnCreateRNNDescriptor, cudnnDestroyRNNDescriptor>;
using DataDesc = Desc<cudnnRNNDataDescriptor_t, cudnnCreateRNNDataDescriptor, cudnnDestroyRNNDataDescriptor>;
using TensorDesc = Desc<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using DropoutDesc = Desc<cudnnDropoutDescriptor_t, cudnnCreateDropoutDescriptor, cudnnDestroyDropoutDescriptor>;

struct AlgoName {
  cudnnRNNAlgo_t algo;
  const char* name;
};
const AlgoName kAlgos[] = {{CUDNN_RNN_ALGO_STANDARD, "standard"},
                           {CUDNN_RNN_ALGO_PERSIST_STATIC, "persist_static"},
                           {CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, "persist_static_small_h"},
                           {CUDNN_RNN_ALGO_PERSIST_DYNAMIC, "persist_dynamic"}};

struct Math {
  cudnnDataType_t data, prec;
  cudnnMathType_t math;
};
Math math_for(openrnn_data_type t) {
  switch (t) {
    case OPENRNN_DATA_FLOAT: return {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH};
    case OPENRNN_DATA_DOUBLE: return {CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH};
    case OPENRNN_DATA_HALF: return {CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH};
    case OPENRNN_DATA_BFLOAT16: return {CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH};
  }
  throw std::runtime_error("unknown data type");
}

// Where one canonical gate block lives in cuDNN's weight space (byte offsets), and where it comes from.
struct Slot {
  size_t cudnn_offset;   // bytes into the weight space
  size_t canon_offset;   // elements into the canonical buffer
  size_t count;          // elements
};

class CudnnComparator final : public Comparator {
 public:
  CudnnComparator(Device& gpu, const std::vector<std::string>& algos) : dev_(gpu) {
    for (const auto& a : kAlgos)
      for (const auto& want : algos)
        if (want == a.name) algos_.push_back(a);
    if (algos.empty()) algos_.assign(std::begin(kAlgos), std::end(kAlgos));
    if (algos_.size() != (algos.empty() ? 4u : algos.size()))
      throw std::runtime_error("--cudnn-algos: names are standard, persist_static, persist_static_small_h, "
                               "persist_dynamic");
  }
  ~CudnnComparator() override {
    if (h_) cudnnDestroy(h_);
  }

  std::string name() const override { return "cuDNN"; }
  std::vector<std::string> describe() const override {
    std::ostringstream s;
    const size_t v = cudnnGetVersion();
    s << "cuDNN " << v / 10000 << '.' << (v % 10000) / 100 << '.' << v % 100 << " (header " << CUDNN_MAJOR << '.'
      << CUDNN_MINOR << '.' << CUDNN_PATCHLEVEL << ", cudart " << cudnnGetCudartVersion() << "); algorithms:";
    for (const auto& a : algos_) s << ' ' << a.name;
    return {s.str(),
            "cuDNN math: float32 CUDNN_FMA_MATH (strict; no TF32), float16/bfloat16 CUDNN_TENSOR_OP_MATH with "
            "float32 precision, float64 CUDNN_DEFAULT_MATH; double bias; padded IO enabled; seq-major layout"};
  }

  std::vector<CompResult> run(const Problem& p, const ProblemData& d, const CheckFn& check,
                              const Timing& timing) override {
    open_handle();
    std::vector<CompResult> out;
    for (const auto& a : algos_) {
      CompResult r;
      r.algo = a.name;
      if (p.cell == OPENRNN_CELL_GRU_RESET_BEFORE) {
        r.status = "refused: cuDNN has no reset-before GRU";
      } else {
        try {
          run_algo(p, d, a.algo, check, timing, &r);
        } catch (const CudnnFailure& e) {
          r.status = (e.status == CUDNN_STATUS_NOT_SUPPORTED || e.status == CUDNN_STATUS_BAD_PARAM ||
                      e.status == CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
                         ? std::string("refused: ") + e.what()
                         : std::string("error: ") + e.what();
        } catch (const std::exception& e) {
          r.status = std::string("error: ") + e.what();
        }
        cudaGetLastError();  // a failed cuDNN launch must not poison the next algorithm's checks
      }
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  // OPENRNN_BENCH_CUDNN_STAGE (developer switch, for finding what a cuDNN call leaves behind in the process,
  // docs/performance.md session 30): "none" does no cuDNN work for the row; "setup" stops after the descriptors and
  // buffers; "call" after one call (no check, no timing); "eager" times cuDNN without a graph under --graph. Each
  // stopped row gets a "skipped" status.
  static std::string stage() {
    const char* v = std::getenv("OPENRNN_BENCH_CUDNN_STAGE");
    return v ? v : "";
  }
  // OPENRNN_BENCH_CUDA_STATE (developer switch): the context's cache preference, flags and limits on stderr.
  static void print_cuda_state(const char* when) {
    if (!std::getenv("OPENRNN_BENCH_CUDA_STATE")) return;
    cudaFuncCache cc = cudaFuncCachePreferNone;
    cudaGetLastError();
    cudaDeviceGetCacheConfig(&cc);
    size_t lim[7] = {0};
    const cudaLimit which[7] = {cudaLimitStackSize, cudaLimitPrintfFifoSize, cudaLimitMallocHeapSize,
                                cudaLimitDevRuntimeSyncDepth, cudaLimitDevRuntimePendingLaunchCount,
                                cudaLimitMaxL2FetchGranularity, cudaLimitPersistingL2CacheSize};
    for (int i = 0; i < 7; ++i) cudaDeviceGetLimit(&lim[i], which[i]);
    unsigned flags = 0;
    cudaGetDeviceFlags(&flags);
    std::fprintf(stderr,
                 "# cuda state %s: cache config %d, flags 0x%x, limits stack %zu printf %zu heap %zu syncdepth %zu "
                 "pending %zu l2fetch %zu persistL2 %zu\n",
                 when, static_cast<int>(cc), flags, lim[0], lim[1], lim[2], lim[3], lim[4], lim[5], lim[6]);
    cudaGetLastError();
  }
  void run_algo(const Problem& p, const ProblemData& d, cudnnRNNAlgo_t algo, const CheckFn& check,
                const Timing& timing, CompResult* r) {
    const std::string stop = stage();
    if (stop == "none") {
      r->status = "skipped (OPENRNN_BENCH_CUDNN_STAGE=none)";
      return;
    }
    const Math m = math_for(p.dtype);
    const openrnn_data_type t = p.dtype;
    const size_t es = dtype_bytes(t);
    const bool lstm = p.cell == OPENRNN_CELL_LSTM;
    const int L = p.L, D = p.D, B = p.B, H = p.H, I = p.I, T = p.T;
    const int Ho = p.Hout();  // projSize: P with a projection, else H (cuDNN's "no projection")
    cudnnRNNMode_t cell = CUDNN_LSTM;
    if (p.cell == OPENRNN_CELL_GRU) cell = CUDNN_GRU;
    if (p.cell == OPENRNN_CELL_RNN_TANH) cell = CUDNN_RNN_TANH;
    if (p.cell == OPENRNN_CELL_RNN_RELU) cell = CUDNN_RNN_RELU;

    RnnDesc rnn;
    auto set_desc = [&](cudnnMathType_t math) {
      return cudnnSetRNNDescriptor_v8(rnn.d, algo, cell, CUDNN_RNN_DOUBLE_BIAS,
                                      D == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, m.data,
                                      m.prec, math, I, H, Ho, L, dropout_.d, CUDNN_RNN_PADDED_IO_ENABLED);
    };
    cudnnStatus_t st = set_desc(m.math);
    if (st != CUDNN_STATUS_SUCCESS && m.math == CUDNN_FMA_MATH) {
      // Should a cuDNN build refuse FMA math for RNNs, DEFAULT math is the next strictest; run it with
      // NVIDIA_TF32_OVERRIDE=0 in the environment (bench/gpu_check.sh does) so that it cannot use TF32.
      st = set_desc(CUDNN_DEFAULT_MATH);
      if (st == CUDNN_STATUS_SUCCESS) r->algo += "(default_math)";
    }
    if (st != CUDNN_STATUS_SUCCESS && p.P > 0 && algo != CUDNN_RNN_ALGO_STANDARD) {
      // What cuDNN documents: the recurrent projection is for CUDNN_RNN_ALGO_STANDARD only. Whatever status this
      // cuDNN returns for it, the row says "refused" (the algorithm does not take the problem), not "error".
      char msg[512] = {0};
      cudnnGetLastErrorString(msg, sizeof msg);
      throw CudnnFailure(CUDNN_STATUS_NOT_SUPPORTED,
                         std::string("cudnnSetRNNDescriptor_v8: ") + cudnnGetErrorString(st) +
                             (msg[0] ? std::string(" (") + msg + ")" : "") +
                             "; cuDNN's LSTM projection is for CUDNN_RNN_ALGO_STANDARD only");
    }
    ck(st, "cudnnSetRNNDescriptor_v8");
    if (algo == CUDNN_RNN_ALGO_PERSIST_DYNAMIC) ck(cudnnBuildRNNDynamic(h_, rnn.d, B), "cudnnBuildRNNDynamic");

    std::vector<int> lens(B, T);
    DataDesc xd, yd;
    ck(cudnnSetRNNDataDescriptor(xd.d, m.data, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, T, B, I, lens.data(),
                                 nullptr),
       "cudnnSetRNNDataDescriptor (x)");
    ck(cudnnSetRNNDataDescriptor(yd.d, m.data, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, T, B, D * Ho, lens.data(),
                                 nullptr),
       "cudnnSetRNNDataDescriptor (y)");
    // h states (hx, hy, dhy, dhx) are projSize wide, c states (cx, cy, dcy, dcx) hiddenSize wide: one descriptor
    // each (the same shape without a projection).
    TensorDesc hd, cd;
    const int hdims[3] = {L * D, B, Ho}, hstrides[3] = {B * Ho, Ho, 1};
    ck(cudnnSetTensorNdDescriptor(hd.d, m.data, 3, hdims, hstrides), "cudnnSetTensorNdDescriptor (h)");
    const int cdims[3] = {L * D, B, H}, cstrides[3] = {B * H, H, 1};
    ck(cudnnSetTensorNdDescriptor(cd.d, m.data, 3, cdims, cstrides), "cudnnSetTensorNdDescriptor (c)");

    const cudnnForwardMode_t fmode = p.training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
    size_t wbytes = 0, work_bytes = 0, reserve_bytes = 0;
    ck(cudnnGetRNNWeightSpaceSize(h_, rnn.d, &wbytes), "cudnnGetRNNWeightSpaceSize");
    ck(cudnnGetRNNTempSpaceSizes(h_, rnn.d, fmode, xd.d, &work_bytes, &reserve_bytes), "cudnnGetRNNTempSpaceSizes");

    Buffer w(dev_, wbytes), work(dev_, work_bytes), reserve(dev_, p.training ? reserve_bytes : 0);
    const std::vector<Slot> slots = map_weights(rnn.d, w, wbytes, p, d);
    std::vector<uint8_t> image(wbytes, 0);
    for (const auto& s : slots) {
      const std::vector<double> block(d.w.begin() + s.canon_offset, d.w.begin() + s.canon_offset + s.count);
      const auto bytes = encode(block, t);
      std::memcpy(image.data() + s.cudnn_offset, bytes.data(), bytes.size());
    }
    dev_.upload(w.get(), image.data(), wbytes);

    auto put = [&](const std::vector<double>& v) {
      const auto bytes = encode(v, t);
      Buffer b(dev_, bytes.size());
      dev_.upload(b.get(), bytes.data(), bytes.size());
      return b;
    };
    // y [T, B, D*Ho]; h states [L*D, B, Ho] (ns elements); c states [L*D, B, H] (nc elements).
    const size_t ny = size_t(T) * B * D * Ho, ns = d.hx.size(), nc = d.cx.size();
    Buffer x = put(d.x), hx = put(d.hx), cx = lstm ? put(d.cx) : Buffer();
    Buffer y(dev_, ny * es), hy(dev_, ns * es), cy = lstm ? Buffer(dev_, nc * es) : Buffer();
    Buffer seq(dev_, B * sizeof(int32_t));
    dev_.upload(seq.get(), lens.data(), B * sizeof(int32_t));
    Buffer dy, dhy, dcy, dx, dhx, dcx, dw;
    if (p.training) {
      dy = put(d.dy);
      dhy = put(d.dhy);
      if (lstm) dcy = put(d.dcy);
      dx = Buffer(dev_, d.x.size() * es);
      dhx = Buffer(dev_, ns * es);
      if (lstm) dcx = Buffer(dev_, nc * es);
      dw = Buffer(dev_, wbytes);
    }
    const int32_t* dseq = static_cast<const int32_t*>(seq.get());

    auto zero_dw = [&] {
      if (p.training) dev_.fill(dw.get(), 0, wbytes);
    };
    auto call = [&] {
      ck(cudnnRNNForward(h_, rnn.d, fmode, dseq, xd.d, x.get(), yd.d, y.get(), hd.d, hx.get(), hy.get(), cd.d,
                         cx.get(), cy.get(), wbytes, w.get(), work_bytes, work.get(), p.training ? reserve_bytes : 0,
                         p.training ? reserve.get() : nullptr),
         "cudnnRNNForward");
      if (!p.training) return;
      ck(cudnnRNNBackwardData_v8(h_, rnn.d, dseq, yd.d, y.get(), dy.get(), xd.d, dx.get(), hd.d, hx.get(),
                                 dhy.get(), dhx.get(), cd.d, cx.get(), dcy.get(), dcx.get(), wbytes, w.get(),
                                 work_bytes, work.get(), reserve_bytes, reserve.get()),
         "cudnnRNNBackwardData_v8");
      ck(cudnnRNNBackwardWeights_v8(h_, rnn.d, CUDNN_WGRAD_MODE_ADD, dseq, xd.d, x.get(), hd.d, hx.get(), yd.d,
                                    y.get(), wbytes, dw.get(), work_bytes, work.get(), reserve_bytes, reserve.get()),
         "cudnnRNNBackwardWeights_v8");
    };

    if (stop == "setup") {
      dev_.sync();
      print_cuda_state("after the cuDNN setup");
      r->status = "skipped (OPENRNN_BENCH_CUDNN_STAGE=setup)";
      return;
    }
    zero_dw();
    call();
    dev_.sync();
    print_cuda_state("after a cuDNN call");
    if (stop == "call") {
      r->status = "skipped (OPENRNN_BENCH_CUDNN_STAGE=call)";
      return;
    }
    auto fetch = [&](const Buffer& b, size_t n) {
      std::vector<uint8_t> host(n * es);
      dev_.download(host.data(), b.get(), host.size());
      return decode(host.data(), n, t);
    };
    Outputs o;
    o.y = fetch(y, ny);
    o.hy = fetch(hy, ns);
    if (lstm) o.cy = fetch(cy, nc);
    if (p.training) {
      o.dx = fetch(dx, d.x.size());
      o.dhx = fetch(dhx, ns);
      if (lstm) o.dcx = fetch(dcx, nc);
      std::vector<uint8_t> gimage(wbytes);
      dev_.download(gimage.data(), dw.get(), wbytes);
      o.dw.assign(d.w.size(), 0.0);
      for (const auto& s : slots) {
        const auto v = decode(gimage.data() + s.cudnn_offset, s.count, t);
        std::copy(v.begin(), v.end(), o.dw.begin() + s.canon_offset);
      }
    }
    std::string detail;
    const bool agree = check(o, &r->rel_diff, &detail);
    r->out = std::move(o);
    if (!agree) {
      r->status = "DISAGREES: " + detail;
      return;
    }
    Timing tm = timing;
    if (stop == "eager") tm.graph = false;
    r->us_per_step = dev_.time_us(zero_dw, call, tm) / (double(T) * L);
    r->status = "ok";
  }

  // Every gate block of every canonical tensor, with its place in cuDNN's weight space.
  std::vector<Slot> map_weights(cudnnRNNDescriptor_t rnn, const Buffer& w, size_t wbytes, const Problem& p,
                                const ProblemData& d) {
    std::vector<Slot> slots;
    TensorDesc md, bd;
    const int G = p.G(), H = p.H, Ho = p.Hout();
    const char* base = static_cast<const char*>(w.get());
    // The matrix descriptor must hold rows*cols elements: a check that the block is what we think.
    auto check_size = [&](int pseudo, int lin, size_t expected) {
      cudnnDataType_t dt;
      int nd = 0, dims[8] = {0}, strides[8] = {0};
      ck(cudnnGetTensorNdDescriptor(md.d, 8, &dt, &nd, dims, strides), "cudnnGetTensorNdDescriptor");
      size_t n = 1;
      for (int i = 0; i < nd; ++i) n *= size_t(dims[i]);
      if (n != expected)
        throw std::runtime_error("cuDNN weight matrix of pseudo-layer " + std::to_string(pseudo) + " id " +
                                 std::to_string(lin) + " has " + std::to_string(n) + " elements, expected " +
                                 std::to_string(expected));
    };
    for (int l = 0; l < p.L; ++l)
      for (int dir = 0; dir < p.D; ++dir) {
        const int pseudo = l * p.D + dir;
        for (int lin = 0; lin < 2 * G; ++lin) {
          void* maddr = nullptr;
          void* baddr = nullptr;
          ck(cudnnGetRNNWeightParams(h_, rnn, pseudo, wbytes, w.get(), lin, md.d, &maddr, bd.d, &baddr),
             "cudnnGetRNNWeightParams");
          const bool input_side = lin < G;
          const int gate = input_side ? lin : lin - G;
          // Gate blocks: input side [H, I_l]; recurrent side [H, Hout] (W_hh multiplies the projected h).
          const int cols = input_side ? p.layer_input(l) : Ho;
          const auto& wp = d.param(l, dir, input_side ? OPENRNN_WEIGHT_IH : OPENRNN_WEIGHT_HH);
          const auto& bp = d.param(l, dir, input_side ? OPENRNN_BIAS_IH : OPENRNN_BIAS_HH);
          if (!maddr || !baddr) throw std::runtime_error("cudnnGetRNNWeightParams returned no address");
          check_size(pseudo, lin, size_t(H) * cols);
          slots.push_back({size_t(static_cast<const char*>(maddr) - base), wp.offset + size_t(gate) * H * cols,
                           size_t(H) * cols});
          slots.push_back({size_t(static_cast<const char*>(baddr) - base), bp.offset + size_t(gate) * H, size_t(H)});
        }
        if (p.P > 0) {
          // id 8: the projection matrix, one block [P, H] row-major = the canonical W_hr as it is. It has no bias
          // (cuDNN documents none), so only the matrix is asked for (bDesc and bAddr null, as PyTorch does for its
          // weight_hr): the bias-address check above is for ids 0..7 only. Were cuDNN to keep a bias slot for it
          // anyway, that slot stays zero in the weight image (zero-filled before the scatter): no bias.
          const int lin = 2 * G;  // = 8
          void* maddr = nullptr;
          ck(cudnnGetRNNWeightParams(h_, rnn, pseudo, wbytes, w.get(), lin, md.d, &maddr, nullptr, nullptr),
             "cudnnGetRNNWeightParams (projection, id 8)");
          if (!maddr) throw std::runtime_error("cudnnGetRNNWeightParams returned no address for the projection");
          check_size(pseudo, lin, size_t(p.P) * H);
          slots.push_back({size_t(static_cast<const char*>(maddr) - base),
                           d.param(l, dir, OPENRNN_WEIGHT_HR).offset, size_t(p.P) * H});
        }
      }
    return slots;
  }

  // The handle and the dropout descriptor's RNG states, made at the first run() (after openrnn's first problem has
  // been timed), not at construction: with them made before openrnn's timing (cudnnCreate, the states' allocation
  // and their cudnn::initstates kernel), openrnn's LSTM float16 inference B = 64 H = 2048 read 2.0-2.8% slower than
  // in processes without cuDNN, in four runs of session 71 on three machine starts (docs/performance.md).
  // A failure leaves no handle behind (the next run() tries again) and throws, as construction used to.
  void open_handle() {
    if (h_) return;
    cudnnHandle_t h = nullptr;
    ck(cudnnCreate(&h), "cudnnCreate");
    try {
      ck(cudnnSetStream(h, static_cast<cudaStream_t>(dev_.stream())), "cudnnSetStream");
      // Dropout is off (p = 0); cuDNN still wants a descriptor with its RNG states.
      ck(cudnnDropoutGetStatesSize(h, &dropout_bytes_), "cudnnDropoutGetStatesSize");
      dropout_states_ = Buffer(dev_, dropout_bytes_);
      ck(cudnnSetDropoutDescriptor(dropout_.d, h, 0.0f, dropout_states_.get(), dropout_bytes_, 0),
         "cudnnSetDropoutDescriptor");
    } catch (...) {
      cudnnDestroy(h);
      throw;
    }
    h_ = h;
  }

  Device& dev_;
  std::vector<AlgoName> algos_;
  cudnnHandle_t h_ = nullptr;
  DropoutDesc dropout_;
  size_t dropout_bytes_ = 0;
  Buffer dropout_states_;
};

}  // namespace

std::unique_ptr<Comparator> make_cudnn_comparator(Device& gpu, const std::vector<std::string>& algos) {
  return std::make_unique<CudnnComparator>(gpu, algos);
}

}  // namespace bench
}  // namespace openrnn
