// persist_fwd_v6_kernel instantiations behind the Kernel interface (persistent_plan.h): cluster planning (one batch
// tile of at most BC columns per cluster) and the cluster launch. Included by persistent_v6_{f32,bf16,f16}.cu only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "persistent_fwd_v6.cuh"
#include "persistent_kernels.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, typename TW, int H_, int C_, int BC, int KGR, int NW = 16>
class KernelV6Impl final : public Kernel {
  using Cfg = FwdConfigV6<CELL, TW, H_, C_, BC, KGR, NW>;
  static const void* kfn(bool train) {
    return train ? reinterpret_cast<const void*>(&persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR, true, false, NW>)
                 : reinterpret_cast<const void*>(&persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR, false, false, NW>);
  }
  // The instantiations with the input projection's producers (persistent_fwd_v6.cuh, XPK): float32 one-column LSTM /
  // GRU tiles at H = 256 (one cluster of 8 CTAs per sequence).
  static constexpr bool kXP = std::is_same<TW, float>::value && BC == 1 && H_ == 256 && (CELL == LSTM || CELL == GRU);
  static const void* kfn_xp(bool train) {
    if constexpr (kXP)
      return train ? reinterpret_cast<const void*>(&persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR, true, true, NW>)
                   : reinterpret_cast<const void*>(&persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR, false, true, NW>);
    else
      return nullptr;
  }

 public:
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return H_; }
  int bc() const override { return BC; }
  bool grid_mode() const override { return false; }
  int version() const override { return 6; }
  int cluster() const override { return C_; }
  std::string name() const override {
    char b[96];
    const int n = snprintf(b, sizeof b, "v6_H%d_cluster%d_kgr%d_bc%d", H_, C_, KGR, BC);
    if (NW != 16 && n > 0 && n < int(sizeof b)) snprintf(b + n, sizeof b - n, "_w%d", NW);
    return b;
  }

  // A tile is exactly BC columns (the kernel has no chunk loop): larger tiles "do not fit".
  Plan plan(const cudaDeviceProp& prop, int B, int D) const override {
    const void* fns[2] = {kfn(false), kfn(true)};
    const double wmb = double(Cfg::G) * H_ * H_ * sizeof(TW) / (1 << 20);
    return plan_cluster(prop, B, D, C_, BC, Cfg::NT, fns, 2,
                        [](int bt) { return bt <= BC ? Cfg::smem_bytes() : SIZE_MAX; }, H_, wmb);
  }

  // The input projection inside the launch (persistent_xprod.cuh): P producer CTAs per direction in clusters of C_,
  // the first of 32, 64, 16 that fits (pick_xprod, persistent_kernels.cuh). One sequence in one direction only, as v10's: session 39's run 10 (H100, float32 H = 256, T = 100,
  // µs/step, GEMM -> producers) measured B = 1 LSTM 1.032 -> 0.991, GRU 0.920 -> 0.921, training -1% / -2%; B = 2
  // LSTM -2%, GRU +3%; B = 4 and 8 +46% to +179% (chunks of 8 / B steps: an acquire on the critical path every 1-4
  // steps). The kernel handles any B <= kXprodRows and both directions (the reverse one walks each sequence from its
  // own last step, as the consumers do); the tests ran it so. OPENRNN_PERSIST_XPROD=0 (developer switch, read at
  // every call) keeps the GEMM before the launch.
  int xprod_plan(const cudaDeviceProp& prop, const Plan& pl, int B, int D, int Il, size_t* smem) const override {
    if constexpr (!kXP) {
      (void)prop, (void)pl, (void)B, (void)D, (void)Il, (void)smem;
      return 0;
    } else {
      if (!pl.ok || pl.waves != 1 || B != 1 || D != 1 || Il < 1 || env_switch01("OPENRNN_PERSIST_XPROD") == 0)
        return 0;
      const auto pick = pick_xprod(prop, kfn_xp(false), kfn_xp(true), {32, 64, 16}, C_, Cfg::NT, pl.smem, Cfg::G * H_,
                                   Il, C_ * pl.groups, D);
      *smem = pick.second;
      return pick.first;
    }
  }

  void launch(const LaunchArgs& a, const Plan& pl, cudaStream_t s) const override {
    FwdParams<TW> p = fwd_params<TW>(a, pl, H_);
    const bool pdl = (a.prep & kPrepPdl) != 0;
    if constexpr (kXP) {
      if (a.xprod > 0 && pl.waves == 1) {
        p.xcons = C_ * pl.groups;
        p.xchunk = a.B > 0 && a.B <= kXprodRows ? kXprodRows / a.B : 1;
        launch_persistent(a.rs_acts[0] ? persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR, true, true, NW>
                                       : persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR, false, true, NW>,
                          p, C_ * pl.groups + a.xprod, a.D, Cfg::NT, std::max(pl.smem, a.xprod_smem), C_, s, true,
                          pdl);
        return;
      }
    }
    p.xprod = 0;
    launch_persistent(a.rs_acts[0] ? persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR, true, false, NW>
                                   : persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR, false, false, NW>,
                      p, C_ * pl.groups, a.D, Cfg::NT, pl.smem, C_, s, false, pdl);
  }
};

// The v6 configuration set per storage type. KGR (k groups of 4 per lane and row held in registers; the rest in
// shared memory) per configuration from ptxas -v: as many as fit in ~64 registers of weights without spills.
// H = 256: cluster of 8 (U = 32, 2 units per warp; float32: 8 warps of 4 units, below); H = 512: cluster of 16
// (U = 32); RNN H = 1024: 16 (U = 64).
// Float32 at H = 256 runs 8 warps per CTA (NW = 8, session 40; docs/performance.md, "v6 with 8 warps per CTA"): the
// same loads of h and reduce-scatter rounds per warp from half the warps, so half the shared-memory / shuffle
// traffic per SM and step. H100, T = 100, µs/step, 16 -> 8 warps: LSTM inference B = 1 0.991 -> 0.946, B = 8 1.154
// -> 1.058, B = 16 (two columns) 1.525 -> 1.445; GRU B = 1 0.917 -> 0.854; RNN (PERSISTENT forced) B = 1 0.780 ->
// 0.704; training -3 to -5%. And at 256 threads one column per cluster takes up to B = 12 in one wave (B = 9-12:
// -12%). 16-bit v6 keeps 16 warps (v9 runs those problems).
// Two-column tiles (session 11; docs/performance.md, "PERSISTENT v6 two-column tiles"): they take the batches that one
// column per cluster cannot run at once (H100: B = 16-30 at H = 256 in clusters of 8, 16-bit B = 32-48 in clusters
// of 4, 16-bit B = 8-14 at H = 512), where they take 16-50% less time per step than v4 / v7. Since the reduce-scatter
// keeps its values in registers (persistent_fwd_v6.cuh, reduce_scatter_stage) a two-column step costs up to 0.3 µs
// more than a one-column step. float32 at H = 512 ties v4, so it is not compiled.
template <typename TW>
void add_kernels_v6(std::vector<std::unique_ptr<Kernel>>& v) {
  constexpr bool w16 = sizeof(TW) == 2;
  // Warps per CTA of the H = 256 configurations: float32 8 (session 40), 16-bit 16.
  constexpr int nw = w16 ? 16 : 8;
  // LSTM (8 rows per warp; 16 in float32 at H = 256)
  v.emplace_back(new KernelV6Impl<LSTM, TW, 256, 8, 1, 2, nw>());
  v.emplace_back(new KernelV6Impl<LSTM, TW, 512, 16, 1, w16 ? 4 : 2>());
  // GRU (6 rows per warp; 12 in float32 at H = 256)
  v.emplace_back(new KernelV6Impl<GRU, TW, 256, 8, 1, 2, nw>());
  v.emplace_back(new KernelV6Impl<GRU, TW, 512, 16, 1, w16 ? 4 : 2>());
  // RNN tanh / relu (2 rows per warp; 4 at H = 1024 and float32 H = 256)
  v.emplace_back(new KernelV6Impl<RNN_TANH, TW, 256, 8, 1, 2, nw>());
  v.emplace_back(new KernelV6Impl<RNN_TANH, TW, 512, 16, 1, 4>());
  v.emplace_back(new KernelV6Impl<RNN_TANH, TW, 1024, 16, 1, w16 ? 8 : 4>());
  v.emplace_back(new KernelV6Impl<RNN_RELU, TW, 256, 8, 1, 2, nw>());
  v.emplace_back(new KernelV6Impl<RNN_RELU, TW, 512, 16, 1, 4>());
  v.emplace_back(new KernelV6Impl<RNN_RELU, TW, 1024, 16, 1, w16 ? 8 : 4>());
  // Two-column tiles: LSTM / GRU (ptxas: no spills at KGR = 2; 16-bit LSTM H = 512 at KGR = 1, GRU at 4)
  v.emplace_back(new KernelV6Impl<LSTM, TW, 256, 8, 2, 2, nw>());
  v.emplace_back(new KernelV6Impl<GRU, TW, 256, 8, 2, 2, nw>());
  if constexpr (w16) {
    v.emplace_back(new KernelV6Impl<LSTM, TW, 512, 16, 2, 1>());
    v.emplace_back(new KernelV6Impl<GRU, TW, 512, 16, 2, 4>());
    // 16-bit H = 256, two columns in clusters of 4 (64 units per CTA: the 128 KB slice fits one SM in 16 bits, not in
    // float32): up to ~64 sequences at once; taken for B <= 48 (choose, persistent_choice.cu)
    v.emplace_back(new KernelV6Impl<LSTM, TW, 256, 4, 2, 2>());
    v.emplace_back(new KernelV6Impl<GRU, TW, 256, 4, 2, 2>());
  }
  // Four-column tiles (session 12; 32 values per warp, the most the reduce-scatter takes; ptxas: no spills at these
  // KGR), 16-bit only. H = 256 in clusters of 8: after two columns in clusters of 4 (B <= 48) up to B = 56-60 (a wave
  // of clusters of 8 holds fewer than 16 on the H100), 2.0-2.4 us/step against v7's 2.8-3.0; in float32 they lost
  // 3-11% to v4. GRU H = 512 in clusters of 16 (B = 15-28): 3.3-3.5 against v7's 3.5-3.8; LSTM's (KGR = 1: most of its
  // slice read from shared memory each step) lost 1-8% to v7. docs/performance.md, "four-column tiles".
  if constexpr (w16) {
    v.emplace_back(new KernelV6Impl<LSTM, TW, 256, 8, 4, 2>());
    v.emplace_back(new KernelV6Impl<GRU, TW, 256, 8, 4, 2>());
    v.emplace_back(new KernelV6Impl<GRU, TW, 512, 16, 4, 4>());
  }
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
