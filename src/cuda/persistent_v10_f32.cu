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
// With 8 warps per CTA (session 41; docs/performance.md, "v10's float32 tile of one with 8 warps" and "8 warps for
// v10's other float32 tiles"): KS = 8 k slices, 64 W registers per thread at H = 512, 128 at H = 1024 (ptxas:
// 120-160 registers at H = 512, 184-234 at H = 1024, no spills); B = 1-2 at H = 512 -9 to -11%, the tiles of 4-32
// -2 to -8% (inference). H = 1024's tile of one joined them in session 43: with 8 warps its own work is ~350 cycles
// shorter, but each thread polls two pairs of the state, and checked one after the other a late second pair cost
// another L2 round trip (session 41: B = 1 inference 10-13% slower). Re-polled together, without a sleep
// (persistent_fwd_v10.cuh), B = 1 is 4-5% faster than with 16 warps (docs/performance.md, "v10's float32 tile of one
// at H = 1024 on 8 warps, with a joint re-poll (session 43)").
template <int CELL, int H, int... NBS>
void add_v10_f32_u8(std::vector<std::unique_ptr<Kernel>>& v) {
  v.emplace_back(new KernelV10Impl<CELL, float, H, 8, 1, 1, true, 8>());
  (v.emplace_back(new KernelV10Impl<CELL, float, H, 8, 1, NBS, false, 8>()), ...);
}

void add_kernels_v10_f32(std::vector<std::unique_ptr<Kernel>>& v) {
  add_v10_f32_u8<LSTM, 1024, 4, 8, 16>(v);
  add_v10_f32_u8<GRU, 1024, 4, 8, 16>(v);
  add_v10_f32_u8<LSTM, 512, 4, 8, 16, 32>(v);
  add_v10_f32_u8<GRU, 512, 4, 8, 16, 32>(v);
  // The 16-unit tile of one after the 8-unit tiles (equal rank in choose(): the list's order decides), so that it
  // runs where those cannot plan one sequence per group. GRU with 8 warps (128 W registers: 220 in all; B = 3-4
  // -6 to -8%); LSTM keeps 16 (with 8, its 128 W registers took 255 registers and spilled 88-96 bytes).
  v.emplace_back(new KernelV10Impl<LSTM, float, 512, 16, 1, 1, true>());
  v.emplace_back(new KernelV10Impl<GRU, float, 512, 16, 1, 1, true, 8>());
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
