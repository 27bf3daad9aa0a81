// PERSISTENT algorithm, host side: the compiled kernel configurations behind a type-erased interface, their capacity
// planning from the device's limits, which one runs a problem (persistent_choice.cu), and (persistent_algo.cu) the
// CudaAlgo that select.cu registers.
//
// Capacity (per direction; H100/H200: 132 SMs, 64 K 32-bit registers and 227 KB opt-in shared memory per SM, one
// CTA of 512 threads per SM): W_hh = G*H*H values must fit in the registers (~64 per thread hold weights: 128 KB per
// SM) plus shared memory (up to ~128 KB per SM beside the h buffers and partial sums) of the CTAs that hold it.
//   cluster mode, 16 CTAs (non-portable size): ~4 MB -> LSTM H=512 float32 (4 MB: 128 KB registers + 128 KB shared
//   per CTA), any 16-bit LSTM/GRU up to H=512; cluster of 8: H=256.
//   grid mode, U=8 units per CTA: H=1024 needs 128 CTAs (LSTM float32 16 MB: 64 KB registers + 64 KB shared each).
// Backward data (persistent_bwd.cuh) holds the transposed slice W_hh^T [U, G*H] per CTA: the same values per CTA as
// the forward's cluster mode, plus a [rows][G*H] float32 exchange buffer per batch tile (G times the forward's), so its
// batch tiles are smaller. H = 1024 LSTM/GRU: the grid-mode backward (persistent_bwd_grid.cuh), the forward's row
// slice per CTA (U = 8 units: 128 CTAs per direction, so one direction per launch fits an H100), B <= 16. LSTM/GRU at
// H <= 512, taken first (persistent_bwd_rs.cuh): the forward's row slice per CTA, shares of W_hh^T dG reduce-scattered
// in the cluster (recv [2][C*KS][NBS][U] float32 per CTA); 16-bit as mma fragments in registers (64 per thread at
// LSTM H = 512), tiles of 4, 8 or 16 sequences; float32 32-44 rows per thread in registers and the rest in shared
// memory (LSTM H = 512: up to 192 KB per CTA), tiles of 1, 2, 4 or 8.
// Small batches (persistent_fwd_v6.cuh) hold the same W_hh slice per CTA as cluster mode, one sequence per cluster:
// B <= the co-resident clusters per direction (H100: fewer than 16 of 8 CTAs, 7 of 16); LSTM / GRU also two
// sequences per cluster (H = 256; H = 512 16-bit; 16-bit H = 256 in clusters of 4, up to B = 48).
// 16-bit LSTM/GRU at larger batches (persistent_fwd_v7.cuh, tensor cores): each block holds G*UB rows of W_hh in
// shared memory (UB = 8 or 16 units; LSTM H = 1024 UB = 8: 68 KB), a group of H/UB blocks per MB rows of the split
// state, every block of both directions co-resident (cooperative launch; 1-2 blocks per SM).
// 16-bit LSTM/GRU at H = 1024 on tensor cores (persistent_fwd_v10.cuh): a group of 64 CTAs of 16 units per batch tile
// of up to 16 sequences, W_hh in registers (LSTM 128 KB per CTA: 64 per thread), h exchanged through L2 and multicast
// into each CTA's shared memory in clusters of 8 / 4 / 2 (H100: one direction B <= 32, two B <= 16). float32 LSTM/GRU
// at H = 1024 and 512 on the same kernel with an FFMA product: CTAs of 8 units (H = 1024: 128 per group, LSTM 128 KB
// of W_hh per CTA, 64 registers per thread, one direction, B <= 16; H = 512: 64 per group, two groups, B <= 64 with
// one direction, 32 with two), clusters of 2.
// 16-bit LSTM/GRU at H <= 512 on tensor cores in clusters (persistent_fwd_v9.cuh): v6's cluster and slice (32 units
// per CTA, clusters of 8 / 16), W_hh held in registers as mma fragments (64 per thread at H = 512), tiles of 4, 8 or
// 16 sequences per cluster (the split state of the tile in shared memory, double-buffered).
// GRU reset-before: the cluster configurations only (H <= 512; its second exchange per step, r * h before W_hn, would
// be a second grid round trip at H = 1024), each CTA holding one more exchange buffer (forward [rows][H], backward
// [rows][G*H] float32), so its batch tiles are smaller than GRU's.
// LSTM projection (P > 0): the forward runs W_eff = W_hh W_hr ([G*H, H] float32) on the float32 LSTM configurations
// in every storage type, so its capacity is that of the float32 LSTM at the same H (persistent_algo.cu).
// Compiled hidden sizes: 256, 512, 1024 (one configuration set per H); any other H <= 1024 runs on the next compiled
// size with the units past H as exact-zero padding (padded_hidden(); persistent_fwd.cuh says why they stay 0). A
// plan that does not fit (shared memory per CTA, co-resident CTAs) is refused with the reason in words.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "cuda_backend.h"

namespace openrnn {
namespace cuda {
namespace persist {

// Device buffers of one layer's launch (per-direction arrays indexed [dir]). TW = the storage type.
struct LaunchArgs {
  int T, B, Hr, D;         // Hr: the problem's hidden size (<= the kernel's compiled H(); the rest is padding)
  const float* xproj[2];  // [T, B, G*H] float32 (W_ih x, no bias), H = the compiled size; padded columns unread
  const void* whh[2];     // [G*Hr, Hr] TW, canonical layout
  const float* bx[2];     // [G*Hr]: bias on the input side (b_ih, + b_hh except GRU's n gate)
  const float* bh[2];     // [G*Hr]: bias on the recurrent side (GRU n gate's b_hh; 0 elsewhere)
  const float* h0[2];     // [B, Hr] float32
  const float* c0[2];     // [B, Hr] float32 (LSTM)
  void* y;                // [T, B, D*Hr] TW, direction d in columns [d*Hr, (d+1)*Hr)
  float* hn[2];
  float* cn[2];
  void* hy[2] = {nullptr, nullptr};  // [B, Hr] TW: the caller's final states, written instead of hn / cn where set
  void* cy[2] = {nullptr, nullptr};  // (16-bit storage without the projection; FwdParams::hy)
  const int* lengths;     // [B] device or null (all T)
  float* hg[2];           // grid mode: [2, B, H] float32 (compiled H)
  unsigned* flags[2];     // grid mode: [kMaxGroups] counters (zeroed by launch() or the prep kernel: prep below)
  float clip;
  // Training: STANDARD's reserve of this layer (persistent_common.cuh, FwdParams); null for inference.
  float* rs_acts[2] = {nullptr, nullptr};
  void* rs_hs[2] = {nullptr, nullptr};
  float* rs_cs[2] = {nullptr, nullptr};
  float* rs_hn[2] = {nullptr, nullptr};
  void* rs_rh[2] = {nullptr, nullptr};  // GRU reset-before: r * h_{t-1}
  // What the caller's prep kernel did on the stream just before the launch (persistent_algo.cu, layer_prep_kernel),
  // bits: kPrepFlags: flags[d] ([kMaxGroups]) zeroed; kPrepHg: hg[d]'s first 2 * B * Hc 8-byte words zeroed (v10's
  // tagged words of tiles of one): launch() skips its own memsets. kPrepPdl: the prep kernel is the previous kernel
  // on the stream and lets its dependents start early, so the forward kernel is launched as a programmatic dependent
  // (it loads W_hh, then waits for the prep kernel: pdl_wait, persistent_common.cuh). 0: launch() does it all.
  unsigned prep = 0;
  // The input projection inside the launch (Kernel::xprod_plan > 0): xproj[d] is written by the kernel's producer
  // CTAs from xin and wih[d] instead of by a GEMM before the launch.
  int xprod = 0;            // producer CTAs per direction (0: xproj is complete before the launch)
  size_t xprod_smem = 0;    // the launch's shared memory per CTA with the producers (>= the plan's)
  int Il = 0;               // the layer's input width
  const void* xin = nullptr;                 // [T, B, Il] TW, sequence-major
  const void* wih[2] = {nullptr, nullptr};   // [G*Hr, Il] TW
};
constexpr unsigned kPrepFlags = 1, kPrepHg = 2, kPrepPdl = 4;
constexpr int kMaxGroups = 256;
// flags[d][kXprodCounter]: the producers' chunk count (FwdParams::xprod); never a group's arrival counter (the plans
// that take producers run at most a few groups).
constexpr int kXprodCounter = kMaxGroups - 1;
// v10's wgmma tiles (16-bit LSTM at H = 1024) keep each tile's state in the exchange buffers as whole 8-row swizzle
// atoms per pass with a slot of the plan's tile per tile (persistent_fwd_v10.cuh): make_layout gives hg room for
// B + kV10WgExtraB sequences (2 x 8 bytes x Hc each), and the plan refuses a tiling whose slots would not fit.
constexpr int kV10WgExtraB = 32;
// Rows of one tile's exchange slot for the wgmma tiles: 8-row atoms of each pass of at most pass_rows rows.
inline int v10_wg_slot_rows(int rows, int pass_rows) {
  int n = 0;
  for (int q = 0; q * pass_rows < rows; ++q) {
    const int r = rows - q * pass_rows;
    n += ((r < pass_rows ? r : pass_rows) + 7) & ~7;
  }
  return n;
}
// The compiled hidden size a problem of hidden size H runs on (0: none, H > 1024).
inline int padded_hidden(int H) { return H <= 256 ? 256 : H <= 512 ? 512 : H <= 1024 ? 1024 : 0; }

struct Plan {
  bool ok = false;
  std::string why;  // when !ok
  int C = 0, BT = 0, groups = 0;
  int waves = 1;  // cluster mode: rounds of clusters needed to run every batch tile (1: all at once)
  size_t smem = 0;
  int cl = 0;  // v10: the multicast cluster size (CTAs), chosen from the device's cluster occupancy
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual openrnn_cell cell() const = 0;
  virtual openrnn_data_type dtype() const = 0;
  virtual int H() const = 0;
  virtual int bc() const = 0;
  virtual bool grid_mode() const = 0;
  // 4: persist_fwd_v4_kernel (any batch, cluster or grid mode); 6: persist_fwd_v6_kernel (cluster mode, one tile
  // of at most bc() columns per cluster: the small-batch kernel); 7: persist_fwd_v7_kernel (16-bit tensor cores,
  // grid mode, blocks of bc() sequences x ub() units); 9: persist_fwd_v9_kernel (16-bit tensor cores, cluster mode,
  // one tile of bc() sequences per cluster); 10: persist_fwd_v10_kernel (16-bit tensor cores at H = 1024, a group
  // of H / ub() CTAs per tile of bc() sequences, exchange through L2, state multicast in small clusters).
  virtual int version() const { return 4; }
  virtual int ub() const { return 0; }
  // v10's product on warpgroup MMAs (sessions 56-57; persistent_fwd_v10.cuh, FwdConfigV10::WG)
  virtual bool wgmma() const { return false; }
  // v6 / v9: the cluster size its units are spread over (H/C units per CTA); 0 elsewhere.
  virtual int cluster() const { return 0; }
  virtual std::string name() const = 0;
  virtual Plan plan(const cudaDeviceProp& prop, int B, int D) const = 0;
  virtual void launch(const LaunchArgs& a, const Plan& pl, cudaStream_t s) const = 0;
  // Producer CTAs per direction that would compute the input projection inside this plan's launch (LaunchArgs::xprod)
  // for a layer of input width Il, and the launch's shared memory per CTA with them; 0 where the kernel has none or
  // they do not fit beside the plan's CTAs.
  virtual int xprod_plan(const cudaDeviceProp& prop, const Plan& pl, int B, int D, int Il, size_t* smem) const {
    (void)prop, (void)pl, (void)B, (void)D, (void)Il, (void)smem;
    return 0;
  }
};

// Backward data (persistent_bwd.cuh): the recurrence of one layer, both directions, into STANDARD's reserve.
// TW = the storage type; everything per direction [dir]; Hr = the problem's hidden size.
struct BwdLaunchArgs {
  int T, B, Hr, D;
  const void* whh[2];     // [G*Hr, Hr] TW
  const float* acts[2];   // reserve (standard_plan.h)
  const void* hs[2];
  const float* cs[2];
  const float* hn[2];
  const void* dy;         // TW, row dy_rt*t + dy_rb*b of width dy_width, direction d at column d*Hr
  long long dy_rt, dy_rb;
  int dy_width;
  void* dG[2];            // reserve, TW
  void* dGh[2];
  const void* dhy[2];     // [B, Hr] TW or null
  const void* dcy[2];
  void* dhx[2];
  void* dcx[2];
  const int* lengths;
  float clip;
  // Grid-mode kernels only (part_bytes() > 0): per direction, part_bytes(B) of workspace and the groups' counters
  // (kBwdCounterBytes, below).
  float* part[2] = {nullptr, nullptr};
  unsigned* counter[2] = {nullptr, nullptr};
};

class BwdKernel {
 public:
  virtual ~BwdKernel() = default;
  virtual openrnn_cell cell() const = 0;
  virtual openrnn_data_type dtype() const = 0;
  virtual int H() const = 0;
  virtual int bc() const = 0;
  virtual std::string name() const = 0;
  virtual Plan plan(const cudaDeviceProp& prop, int B, int D) const = 0;
  virtual void launch(const BwdLaunchArgs& a, const Plan& pl, cudaStream_t s) const = 0;
  // Taken first by choose_bwd (persistent_choice.cu) where its plan fits: the reduce-scatter cluster kernel
  // (persistent_bwd_rs.cuh) and the grid kernel's tensor-core share (persistent_bwd_grid.cuh, MMA); bc() is then the
  // largest batch tile.
  virtual bool preferred() const { return false; }
  // Units per CTA of a grid-mode kernel (persistent_bwd_grid.cuh), 0 for the cluster kernels.
  virtual int units() const { return 0; }
  // Global exchange buffer per direction (grid mode, persistent_bwd_grid.cuh); 0: cluster kernel, none needed.
  virtual size_t part_bytes(int B) const {
    (void)B;
    return 0;
  }
};

// Grid-mode backward kernels (part_bytes() > 0) exchange through the workspace past STANDARD's backward_data region
// (std_ws bytes, which backward_data also uses): per direction the shares buffer and an arrival counter.
// The grid kernel's arrival counters per direction: one per group of a launch (at most kBwdMaxGroups), each on its own
// 128-byte line.
constexpr int kBwdMaxGroups = 2, kBwdCounterStride = 32;
constexpr size_t kBwdCounterBytes = size_t(kBwdMaxGroups) * kBwdCounterStride * sizeof(unsigned);
inline size_t bwd_grid_dir_bytes(const BwdKernel& k, int B) {
  return align_up(k.part_bytes(B)) + align_up(kBwdCounterBytes);
}
// The end of that region (std_ws, aligned, for a cluster kernel, which needs none).
inline size_t bwd_grid_end(const BwdKernel* k, size_t std_ws, int B, int D) {
  return align_up(std_ws) + (k && k->part_bytes(B) > 0 ? size_t(D) * bwd_grid_dir_bytes(*k, B) : 0);
}
// Points a's part / counter of direction dir into that region of the workspace ws (grid-mode kernels only).
inline void bwd_grid_bind(const BwdKernel& k, char* ws, size_t std_ws, int B, int dir, BwdLaunchArgs* a) {
  if (k.part_bytes(B) == 0) return;
  char* g = ws + align_up(std_ws) + size_t(dir) * bwd_grid_dir_bytes(k, B);
  a->part[dir] = reinterpret_cast<float*>(g);
  a->counter[dir] = reinterpret_cast<unsigned*>(g + align_up(k.part_bytes(B)));
}

void add_kernels_f32(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_bf16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_f16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v6_f32(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v6_bf16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v6_f16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v7_bf16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v7_f16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v9_bf16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v9_f16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v10_bf16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v10_f16(std::vector<std::unique_ptr<Kernel>>& k);
void add_kernels_v10_f32(std::vector<std::unique_ptr<Kernel>>& k);
void add_bwd_kernels_f32(std::vector<std::unique_ptr<BwdKernel>>& k);
void add_bwd_kernels_bf16(std::vector<std::unique_ptr<BwdKernel>>& k);
void add_bwd_kernels_f16(std::vector<std::unique_ptr<BwdKernel>>& k);
void add_bwd_kernels_rs(std::vector<std::unique_ptr<BwdKernel>>& k);

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
