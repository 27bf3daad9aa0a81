// persist_bwd_rs_kernel instantiations (persistent_bwd_rs.cuh: LSTM / GRU backward data, the shares of W_hh^T dG
// reduce-scattered in the cluster; 16-bit on tensor cores, float32 with FFMA; H = 256 in clusters of 8, H = 512 in
// clusters of 16) behind the BwdKernel interface: cluster planning (one batch tile of at most NBS sequences per
// cluster, B spread over every cluster that runs at once) and the cluster launch.
#include "persistent_bwd_kernels.cuh"  // bwd_params
#include "persistent_bwd_rs.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
namespace {

template <int CELL, typename TW, int H_, int C_, int NBS, int KREG = 0>
class BwdRsKernelImpl final : public BwdKernel {
  using Cfg = BwdRsConfig<CELL, TW, H_, C_, NBS, KREG>;
  static const void* kfn() {
    return reinterpret_cast<const void*>(&persist_bwd_rs_kernel<CELL, TW, H_, C_, NBS, KREG>);
  }

 public:
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return H_; }
  int bc() const override { return NBS; }
  bool preferred() const override { return true; }
  std::string name() const override {
    char b[96];
    snprintf(b, sizeof b, "bwd_rs_H%d_cluster%d_nbs%d", H_, C_, NBS);
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
    launch_persistent(persist_bwd_rs_kernel<CELL, TW, H_, C_, NBS, KREG>, p, C_ * pl.groups, a.D, Cfg::NT, pl.smem, C_,
                      s);
  }
};

template <typename TW>
void add_mma(std::vector<std::unique_ptr<BwdKernel>>& v) {
  v.emplace_back(new BwdRsKernelImpl<LSTM, TW, 256, 8, 4>());
  v.emplace_back(new BwdRsKernelImpl<LSTM, TW, 256, 8, 8>());
  v.emplace_back(new BwdRsKernelImpl<LSTM, TW, 256, 8, 16>());
  v.emplace_back(new BwdRsKernelImpl<LSTM, TW, 512, 16, 4>());
  v.emplace_back(new BwdRsKernelImpl<LSTM, TW, 512, 16, 8>());
  v.emplace_back(new BwdRsKernelImpl<LSTM, TW, 512, 16, 16>());
  v.emplace_back(new BwdRsKernelImpl<GRU, TW, 256, 8, 4>());
  v.emplace_back(new BwdRsKernelImpl<GRU, TW, 256, 8, 8>());
  v.emplace_back(new BwdRsKernelImpl<GRU, TW, 256, 8, 16>());
  v.emplace_back(new BwdRsKernelImpl<GRU, TW, 512, 16, 4>());
  v.emplace_back(new BwdRsKernelImpl<GRU, TW, 512, 16, 8>());
  v.emplace_back(new BwdRsKernelImpl<GRU, TW, 512, 16, 16>());
}

// float32 (FFMA product): tiles of 1, 2, 4 and 8 (the product multiplies every sequence slot of the tile: H100 run 5,
// tiles of 4 at B = 1 cost LSTM H = 512 5.81 µs/step of training against the gather kernel's 4.87), KREG of a
// thread's rows in registers, the rest in shared memory (LSTM H = 512: 128 rows per thread, 96 of them 192 KB per CTA
// at KREG = 32, which leaves room for tiles of up to 4; 44 make room for 8; ptxas, sm_90a: no spills but 8-12 bytes
// at LSTM H = 512 tiles of 8; GRU H = 256 spilled 24 bytes with 32 rows in registers, none with 24).
template <int CELL, int H, int C, int KREG>
void add_f32_tiles(std::vector<std::unique_ptr<BwdKernel>>& v) {
  v.emplace_back(new BwdRsKernelImpl<CELL, float, H, C, 1, KREG>());
  v.emplace_back(new BwdRsKernelImpl<CELL, float, H, C, 2, KREG>());
  v.emplace_back(new BwdRsKernelImpl<CELL, float, H, C, 4, KREG>());
}
void add_f32(std::vector<std::unique_ptr<BwdKernel>>& v) {
  add_f32_tiles<LSTM, 256, 8, 32>(v);
  v.emplace_back(new BwdRsKernelImpl<LSTM, float, 256, 8, 8, 32>());
  add_f32_tiles<LSTM, 512, 16, 32>(v);
  v.emplace_back(new BwdRsKernelImpl<LSTM, float, 512, 16, 8, 44>());
  add_f32_tiles<GRU, 256, 8, 24>(v);
  v.emplace_back(new BwdRsKernelImpl<GRU, float, 256, 8, 8, 24>());
  add_f32_tiles<GRU, 512, 16, 32>(v);
  v.emplace_back(new BwdRsKernelImpl<GRU, float, 512, 16, 8, 32>());
}

}  // namespace

// Listed by tile size within each (cell, type, H): choose_bwd (persistent_choice.cu) takes the first that fits.
void add_bwd_kernels_rs(std::vector<std::unique_ptr<BwdKernel>>& v) {
  add_mma<__half>(v);
  add_mma<__nv_bfloat16>(v);
  add_f32(v);
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
