// persist_fwd_v9_kernel instantiations behind the Kernel interface (persistent_plan.h): cluster planning (one batch
// tile of NBS sequences per cluster) and the cluster launch. Included by persistent_v9_{bf16,f16}.cu only.
#pragma once

#include <cstdint>

#include "persistent_fwd_v9.cuh"
#include "persistent_kernels.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, typename TW, int H_, int C_, int NBS>
class KernelV9Impl final : public Kernel {
  using Cfg = FwdConfigV9<CELL, H_, C_, NBS>;
  static const void* kfn(bool train) {
    return train ? reinterpret_cast<const void*>(&persist_fwd_v9_kernel<CELL, TW, H_, C_, NBS, true>)
                 : reinterpret_cast<const void*>(&persist_fwd_v9_kernel<CELL, TW, H_, C_, NBS, false>);
  }

 public:
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return H_; }
  int bc() const override { return NBS; }
  bool grid_mode() const override { return false; }
  int version() const override { return 9; }
  int cluster() const override { return C_; }
  std::string name() const override {
    char b[96];
    snprintf(b, sizeof b, "v9_H%d_cluster%d_nbs%d", H_, C_, NBS);
    return b;
  }

  // A tile holds at most NBS sequences (larger tiles "do not fit"), any number up to that (granularity 1): B is
  // spread over every cluster that runs at once (the exchange bytes per step grow with the sequences of a tile).
  Plan plan(const cudaDeviceProp& prop, int B, int D) const override {
    const void* fns[2] = {kfn(false), kfn(true)};
    const double wmb = double(Cfg::G) * H_ * H_ * sizeof(TW) / (1 << 20);
    return plan_cluster(prop, B, D, C_, 1, Cfg::NT, fns, 2,
                        [](int bt) { return bt <= NBS ? Cfg::smem_bytes() : SIZE_MAX; }, H_, wmb);
  }

  void launch(const LaunchArgs& a, const Plan& pl, cudaStream_t s) const override {
    const FwdParams<TW> p = fwd_params<TW>(a, pl, H_);
    launch_persistent(a.rs_acts[0] ? persist_fwd_v9_kernel<CELL, TW, H_, C_, NBS, true>
                                   : persist_fwd_v9_kernel<CELL, TW, H_, C_, NBS, false>,
                      p, C_ * pl.groups, a.D, Cfg::NT, pl.smem, C_, s, false, (a.prep & kPrepPdl) != 0);
  }
};

// The v9 configuration set per 16-bit storage type: LSTM and GRU at H = 256 (clusters of 8) and H = 512 (clusters of
// 16), tiles of 4, 8 and 16 sequences (one, two or four n8 tiles of split state rows), and tiles of 20 (five n8 tiles;
// session 47): the H100 runs 15 clusters of 8 and 7 of 16 at once, so tiles of 16 hold B <= 240 / 112 in one wave,
// and B = 241-300 (the grid's B = 256 among them) / 113-140 ran in two (H100 run 6, µs/step: B = 256 H = 256
// inference 5.15-5.40 -> 2.78-3.34; H = 512 B = 140 10.9-11.5 -> 4.50-5.43). ptxas: at H = 256 LSTM 126 and GRU
// 138-142 registers, no spills; at H = 512 GRU 164-168 of its 168, LSTM spills 52-68 bytes (its tiles of 16: 24).
// Session 52: at H = 256, tiles of 24 and 28 for both cells and 32 for GRU (six to eight n8 tiles) run B <= 420
// (LSTM) / 480 (GRU) in one wave, where tiles of 20 ran B = 301-480 in two (the step more than doubles there: GRU
// inference B = 320 7.25 against 2.92 at B = 300). ptxas: GRU 152-164 registers of its 168 with no spills at 24 / 28,
// 168 with 4-8 bytes of spills at 32; LSTM 128 of 128 with 4-8 bytes of spills. H = 512 has no registers left for
// larger tiles.
template <typename TW>
void add_kernels_v9(std::vector<std::unique_ptr<Kernel>>& v) {
  v.emplace_back(new KernelV9Impl<LSTM, TW, 256, 8, 4>());
  v.emplace_back(new KernelV9Impl<LSTM, TW, 256, 8, 8>());
  v.emplace_back(new KernelV9Impl<LSTM, TW, 256, 8, 16>());
  v.emplace_back(new KernelV9Impl<LSTM, TW, 256, 8, 20>());
  v.emplace_back(new KernelV9Impl<LSTM, TW, 256, 8, 24>());
  v.emplace_back(new KernelV9Impl<LSTM, TW, 256, 8, 28>());
  v.emplace_back(new KernelV9Impl<LSTM, TW, 512, 16, 4>());
  v.emplace_back(new KernelV9Impl<LSTM, TW, 512, 16, 8>());
  v.emplace_back(new KernelV9Impl<LSTM, TW, 512, 16, 16>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 256, 8, 4>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 256, 8, 8>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 256, 8, 16>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 256, 8, 20>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 256, 8, 24>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 256, 8, 28>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 256, 8, 32>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 512, 16, 4>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 512, 16, 8>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 512, 16, 16>());
  v.emplace_back(new KernelV9Impl<LSTM, TW, 512, 16, 20>());
  v.emplace_back(new KernelV9Impl<GRU, TW, 512, 16, 20>());
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
