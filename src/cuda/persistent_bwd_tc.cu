// persist_bwd_tc_kernel instantiations (persistent_bwd_tc.cuh: 16-bit LSTM / GRU backward data on tensor cores, H =
// 256 in clusters of 8, H = 512 in clusters of 16) behind the BwdKernel interface: cluster planning (one batch tile
// of at most NBS sequences per cluster, B spread over every cluster that runs at once) and the cluster launch.
#include "persistent_bwd_kernels.cuh"  // bwd_params
#include "persistent_bwd_tc.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
namespace {

template <int CELL, typename TW, int H_, int C_, int NBS>
class BwdTcKernelImpl final : public BwdKernel {
  using Cfg = BwdTcConfig<CELL, H_, C_, NBS>;
  static const void* kfn() { return reinterpret_cast<const void*>(&persist_bwd_tc_kernel<CELL, TW, H_, C_, NBS>); }

 public:
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return H_; }
  int bc() const override { return NBS; }
  bool tensor_cores() const override { return true; }
  std::string name() const override {
    char b[96];
    snprintf(b, sizeof b, "bwd_tc_H%d_cluster%d_nbs%d", H_, C_, NBS);
    return b;
  }
  // A tile holds at most NBS sequences, any number up to that (granularity 1): the product's n tiles and the bytes
  // pushed per step grow with the tile, so B is spread over every cluster that runs at once.
  Plan plan(const cudaDeviceProp& prop, int B, int D) const override {
    const void* fns[1] = {kfn()};
    const double wmb = double(Cfg::G) * H_ * H_ * sizeof(TW) / (1 << 20);
    return plan_cluster(prop, B, D, C_, 1, Cfg::NT, fns, 1,
                        [](int bt) { return bt <= NBS ? Cfg::smem_bytes() : SIZE_MAX; }, H_, wmb);
  }
  void launch(const BwdLaunchArgs& a, const Plan& pl, cudaStream_t s) const override {
    const BwdParams<TW> p = bwd_params<TW>(a, pl);
    launch_persistent(persist_bwd_tc_kernel<CELL, TW, H_, C_, NBS>, p, C_ * pl.groups, a.D, Cfg::NT, pl.smem, C_, s);
  }
};

template <typename TW>
void add_tc(std::vector<std::unique_ptr<BwdKernel>>& v) {
  v.emplace_back(new BwdTcKernelImpl<LSTM, TW, 256, 8, 4>());
  v.emplace_back(new BwdTcKernelImpl<LSTM, TW, 256, 8, 8>());
  v.emplace_back(new BwdTcKernelImpl<LSTM, TW, 256, 8, 16>());
  v.emplace_back(new BwdTcKernelImpl<LSTM, TW, 512, 16, 4>());
  v.emplace_back(new BwdTcKernelImpl<LSTM, TW, 512, 16, 8>());
  v.emplace_back(new BwdTcKernelImpl<LSTM, TW, 512, 16, 16>());
  v.emplace_back(new BwdTcKernelImpl<GRU, TW, 256, 8, 4>());
  v.emplace_back(new BwdTcKernelImpl<GRU, TW, 256, 8, 8>());
  v.emplace_back(new BwdTcKernelImpl<GRU, TW, 256, 8, 16>());
  v.emplace_back(new BwdTcKernelImpl<GRU, TW, 512, 16, 4>());
  v.emplace_back(new BwdTcKernelImpl<GRU, TW, 512, 16, 8>());
  v.emplace_back(new BwdTcKernelImpl<GRU, TW, 512, 16, 16>());
}

}  // namespace

// Listed by tile size within each (cell, type, H): choose_bwd (persistent_algo.cu) takes the first that fits.
void add_bwd_kernels_tc(std::vector<std::unique_ptr<BwdKernel>>& v) {
  add_tc<__half>(v);
  add_tc<__nv_bfloat16>(v);
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
