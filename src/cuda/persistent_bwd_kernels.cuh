// The backward kernel instantiations behind the BwdKernel interface (persistent_plan.h): persist_bwd_kernel (the
// cluster plan shared with the forward kernels, cluster launch) and persist_bwd_grid_kernel (cooperative launch).
// Included by persistent_bwd_{f32,bf16,f16}.cu.
#pragma once

#include <type_traits>

#include "persistent_bwd.cuh"
#include "persistent_bwd_grid.cuh"
#include "persistent_kernels.cuh"
#include "standard_plan.h"  // env_switch01, env_int

namespace openrnn {
namespace cuda {
namespace persist {

// The kernel parameter block of one layer's launch (cluster and grid kernels take the same one).
template <typename TW>
BwdParams<TW> bwd_params(const BwdLaunchArgs& a, const Plan& pl) {
  BwdParams<TW> p{};
  p.T = a.T;
  p.B = a.B;
  p.Hr = a.Hr;
  p.BT = pl.BT;
  p.D = a.D;
  p.dy = static_cast<const TW*>(a.dy);
  p.dy_rt = a.dy_rt;
  p.dy_rb = a.dy_rb;
  p.dy_width = a.dy_width;
  p.lengths = a.lengths;
  p.clip = a.clip;
  for (int i = 0; i < 2; ++i) {
    p.whh[i] = static_cast<const TW*>(a.whh[i]);
    p.acts[i] = a.acts[i];
    p.hs[i] = static_cast<const TW*>(a.hs[i]);
    p.cs[i] = a.cs[i];
    p.hn[i] = a.hn[i];
    p.dG[i] = static_cast<TW*>(a.dG[i]);
    p.dGh[i] = static_cast<TW*>(a.dGh[i]);
    p.dhy[i] = static_cast<const TW*>(a.dhy[i]);
    p.dcy[i] = static_cast<const TW*>(a.dcy[i]);
    p.dhx[i] = static_cast<TW*>(a.dhx[i]);
    p.dcx[i] = static_cast<TW*>(a.dcx[i]);
    p.part[i] = a.part[i];
    p.counter[i] = a.counter[i];
  }
  return p;
}

template <int CELL, typename TW, int H_, int C, int KREG, int BC>
class BwdKernelImpl final : public BwdKernel {
  using Cfg = BwdConfig<CELL, TW, H_, C, KREG, BC>;
  static const void* kfn() { return reinterpret_cast<const void*>(&persist_bwd_kernel<CELL, TW, H_, C, KREG, BC>); }

 public:
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return H_; }
  int bc() const override { return BC; }
  std::string name() const override {
    char b[96];
    snprintf(b, sizeof b, "bwd_H%d_cluster%d_kreg%d_bc%d", H_, C, KREG, BC);
    return b;
  }
  Plan plan(const cudaDeviceProp& prop, int B, int D) const override {
    const void* fns[1] = {kfn()};
    const double wmb = double(Cfg::G) * H_ * H_ * sizeof(TW) / (1 << 20);
    return plan_cluster(prop, B, D, C, BC, Cfg::NT, fns, 1, [](int bt) { return Cfg::smem_bytes(bt); }, H_, wmb);
  }
  void launch(const BwdLaunchArgs& a, const Plan& pl, cudaStream_t s) const override {
    const BwdParams<TW> p = bwd_params<TW>(a, pl);
    launch_persistent(persist_bwd_kernel<CELL, TW, H_, C, KREG, BC>, p, C * pl.groups, a.D, Cfg::NT, pl.smem, C, s);
  }
};

// The most launches a float32 batch of the grid backward is split into (B <= 64 at BMAX = 16).
constexpr int kBwdGridMaxWaves = 4;
// 16-bit (MMA share) with one direction: two groups of C CTAs side by side in one launch, each on its own batch tile,
// from this many sequences up to 2 x BMAX = 32 (session 25, H100 run 9: B = 4 / 8 / 16 / 32 -4 / -10 / -12 / -25% of
// LSTM float16 training at H = 1024; B = 64 as two such launches was 3-5% slower than STANDARD's loop).
constexpr int kBwdGridTwoGroupsMinB = 4;

// Grid-mode backward (persistent_bwd_grid.cuh): C = H/U CTAs per direction in one cooperative launch (refused, not
// deadlocked, when they cannot all be co-resident), one batch tile of B <= BMAX sequences (float32: up to
// kBwdGridMaxWaves launches of BMAX).
template <int CELL, typename TW, int H_, int U, int KREG, bool MMA = false>
class BwdGridKernelImpl final : public BwdKernel {
  using Cfg = BwdGridConfig<CELL, TW, H_, U, KREG, MMA>;
  static const void* kfn() {
    return reinterpret_cast<const void*>(&persist_bwd_grid_kernel<CELL, TW, H_, U, KREG, MMA>);
  }

 public:
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return H_; }
  int bc() const override { return MMA ? Cfg::BMAX : 4; }
  bool preferred() const override { return MMA; }
  int units() const override { return U; }
  std::string name() const override {
    char b[96];
    if (MMA)
      snprintf(b, sizeof b, "bwd_H%d_grid%d_mma", H_, Cfg::C);
    else
      snprintf(b, sizeof b, "bwd_H%d_grid%d_kreg%d", H_, Cfg::C, KREG);
    return b;
  }
  size_t part_bytes(int B) const override { return Cfg::part_bytes(B); }
  Plan plan(const cudaDeviceProp& prop, int B, int D) const override {
    Plan pl;
    pl.C = Cfg::C;
    char msg[320];
    const size_t smem = Cfg::smem_bytes();
    int per_sm = 0;
    if (smem > prop.sharedMemPerBlockOptin ||
        cudaFuncSetAttribute(kfn(), cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kfn(), Cfg::NT, smem) != cudaSuccess) {
      cudaGetLastError();
      pl.why = "occupancy query failed";
      return pl;
    }
    const int capacity = per_sm * prop.multiProcessorCount;
    // float32 (FFMA share): up to kBwdGridMaxWaves launches of BMAX sequences, one after the other (launch() below;
    // session 24, as the forward's v10 batch chunks). 16-bit (MMA share), one direction: from
    // kBwdGridTwoGroupsMinB sequences two groups side by side where 2 C CTAs are co-resident, one launch (B <= 32),
    // tiles as even as possible (B = 16: two tiles of 8; session 25); else one launch of at most BMAX.
    // OPENRNN_PERSIST_BWD_GRID_GROUPS=1|2 (developer switch, read at planning; 2: from B = 2) for the A/B.
    static const bool chunk_off = env_switch01("OPENRNN_PERSIST_V10_CHUNK") == 0;  // developer switch (A/B)
    static const int groups_env = env_int("OPENRNN_PERSIST_BWD_GRID_GROUPS");
    const bool two = MMA && D == 1 && 2 * Cfg::C <= capacity && groups_env != 1 &&
                     B >= (groups_env == 2 ? 2 : kBwdGridTwoGroupsMinB);
    const int groups = two ? 2 : 1, per_launch = groups * Cfg::BMAX;
    const int waves = (B + per_launch - 1) / per_launch;
    const int max_waves = !two && std::is_same<TW, float>::value && !MMA && !chunk_off ? kBwdGridMaxWaves : 1;
    if (waves > max_waves) {
      snprintf(msg, sizeof msg, "H=%d backward: the grid kernel takes at most %d sequences here, B=%d", H_,
               per_launch * max_waves, B);
      pl.why = msg;
      return pl;
    }
    if (Cfg::C * D > capacity) {
      const double wmb = double(Cfg::G) * H_ * H_ * sizeof(TW) / (1 << 20);
      snprintf(msg, sizeof msg,
               "H=%d backward: W_hh (%.1f MB per direction) is spread over %d CTAs per direction, %d for D=%d, but "
               "this GPU holds %d co-resident CTAs of this kernel",
               H_, wmb, Cfg::C, Cfg::C * D, D, capacity);
      pl.why = msg;
      return pl;
    }
    // One group: BMAX per launch but the last (float32 chunks, as session 24); two: even tiles over the launches.
    pl.BT = two ? (B + groups * waves - 1) / (groups * waves) : (B < Cfg::BMAX ? B : Cfg::BMAX);
    pl.groups = groups;
    pl.waves = waves;
    pl.smem = smem;
    pl.ok = true;
    return pl;
  }
  // One launch per pl.groups tiles of pl.BT sequences (pl.waves launches), each from sequence b_lo, on the same
  // shares buffers and counters (zeroed before each: the launches are stream-ordered).
  void launch(const BwdLaunchArgs& a, const Plan& pl, cudaStream_t s) const override {
    BwdParams<TW> p = bwd_params<TW>(a, pl);
    const int tiles = (a.B + pl.BT - 1) / pl.BT;
    for (int w = 0; w < pl.waves; ++w) {
      p.b_lo = w * pl.groups * pl.BT;
      const int groups = min(pl.groups, tiles - w * pl.groups);
      for (int i = 0; i < a.D; ++i) OPENRNN_CUDA_CHECK(cudaMemsetAsync(a.counter[i], 0, kBwdCounterBytes, s));
      launch_persistent(persist_bwd_grid_kernel<CELL, TW, H_, U, KREG, MMA>, p, Cfg::C * groups, a.D, Cfg::NT,
                        pl.smem, 0, s);
    }
  }
};

// The configuration set per storage type: the forward's cluster shapes transposed (H=256: clusters of 8, H=512 and
// RNN H=1024: clusters of 16; U = 32 units per CTA, 64 for RNN H=1024), the same number of W_hh values per thread.
// H=1024 LSTM/GRU (grid mode in the forward): the grid-mode backward, U = 8 units per CTA (128 CTAs), every weight
// pair of a thread in registers (LSTM 32 pairs, GRU 24) but 12 of float32 LSTM's (in shared memory: no spills; 4
// until session 50, whose one-sequence chunk made 28 in registers spill). Both directions (2 x 128 CTAs) do not fit
// one H100: STANDARD's loop runs there in float32 (as the float32 forward is refused); 16-bit storage has the
// tensor-core share with U = 16 (2 x 64 CTAs) as well.
template <typename TW>
void add_bwd_kernels(std::vector<std::unique_ptr<BwdKernel>>& v) {
  // KREG per configuration from ptxas -v (sm_90a, 128 registers at 512 threads): the largest of those tried that
  // does not spill (or spills <= 8 B). The cell phase and the one-chunk-ahead loads take ~60-100 registers, so
  // float32 keeps only 16-64 of a thread's weights in registers and the rest in shared memory.
  constexpr bool w16 = sizeof(TW) == 2;
  constexpr int L256a = w16 ? 64 : 16, L256b = 64, L512a = w16 ? 128 : 32, L512b = w16 ? 128 : 64;
  constexpr int G256a = w16 ? 48 : 24, G256b = w16 ? 48 : 16, G512 = w16 ? 96 : 16, R1024 = 32;
  constexpr int BC512 = w16 ? 4 : 2;
  v.emplace_back(new BwdKernelImpl<LSTM, TW, 256, 8, L256a, 1>());
  v.emplace_back(new BwdKernelImpl<LSTM, TW, 256, 8, L256b, 4>());
  v.emplace_back(new BwdKernelImpl<LSTM, TW, 512, 16, L512a, 1>());
  v.emplace_back(new BwdKernelImpl<LSTM, TW, 512, 16, L512b, BC512>());
  v.emplace_back(new BwdKernelImpl<GRU, TW, 256, 8, G256a, 1>());
  v.emplace_back(new BwdKernelImpl<GRU, TW, 256, 8, G256b, 4>());
  v.emplace_back(new BwdKernelImpl<GRU, TW, 512, 16, G512, 1>());
  v.emplace_back(new BwdKernelImpl<GRU, TW, 512, 16, G512, BC512>());
  // GRU reset-before: its second product and cell half cost registers (ptxas at GRU's KREG, 16-bit: H = 512 spilled
  // 200-422 B, H = 256 BC = 4 28 B; at 64 / 32: 4-80 B), so 16-bit keeps fewer weights in registers.
  constexpr int B256b = 16, B512a = w16 ? 56 : 16, B512b = w16 ? 32 : 16;
  v.emplace_back(new BwdKernelImpl<GRU_RB, TW, 256, 8, G256a, 1>());
  v.emplace_back(new BwdKernelImpl<GRU_RB, TW, 256, 8, B256b, 4>());
  v.emplace_back(new BwdKernelImpl<GRU_RB, TW, 512, 16, B512a, 1>());
  v.emplace_back(new BwdKernelImpl<GRU_RB, TW, 512, 16, B512b, BC512>());
  v.emplace_back(new BwdKernelImpl<RNN_TANH, TW, 256, 8, 16, 4>());
  v.emplace_back(new BwdKernelImpl<RNN_TANH, TW, 512, 16, 32, 4>());
  v.emplace_back(new BwdKernelImpl<RNN_TANH, TW, 1024, 16, R1024, 4>());
  v.emplace_back(new BwdKernelImpl<RNN_RELU, TW, 256, 8, 16, 4>());
  v.emplace_back(new BwdKernelImpl<RNN_RELU, TW, 512, 16, 32, 4>());
  v.emplace_back(new BwdKernelImpl<RNN_RELU, TW, 1024, 16, R1024, 4>());
  v.emplace_back(new BwdGridKernelImpl<LSTM, TW, 1024, 8, w16 ? 32 : 20>());
  v.emplace_back(new BwdGridKernelImpl<GRU, TW, 1024, 8, 24>());
  // 16-bit: the same grid kernel with the share on tensor cores (persistent_bwd_grid.cuh, MMA), taken first by
  // choose_bwd (persistent_choice.cu) unless OPENRNN_PERSIST_BWD_RS=0.
  if constexpr (w16) {
    // 16 units per CTA (64 CTAs) first: half the shares through L2 per step, twice the A fragments per thread, and
    // both directions fit (2 x 64 CTAs); choose_bwd keeps U = 8 for one direction below B = 4 (GRU: 2; session 21).
    v.emplace_back(new BwdGridKernelImpl<LSTM, TW, 1024, 16, 64, true>());
    v.emplace_back(new BwdGridKernelImpl<GRU, TW, 1024, 16, 48, true>());
    v.emplace_back(new BwdGridKernelImpl<LSTM, TW, 1024, 8, 32, true>());
    v.emplace_back(new BwdGridKernelImpl<GRU, TW, 1024, 8, 24, true>());
  }
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
