// PERSISTENT v10 (H = 512 / 1024, multicast state) kernels for float32 storage: the FFMA product (one file per
// storage type, so that they compile in parallel).
#include "persistent_kernels_v10.cuh"

namespace openrnn {
namespace cuda {
namespace persist {
// float32 (FFMA, session 15): LSTM 4 and GRU 3 W rows per unit. H = 1024: 8 units per CTA, 128 CTAs per group (one
// group per direction on an H100 or H200, so B <= 16 and one direction), 64 W registers per thread, tiles of 1, 4, 8,
// 16. H = 512: 8 units per CTA, 64 CTAs per group (two groups: one direction B <= 64, or both directions B <= 32), 32
// W registers per thread, tiles of 1 (tagged words: B * D <= 2), 4, 8, 16, 32 (choose() takes the tile of one, and
// the others from B = kV10F32MinB512 on); and 16 units per CTA, 32 CTAs per group, 64 W registers per thread, a tile
// of one only (session 17: four groups fit an H100, so it takes B * D = 3-4).

// One cell's configurations at H with 8 units per CTA: the tile of one (tagged words) first, then tiles of NBS...
// The tile of one at H = 512 runs 8 warps per CTA (session 41; docs/performance.md, "v10's float32 tile of one with 8
// warps"): 64 W registers per thread as at H = 1024, where 8 warps would need 128.
template <int CELL, int H, int... NBS>
void add_v10_f32_u8(std::vector<std::unique_ptr<Kernel>>& v) {
  v.emplace_back(new KernelV10Impl<CELL, float, H, 8, 1, 1, true, H == 512 ? 8 : 16>());
  (v.emplace_back(new KernelV10Impl<CELL, float, H, 8, 1, NBS>()), ...);
}

void add_kernels_v10_f32(std::vector<std::unique_ptr<Kernel>>& v) {
  add_v10_f32_u8<LSTM, 1024, 4, 8, 16>(v);
  add_v10_f32_u8<GRU, 1024, 4, 8, 16>(v);
  add_v10_f32_u8<LSTM, 512, 4, 8, 16, 32>(v);
  add_v10_f32_u8<GRU, 512, 4, 8, 16, 32>(v);
  // The 16-unit tile of one after the 8-unit tiles (equal rank in choose(): the list's order decides), so that it
  // runs where those cannot plan one sequence per group.
  v.emplace_back(new KernelV10Impl<LSTM, float, 512, 16, 1, 1, true>());
  v.emplace_back(new KernelV10Impl<GRU, float, 512, 16, 1, 1, true>());
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
