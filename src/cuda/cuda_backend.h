// The CUDA backend's internal structure: the backend object (device, streams, cuBLAS handles) and the algorithm
// interface that STANDARD (standard_*.cu) and PERSISTENT (persistent_*.cu) implement. select.cu picks one.
//
// How an algorithm plugs in
// -------------------------
// * Implement CudaAlgo (below) and define, in your own file,
//       std::unique_ptr<openrnn::cuda::CudaAlgo> openrnn::cuda::make_persistent_algo();
//   then create src/cuda/persistent_algo.cuh (any content; select.cu includes it with __has_include and only then
//   calls make_persistent_algo). Create the .cuh in the same change as the .cu that defines the factory, or the
//   link fails. Nothing else needs editing: src/CMakeLists.txt globs src/cuda/*.cu.
// * The AUTO rule is choose_algo() in select.cu (one place, with the measured reason beside it).
//
// What an algorithm gets (Context)
// --------------------------------
// * ctx.stream: the handle's stream (the user's). Every call must be stream-ordered on it: work on ctx.aux[i] must
//   be forked from it (fork()) and joined back into it (join()) before the call returns, so that the call can be
//   captured into a CUDA graph. No cudaMalloc, no cudaMemcpy (sync), no cudaStreamSynchronize inside a call.
// * ctx.blas / ctx.aux_blas[i]: cuBLAS handles already bound to ctx.stream / ctx.aux[i]. Before the first GEMM of a
//   call, call ctx.bind_blas_workspace(workspace, per_handle) which gives each handle per_handle bytes of the
//   caller's workspace (per_handle = blas_ws_per_handle(B, H) of the problem; the first per_handle * (1 +
//   kAuxStreams) bytes: reserve them with cublas_workspace_bytes(per_handle) at the start of your carve-up). Without
//   it cuBLAS would allocate inside the call (not graph-capturable).
// * Sequence lengths: upload_lengths(ctx, seq, dst, stream) writes seq.lengths into a device int32[B] (inside your
//   workspace) by kernel parameters (no host synchronisation, capturable). null/all_full -> no upload needed.
//
// Shared helpers an algorithm may reuse (cuda_common.cuh, gemm.cu, util_kernels.cu, standard_wgrad.cu)
// ------------------------------------------------------------------------------------------------------
// * gemm_rm(): a row-major GEMM on cublasGemmEx with the numeric contract's types (float32 strict or TF32 opt-in,
//   float16/bfloat16 storage with float32 accumulation, float64).
// * state_in / state_out (hx/cx -> internal state, final state -> hy/cy), layout copies with padding fill,
//   dropout forward/backward masks (Philox, same bits as the CPU), a ones-vector fill for bias sums.
// * state_in / state_out (hx -> a state row of stride ld, final state -> hy), transpose, dup_cols (cuda_ops.h).
// * run_wgrad() (standard_impl.h): backward_weights from the STANDARD reserve layout (make_std_layout in
//   standard_plan.h). An algorithm whose forward(TRAINING) + backward_data leave the reserve in that layout (dG, dGh,
//   dhtot, the state slots hs incl. the hi/lo split of 16-bit types, htil, rh, layer outputs / dropped inputs) can
//   size its reserve with make_std_layout and call run_wgrad unchanged.
// * The STANDARD pointwise cell code is reusable per unit: lstm_unit / gru_unit / rnn_unit (forward, recurrent part
//   passed as a functor) and lstm_bwd_unit / gru_bwd_unit / rnn_bwd_unit (standard_kernels.cuh).
//
// Developer switch: OPENRNN_STD_FUSED=0|1 (read once per process) forces the STANDARD per-step path to cuBLAS GEMM +
// pointwise (0) or to the fused step kernels wherever they apply (1); unset = the measured rule in
// standard_fused.cuh. OPENRNN_STD_FUSED_WIDE=0|1 (read once per process): the fused forward step never / always (where
// its h tile fits) as the 16-sequence wide kernel (fused_fwd_wide_kernel); unset = use_wide_fwd(). With 0 the forward
// step's rule is the 8-sequence kernel's (fused_rule) as before session 32, but for B = 1 with H >= 1024 (cuBLAS).
// OPENRNN_STD_MMA=0|1 (read once per process): float16/bfloat16 steps never / wherever it applies on the tensor-core
// step kernel (standard_mma.cuh); unset = its measured rule, use_mma_step(). OPENRNN_STD_MMA_BWD=0|1: the same for
// the tensor-core backward step kernel (standard_mma.cuh, mma_bwd_kernel); unset = use_mma_bwd().
// OPENRNN_STD_WGMMA=0|1 (read once per process): the same for the Hopper (wgmma + TMA) step kernel
// (standard_wgmma.cuh), which takes precedence over the mma.sync one; unset = use_wgmma_step(). OPENRNN_STD_TRACE=1:
// its block shape on stderr. OPENRNN_STD_WGMMA_TALL=0|1 (read once per process): its 128-row tile on the small
// shape's units never / wherever the small shape's grid has more CTAs than SMs (wgmma_prepare); unset = wg::tall_rule.
// OPENRNN_STD_WGMMA_LEAN=0|1 (read once per process): that tile two CTAs per SM (Tile's LEAN) never / wherever it
// runs; unset = wg::lean_rule. OPENRNN_STD_WGMMA_BIG=0|1 (read once per process): its 128-row shape (N = 128 / 96)
// never / at any grid; unset = wg::big_rule (since session 78 also where the tall tile would run two per SM, so the
// lean tile runs by default only under BIG=0).
// OPENRNN_STD_WGMMA_FOLD=0 (read once per process): its split state's hi and lo rows summed by the cell, not in the
// MMA's registers (encode_fold_map, B % 8 == 0), and so its cell on the shared-memory epilogue, never on the product's
// registers (RegCell).
// OPENRNN_STD_STEP_LT_TILE=-1|<cublasLtMatmulTile_t id> (read once per process): the 16-bit split state's cuBLAS step
// GEMM never on cuBLASLt, or on that tile wherever cuBLASLt offers it; unset = std_step_lt_tile() in
// standard_forward.cu.
// OPENRNN_STD_PDL=0 (read once per process): the 16-bit step kernels launched plainly; unset = every step after a
// layer and direction's first is a programmatic dependent of the one before it (std_step_pdl, standard_plan.h).
// OPENRNN_STD_WAVEFRONT=0|N (read once per process): STANDARD's layer wavefront off, or on with chunks of N steps
// wherever it applies (one direction, L >= 2); unset = the measured rule, std_wavefront() in standard_algo.cu.
// OPENRNN_STD_MMA_CARVEOUT / OPENRNN_STD_MMA_BWD_CARVEOUT / OPENRNN_STD_WGMMA_CARVEOUT=P (read once per process): the
// shared-memory carveout (percent, -1 none) of every launch of the mma.sync forward / backward and the Hopper step
// kernels; unset = one_wave_carveout() in standard_fused.cuh for the two forwards, none for the backward.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "backend.h"
#include "descriptor.h"

namespace openrnn {
namespace cuda {

// cuBLAS workspace handed to each handle (main + aux) from the caller's workspace, per problem: cuBLAS chooses among
// the kernels that fit the workspace it has. 4 MiB covers what it picks for small shapes. From B * H >= 65536 or
// H > 1024 a handle gets 32 MiB: there cuBLAS takes split-K kernels that need 6-8 MiB, for the weight gradients and the
// float32 H = 2048 steps (H100, session 33 run 4, float32 µs/step, 4 -> 32 MiB: training B = 64 H = 1024 LSTM 120.0 ->
// 92.3, GRU 104.2 -> 78.0; B = 64 H = 2048 LSTM 339.6 -> 298.8; B = 256 H = 2048 GRU 896 -> 841; inference unchanged
// on the split forward; docs/performance.md, session 33).
constexpr size_t kCublasWorkspaceBytes = size_t(4) << 20, kCublasWorkspaceLargeBytes = size_t(32) << 20;
// Strict float32 at small B gets 32 MiB too (session 42, runs 4-7): there, with 4, 8 or 16 MiB, cuBLAS runs the
// small-M GEMMs (the input projection x W_ih^T and the input gradient dG W_ih over M = T * B rows) and the short-K
// weight gradients on kernels that leave most SMs idle; from 32 MiB it takes split-K ones. H100, µs/step, 4 -> 32 MiB
// (OPENRNN_CUBLAS_WS_MIB), best of two processes: training B <= 4 -2 to -7%, B = 16 at H <= 512 -1 to -5%, B = 32 / 64
// at H = 256 -7 to -12%; inference B = 1 H = 1024 LSTM 1.905 -> 1.760, GRU 1.816 -> 1.645, elsewhere at B <= 64,
// H <= 512 -4% to +2.6%. Not taken where training lost: B = 16 H = 1024 (+0.7%). The size does not depend on the mode,
// so that forward(INFERENCE) and forward(TRAINING) run the same GEMMs (bitwise the same outputs; a rule for training
// alone broke that). Not for TF32 (training B = 16 H = 256 +5.5%) or 16 bits (no change).
// 16 bits from B * H >= 32768 (session 54, runs 1-3): with 32 MiB cuBLAS runs the weight gradient dG^T X of GRU
// H = 512 B = 64 (1536 x 512, K = 6400) in 19.9 µs instead of 24.1 (dev/lab/wgrad_lt.cu), and GRU's training call at
// H = 512 B = 64 / 96 is 2.6-3.1% / 1.3-1.8% faster; elsewhere in the region -1.5% to +0.8% (inference, LSTM, H = 256
// and 1024). OPENRNN_CUBLAS_WS16_MID=0 (developer switch) turns it off.
// The workspace per handle for B sequences of hidden size H of type dt (allow_tf32: the TF32 math mode);
// OPENRNN_CUBLAS_WS_MIB (developer switch, 1-256 MiB, read once) sets it for every problem.
size_t blas_ws_per_handle(long long B, long long H, openrnn_data_type dt, bool allow_tf32);
// Of that workspace, the part STANDARD's recurrent steps bind for their cuBLAS GEMMs (M = B rows; BlasWorkspaceLimit,
// cuda_ops.h): 4 MiB where strict float32 has 32 MiB for its small-B rule above at B = 2-16 with H <= 512, and at
// B = 1 H = 1024 without projection; else all of it. OPENRNN_STD_STEP_WS_MIB (developer switch, 1-256 MiB, read once;
// capped at the call's) sets it for every problem. Measured rule: docs/performance.md (session 62).
size_t blas_step_ws(long long B, long long H, openrnn_data_type dt, bool allow_tf32, bool proj);
// Extra streams: direction 1 runs on aux[0]; aux[1] is available to algorithms (layer wavefront, wgrad overlap).
constexpr int kAuxStreams = 2;
constexpr int kEvents = 8;
// fork/join use events[0 .. kAuxStreams]; events[kFreeEvent0 ..] are an algorithm's own (STANDARD's layer wavefront).
constexpr int kFreeEvent0 = 1 + kAuxStreams;
// Alignment of every region in a workspace / reserve carve-up.
constexpr size_t kAlign = 256;

inline size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
// The cuBLAS slices at the start of a workspace: one per handle.
inline size_t cublas_workspace_bytes(size_t per_handle) { return per_handle * (1 + kAuxStreams); }

// Everything an algorithm needs from the backend. Owned by the CudaBackend; an algorithm must not destroy anything.
struct Context {
  int device = 0;
  cudaDeviceProp props{};
  cudaStream_t stream = nullptr;  // the handle's (user's) stream
  cublasHandle_t blas = nullptr;  // bound to stream
  cudaStream_t aux[kAuxStreams] = {};
  cublasHandle_t aux_blas[kAuxStreams] = {};
  cudaEvent_t events[kEvents] = {};  // disable-timing events used by fork/join (reusable: record-then-wait order)

  // stream / handle of direction or lane i: 0 = main, i >= 1 = aux[i-1].
  cudaStream_t lane(int i) const { return i == 0 ? stream : aux[i - 1]; }
  cublasHandle_t lane_blas(int i) const { return i == 0 ? blas : aux_blas[i - 1]; }

  // Makes lanes 1..n-1 wait for everything issued so far on the main stream.
  void fork(int n) const;
  // Makes the main stream wait for everything issued so far on lanes 1..n-1.
  void join(int n) const;
  // Whether work that is independent but not a recurrence of its own (backward_weights' parts, PERSISTENT's split
  // input projection) may go to the aux lanes to overlap: only while `stream` is being captured into a graph.
  // Eager kernels on a second stream put the whole process into a slower state of the driver for good: once 8
  // kernels have run on streams other than the first one used, every kernel launched afterwards, in graphs too,
  // takes ~0.35 µs longer (H200; docs/performance.md, session 69), which costs a cuBLAS-step call far more than the
  // overlap saves. Launches captured into a graph do not count. Parallel recurrences (two directions, the layer
  // wavefront) keep their lanes. OPENRNN_OVERLAP_LANES=0|1 (developer switch, read once per process): never /
  // always (as before session 69).
  bool overlap_lanes() const;
  // Gives each cuBLAS handle its slice (per_handle bytes) of the first cublas_workspace_bytes(per_handle) of
  // `workspace` and binds the streams (cublasSetStream resets the workspace, so this must run after any stream change).
  void bind_blas_workspace(void* workspace, size_t per_handle) const;
};

// The algorithm interface. `rnn.cfg.algo` may be AUTO; the backend has already resolved which algorithm runs.
// supports() must not throw for a valid problem; the other calls may throw openrnn::Error.
class CudaAlgo {
 public:
  virtual ~CudaAlgo() = default;
  virtual openrnn_algo id() const = 0;
  virtual AlgoQuery supports(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                             openrnn_fwd_mode mode) const = 0;
  // Workspace must cover forward, backward_data and backward_weights for TRAINING; forward only for INFERENCE.
  virtual TempSizes sizes(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                          openrnn_fwd_mode mode) const = 0;
  virtual void forward(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                       const ForwardArgs& a) = 0;
  virtual void backward_data(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                             const BackwardDataArgs& a) = 0;
  virtual void backward_weights(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                                const BackwardWeightsArgs& a) = 0;
};

std::unique_ptr<CudaAlgo> make_standard_algo();
// Defined in persistent_*.cu (see the top of this file); select.cu calls it only when persistent_algo.cuh exists.
std::unique_ptr<CudaAlgo> make_persistent_algo();

// select.cu. The algorithms a backend holds, and the AUTO rule.
struct AlgoSet {
  std::unique_ptr<CudaAlgo> standard;
  std::unique_ptr<CudaAlgo> persistent;  // null when not built
};
AlgoSet make_algos();
// Resolves `algo` (AUTO allowed) for this problem: the query answer names the algorithm that would run.
AlgoQuery choose_algo(const AlgoSet& algos, const Context& ctx, const openrnn_rnn_desc& rnn,
                      const openrnn_seq_desc& x, openrnn_fwd_mode mode, openrnn_algo algo);

// Writes seq.lengths into the device array dst[B] with kernel launches on `stream` (parameters by value, chunks of
// 1000). Capturable, no host synchronisation.
void upload_lengths(const openrnn_seq_desc& seq, int32_t* dst, cudaStream_t stream);

}  // namespace cuda
}  // namespace openrnn
