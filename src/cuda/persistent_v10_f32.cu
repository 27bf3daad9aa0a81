// PERSISTENT v10 (H = 512 / 1024, multicast state) kernels for float32 storage: the FFMA product (one file per
// they compile in parallel).
#include "persistent_kernels_v10.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
// float32 (FFMA, session 15): 8 units per CTA, LSTM 32 and GRU 24 W rows per CTA. H = 1024: 128 CTAs per group (one
// group per direction on an H100 or H200, so B <= 16 and one direction), 64 W registers per thread, tiles of 1, 4, 8,
// 16. H = 512: 64 CTAs per group (two groups: one direction B <= 64, or both directions B <= 32), 32 W registers per
// thread, tiles of 1 (tagged words: B * D <= 2), 4, 8, 16, 32 (choose() takes the tile of one, and the others from
// B = kV10F32MinB512 on).
void add_kernels_v10_f32(std::vector<std::unique_ptr<Kernel>>& v) {
  v.emplace_back(new KernelV10Impl<LSTM, float, 1024, 8, 1, 1, true>());  // tile of one: tagged words
  v.emplace_back(new KernelV10Impl<LSTM, float, 1024, 8, 1, 4>());
  v.emplace_back(new KernelV10Impl<LSTM, float, 1024, 8, 1, 8>());
  v.emplace_back(new KernelV10Impl<LSTM, float, 1024, 8, 1, 16>());
  v.emplace_back(new KernelV10Impl<GRU, float, 1024, 8, 1, 1, true>());
  v.emplace_back(new KernelV10Impl<GRU, float, 1024, 8, 1, 4>());
  v.emplace_back(new KernelV10Impl<GRU, float, 1024, 8, 1, 8>());
  v.emplace_back(new KernelV10Impl<GRU, float, 1024, 8, 1, 16>());
  v.emplace_back(new KernelV10Impl<LSTM, float, 512, 8, 1, 1, true>());  // tile of one: tagged words
  v.emplace_back(new KernelV10Impl<LSTM, float, 512, 8, 1, 4>());
  v.emplace_back(new KernelV10Impl<LSTM, float, 512, 8, 1, 8>());
  v.emplace_back(new KernelV10Impl<LSTM, float, 512, 8, 1, 16>());
  v.emplace_back(new KernelV10Impl<LSTM, float, 512, 8, 1, 32>());
  v.emplace_back(new KernelV10Impl<GRU, float, 512, 8, 1, 1, true>());
  v.emplace_back(new KernelV10Impl<GRU, float, 512, 8, 1, 4>());
  v.emplace_back(new KernelV10Impl<GRU, float, 512, 8, 1, 8>());
  v.emplace_back(new KernelV10Impl<GRU, float, 512, 8, 1, 16>());
  v.emplace_back(new KernelV10Impl<GRU, float, 512, 8, 1, 32>());
  // H = 512, 16 units per CTA (32 CTAs per group, 64 W registers per thread), tile of one with tagged words: after
  // the 8-unit tiles, so that it runs where those cannot plan one sequence per group (B * D = 3-4 on an H100).
  v.emplace_back(new KernelV10Impl<LSTM, float, 512, 16, 1, 1, true>());
  v.emplace_back(new KernelV10Impl<GRU, float, 512, 16, 1, 1, true>());
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
