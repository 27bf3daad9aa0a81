// persist_fwd_v7_kernel instantiations behind the Kernel interface (persistent_plan.h): co-residency planning and
// the cooperative launch. Included by persistent_v7_{bf16,f16}.cu only.
#pragma once

#include <climits>
#include <cstdio>

#include "persistent_fwd_v7.cuh"
#include "persistent_kernels.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

// One (MB, UB) block shape of v7 for the problems whose padded hidden size is Hc (the smem plan assumes Hr = Hc,
// the largest real size that maps to Hc; a smaller Hr needs less). bc() = MB / 2: sequences per block.
template <int CELL, typename TW, int MB, int UB>
class KernelV7Impl final : public Kernel {
  using Cfg = FwdConfigV7<CELL, MB, UB>;
  static const void* kfn(bool train) {
    return train ? reinterpret_cast<const void*>(&persist_fwd_v7_kernel<CELL, TW, MB, UB, true>)
                 : reinterpret_cast<const void*>(&persist_fwd_v7_kernel<CELL, TW, MB, UB, false>);
  }

 public:
  explicit KernelV7Impl(int Hc) : Hc_(Hc) {}
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return Hc_; }
  int bc() const override { return MB / 2; }
  bool grid_mode() const override { return true; }
  int version() const override { return 7; }
  int ub() const override { return UB; }
  std::string name() const override {
    char b[96];
    snprintf(b, sizeof b, "v7_H%d_mb%d_ub%d", Hc_, MB, UB);
    return b;
  }

  // Groups of C = Hc / UB blocks, one per MB rows of the split state [2B, H]; every block of both directions must
  // be co-resident (cooperative launch).
  Plan plan(const cudaDeviceProp& prop, int B, int D) const override {
    Plan pl;
    char msg[320];
    const size_t smem = Cfg::smem_bytes(Hc_);
    if (smem > prop.sharedMemPerBlockOptin) {
      snprintf(msg, sizeof msg, "v7 H=%d: a block needs %zu B of shared memory, this GPU allows %zu", Hc_, smem,
               size_t(prop.sharedMemPerBlockOptin));
      pl.why = msg;
      return pl;
    }
    int per_sm = INT_MAX;
    for (bool train : {false, true}) {
      int n = 0;
      if (cudaFuncSetAttribute(kfn(train), cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) != cudaSuccess ||
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kfn(train), Cfg::NT, smem) != cudaSuccess) {
        cudaGetLastError();
        pl.why = "occupancy query failed";
        return pl;
      }
      per_sm = n < per_sm ? n : per_sm;
    }
    pl.C = (Hc_ + UB - 1) / UB;
    pl.groups = (2 * B + MB - 1) / MB;
    pl.BT = MB / 2;
    pl.smem = smem;
    const long long need = static_cast<long long>(pl.C) * pl.groups * D;
    const long long capacity = static_cast<long long>(per_sm) * prop.multiProcessorCount;
    if (pl.groups > kMaxGroups || need > capacity) {
      snprintf(msg, sizeof msg, "v7 H=%d B=%d D=%d: %lld blocks of %d x %d, this GPU holds %lld co-resident", Hc_, B,
               D, need, MB, UB, capacity);
      pl.why = msg;
      return pl;
    }
    pl.ok = true;
    return pl;
  }

  void launch(const LaunchArgs& a, const Plan& pl, cudaStream_t s) const override {
    FwdParams<TW> p = fwd_params<TW>(a, pl, Hc_);
    p.C = (a.Hr + UB - 1) / UB;
    if (!(a.prep & kPrepFlags))
      for (int i = 0; i < a.D; ++i)
        OPENRNN_CUDA_CHECK(cudaMemsetAsync(a.flags[i], 0, sizeof(unsigned) * kMaxGroups, s));
    launch_persistent(a.rs_acts[0] ? persist_fwd_v7_kernel<CELL, TW, MB, UB, true>
                                   : persist_fwd_v7_kernel<CELL, TW, MB, UB, false>,
                      p, p.C * pl.groups, a.D, Cfg::NT, Cfg::smem_bytes(a.Hr), 0, s, false, (a.prep & kPrepPdl) != 0);
  }

 private:
  int Hc_;
};

// The v7 block shapes per storage type, for each compiled hidden size. Small MB spreads the rows over more blocks
// (the state traffic through L2 per step, 2B * H * H * 2 / UB bytes, does not depend on MB); UB = 16 halves that
// traffic at twice the product per block (large B * H).
template <typename TW>
void add_kernels_v7(std::vector<std::unique_ptr<Kernel>>& v) {
  for (int Hc : {256, 512, 1024}) {
    v.emplace_back(new KernelV7Impl<LSTM, TW, 32, 8>(Hc));
    v.emplace_back(new KernelV7Impl<LSTM, TW, 64, 8>(Hc));
    v.emplace_back(new KernelV7Impl<LSTM, TW, 128, 8>(Hc));
    v.emplace_back(new KernelV7Impl<LSTM, TW, 128, 16>(Hc));
    v.emplace_back(new KernelV7Impl<GRU, TW, 32, 8>(Hc));
    v.emplace_back(new KernelV7Impl<GRU, TW, 64, 8>(Hc));
    v.emplace_back(new KernelV7Impl<GRU, TW, 128, 8>(Hc));
    v.emplace_back(new KernelV7Impl<GRU, TW, 128, 16>(Hc));
  }
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
