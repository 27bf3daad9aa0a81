// persist_fwd_v10_kernel instantiations behind the Kernel interface (persistent_plan.h): planning from the device's
// cluster occupancy, and the cooperative cluster launch. Included by persistent_v10_{bf16,f16,f32}.cu only.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdio>

#include "persistent_fwd_v10.cuh"
#include "persistent_kernels.cuh"
#include "standard_plan.h"  // env_switch01

namespace openrnn {
namespace cuda {
namespace persist {

// The most launches a batch is split into (KernelV10Impl::plan): at H = 1024 one float32 group of 128 CTAs takes 16
// sequences, so B <= 64 (16-bit: two groups, B <= 128); further up STANDARD's GEMMs are the better use of the GPU
// (AUTO), and v4 / v7 keep PERSISTENT.
constexpr int kV10MaxWaves = 4;

// LLV: the tagged-word exchange for tiles of one sequence is compiled in, and the plan takes one sequence per group only.
// NW: warps per CTA (float32 only; V10Config).
template <int CELL, typename TW, int HC, int U, int MT, int NBS, bool LLV = false, int NW = 16>
class KernelV10Impl final : public Kernel {
  using Cfg = V10Config<CELL, TW, HC, U, MT, NBS, NW>;
  template <bool TRAIN, bool XPK>
  static const void* kptr() {
    return reinterpret_cast<const void*>(&persist_fwd_v10_kernel<CELL, TW, HC, U, MT, NBS, LLV, TRAIN, XPK, NW>);
  }
  static const void* kfn(bool train) { return train ? kptr<true, false>() : kptr<false, false>(); }
  // The instantiations with the input projection's producers (persistent_fwd_v10.cuh, XPK), where they exist.
  static constexpr bool kXP = LLV && std::is_same<TW, float>::value && HC == 512 && U == 8;
  static const void* kfn_xp(bool train) {
    if constexpr (kXP)
      return train ? kptr<true, true>() : kptr<false, true>();
    else
      return nullptr;
  }

 public:
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return Cfg::H; }
  int bc() const override { return NBS; }
  bool grid_mode() const override { return true; }
  int version() const override { return 10; }
  int ub() const override { return U; }
  bool wgmma() const override { return Cfg::WG; }
  std::string name() const override {
    char b[96];
    if (std::is_same<TW, float>::value)
      snprintf(b, sizeof b, "v10_H%d_ub%d_ffma_nbs%d%s%s", Cfg::H, U, NBS, LLV ? "_ll" : "", NW == 8 ? "_w8" : "");
    else if (Cfg::WG)
      snprintf(b, sizeof b, "v10_H%d_ub%d_wg_nbs%d", Cfg::H, U, NBS);
    else
      snprintf(b, sizeof b, "v10_H%d_ub%d_mt%d_nbs%d%s", Cfg::H, U, MT, NBS, LLV ? "_ll" : "");
    return b;
  }

  // Groups of C = H / U CTAs, one per batch tile of at most NBS sequences (B spread over as many groups as run at
  // once: the multicast bytes per step grow with the tile), in clusters of CL CTAs: the largest CL of 8, 4, 2 whose
  // co-resident clusters hold every group of the D directions (H100, one 512-thread CTA per SM, 132 SMs in GPCs of
  // different sizes: 128 CTAs run in clusters of 2 but not of 4 or 8).
  Plan plan(const cudaDeviceProp& prop, int B, int D) const override {
    Plan pl = plan_tiles(prop, B, D);
    // The wgmma tiles' exchange slots (persistent_fwd_v10.cuh): tiles x v10_wg_slot_rows rows of H 16-bit elements
    // per buffer, two buffers, in the B + kV10WgExtraB sequences of 16 bytes x H that make_layout gives hg.
    if (Cfg::WG && pl.ok) {
      const long long tiles = (B + pl.BT - 1) / pl.BT;
      const long long need = 2 * tiles * v10_wg_slot_rows(2 * pl.BT, Cfg::N > 32 ? Cfg::N / 2 : Cfg::N) * 2;
      const long long room = 2LL * (B + kV10WgExtraB) * 8;
      if (need > room) {
        char msg[200];
        snprintf(msg, sizeof msg, "v10 wgmma tile of %d: %lld tiles' exchange slots need %lld bytes per unit of H, the "
                 "workspace has %lld", NBS, tiles, need, room);
        pl = Plan();
        pl.why = msg;
      }
    }
    return pl;
  }

 private:
  Plan plan_tiles(const cudaDeviceProp& prop, int B, int D) const {
    Plan pl;
    char msg[320];
    // 8 warps (float32): the registers of some 256-thread CTAs (GRU at H = 512: 120-125) would let two share an SM,
    // which would change the plan's group count and put two CTAs' steps on one SM. More than half the SM's shared
    // memory keeps one CTA per SM, as the 512-thread configurations have by their registers.
    const size_t one_per_sm =
        size_t(prop.sharedMemPerMultiprocessor) / 2 - size_t(prop.reservedSharedMemPerBlock) + 128;
    const size_t smem = Cfg::NW == 16 ? Cfg::smem_bytes() : std::max(Cfg::smem_bytes(), one_per_sm);
    if (smem > prop.sharedMemPerBlockOptin) {
      snprintf(msg, sizeof msg, "v10: a CTA needs %zu B of shared memory, this GPU allows %zu", smem,
               size_t(prop.sharedMemPerBlockOptin));
      pl.why = msg;
      return pl;
    }
    for (bool train : {false, true})
      if (cudaFuncSetAttribute(kfn(train), cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) != cudaSuccess) {
        cudaGetLastError();
        pl.why = "v10: shared-memory attribute refused by the device";
        return pl;
      }
    // The largest cluster whose co-resident groups take B in tiles of at most NBS (B spread over every group).
    const int C = Cfg::C;
    int groups_fit = 0, fit_cl = 0;  // the most groups any cluster size holds, and the largest such size
    for (int cl : {8, 4, 2}) {
      const void* fns[2] = {kfn(false), kfn(true)};
      const int clusters = max_active_clusters(fns, 2, cl, Cfg::NT, smem);
      int groups = clusters * cl / (C * D);
      groups = groups < kMaxGroups ? groups : kMaxGroups;
      if (groups > groups_fit) {
        groups_fit = groups;
        fit_cl = cl;
      }
      if (groups < 1) continue;
      const int bt = (B + groups - 1) / groups;
      if (bt > NBS) continue;
      if (LLV && bt != 1) {  // the plain tile takes it with the same cluster size
        pl.why = "v10: the tagged-word tile takes one sequence per group only";
        return pl;
      }
      pl.C = C;
      pl.BT = bt;
      pl.groups = (B + bt - 1) / bt;
      pl.cl = cl;
      pl.smem = smem;
      pl.ok = true;
      return pl;
    }
    // H = 1024, the tile of 16: a batch larger than the co-resident groups take (H100 / H200: float32 one group of
    // 128 CTAs, 16 sequences; 16-bit two groups of 64, 32 sequences) runs as up to kV10MaxWaves launches of full
    // tiles, one after the other (launch(): b_lo, cbase), with the cluster size that holds the most groups. Session
    // 24: float32 B = 17-64, where the grid-mode v4 ran before, and 16-bit B = 33-64, where v7 did. Only the largest
    // tile chunks (choose() tries the smallest tile first: a tile of 8 would take B = 32 in four launches, not two);
    // the 16-bit LSTM tile of 32 too (session 55: B = 65-128 in two launches where the tile of 16 takes four).
    static const bool chunk_off = env_switch01("OPENRNN_PERSIST_V10_CHUNK") == 0;  // developer switch (A/B)
    if (Cfg::H == 1024 && NBS >= 16 && !LLV && !chunk_off && groups_fit >= 1) {
      const int tiles = (B + NBS - 1) / NBS, waves = (tiles + groups_fit - 1) / groups_fit;
      if (waves <= kV10MaxWaves && tiles <= kMaxGroups) {
        pl.C = C;
        pl.BT = NBS;
        pl.groups = (tiles + waves - 1) / waves;  // per launch; the last may take fewer tiles
        pl.waves = waves;
        pl.cl = fit_cl;
        pl.smem = smem;
        pl.ok = true;
        return pl;
      }
    }
    snprintf(msg, sizeof msg, "v10 H=%d B=%d D=%d: groups of %d CTAs with %zu B of shared memory each, %d co-resident "
             "per direction on this GPU, tiles of at most %d sequences", Cfg::H, B, D, C, smem, groups_fit, NBS);
    pl.why = msg;
    return pl;
  }

 public:
  // The input projection inside the launch (persistent_fwd_v10.cuh; float32 tiles of one): P producer CTAs per
  // direction, P a multiple of the plan's cluster size, the first of 32, 48, 64, 24, 16 that fits (pick_xprod,
  // persistent_kernels.cuh; H100, LSTM H = 512: 64 consumers + 32 producers in clusters of 8). OPENRNN_PERSIST_XPROD=0 (developer switch, read at every call) keeps the GEMM before the launch.
  int xprod_plan(const cudaDeviceProp& prop, const Plan& pl, int B, int D, int Il, size_t* smem) const override {
    if constexpr (!kXP) {
      (void)prop, (void)pl, (void)B, (void)D, (void)Il, (void)smem;
      return 0;
    } else {
      // One direction only: both directions' 128 consumer CTAs leave no room on an H100 or H200, so the reverse
      // direction's producer path would run untested.
      if (!pl.ok || pl.waves != 1 || pl.BT != 1 || pl.cl < 1 || B > kXprodRows || Il < 1 || D != 1 ||
          pl.groups >= kXprodCounter || env_switch01("OPENRNN_PERSIST_XPROD") == 0)
        return 0;
      const auto pick = pick_xprod(prop, kfn_xp(false), kfn_xp(true), {32, 48, 64, 24, 16}, pl.cl, Cfg::NT, pl.smem,
                                   Cfg::G * Cfg::H, Il, pl.C * pl.groups, D);
      *smem = pick.second;
      return pick.first;
    }
  }

  void launch(const LaunchArgs& a, const Plan& pl, cudaStream_t s) const override {
    FwdParams<TW> p = fwd_params<TW>(a, pl, Cfg::H);
    // Producers of the input projection (xprod_plan): P more CTAs per direction after the consumers' pl.C * groups,
    // chunks of kXprodRows / B steps.
    const int xprod = kXP && pl.waves == 1 ? a.xprod : 0;
    p.xprod = xprod;
    p.xcons = pl.C * pl.groups;
    p.xchunk = a.B > 0 && a.B <= kXprodRows ? kXprodRows / a.B : 1;
    const size_t smem = xprod > 0 ? std::max(pl.smem, a.xprod_smem) : pl.smem;
    if (!(a.prep & kPrepFlags))
      for (int i = 0; i < a.D; ++i)
        OPENRNN_CUDA_CHECK(cudaMemsetAsync(a.flags[i], 0, sizeof(unsigned) * kMaxGroups, s));
    // Tiles of one sequence exchange h as tagged words (persistent_fwd_v10.cuh; H200, µs/step at B = 1: float32 LSTM
    // 2.56-2.70 -> 2.18-2.37, float16 LSTM 2.52 -> 2.04, GRU 2.47 -> 1.99); OPENRNN_PERSIST_V10_LL=0 (developer
    // switch, read at every launch) keeps the counter and the bulk copy. Their buffer, [groups][2][Hr] 8-byte words in
    // hg, starts zeroed (no tag of an earlier launch may match).
    p.ll = LLV && env_switch01("OPENRNN_PERSIST_V10_LL") != 0 && pl.BT == 1;
    // 16-bit at Hr == H without the tagged words: the swizzled dense state rows, brought in by one bulk copy per CTA
    // and step instead of one per row (persistent_fwd_v10.cuh; session 25). OPENRNN_PERSIST_V10_SWZ=0 (developer
    // switch, read at every launch) keeps the padded rows.
    p.swz = sizeof(TW) == 2 && a.Hr == Cfg::H && !p.ll && env_switch01("OPENRNN_PERSIST_V10_SWZ") != 0;
    // The tile of 32 (one state buffer): the cluster barrier per step that states, in terms compute-sanitizer's
    // racecheck models, the order the group's counter already gives (persistent_fwd_v10.cuh). It cost nothing
    // measurable (session 55, run 3: -2.1% to -0.0% without it, one process per side: within noise).
    // OPENRNN_PERSIST_V10_CBAR=0 (developer switch, read at every launch) leaves it out.
    p.cbar = Cfg::HB == 1 && env_switch01("OPENRNN_PERSIST_V10_CBAR") != 0;
    // The tile of 32: the state rows in two copies, pass 0's first, each on its own mbarrier, so that the product's
    // first pass overlaps the second pass's copy (persistent_fwd_v10.cuh). LSTM only: session 56, run 2 (H200, one
    // process per side, µs/step) measured LSTM inference at B = 34-64 -2.5% to -4.5% and training -0.2% to -1.1%, but
    // GRU +0.3% to +2.1% at B = 34-48 (-0.4% to -1.3% at B = 64). OPENRNN_PERSIST_V10_PIPE (developer switch, read at
    // every launch): 0 one copy on one mbarrier for both cells, 1 the two copies for both (A/B). The wgmma tile of 32
    // ignores it: it always takes its passes as k slices (KSL in persistent_fwd_v10.cuh).
    const int pipe = env_switch01("OPENRNN_PERSIST_V10_PIPE");
    p.pipe = Cfg::HB == 1 && (pipe == 1 || (pipe != 0 && CELL == LSTM));
    if (p.ll && !(a.prep & kPrepHg))
      for (int i = 0; i < a.D; ++i)
        OPENRNN_CUDA_CHECK(cudaMemsetAsync(a.hg[i], 0, size_t(pl.groups) * 2 * a.Hr * sizeof(uint64_t), s));
    // OPENRNN_PERSIST_PROF=1 (developer switch, read once; synchronises the stream after each launch): the kernel's
    // phase profile, cycles per step averaged over steps 8..22 of CTA (0, 0), on stderr. Needs T >= 24.
    static const bool prof = env_switch01("OPENRNN_PERSIST_PROF") == 1;
    static long long* dprof = nullptr;
    if (prof && a.T >= 24) {
      if (!dprof) OPENRNN_CUDA_CHECK(cudaMalloc(&dprof, 16 * 8 * sizeof(long long)));
      OPENRNN_CUDA_CHECK(cudaMemsetAsync(dprof, 0, 16 * 8 * sizeof(long long), s));
      p.prof = dprof;
    }
    // One launch per wave of groups (pl.waves > 1: batch chunks, plan() above), each on its own counters
    // (flags[d] holds kMaxGroups, all zeroed before the first); only the first is a programmatic dependent launch.
    const int tiles = (a.B + pl.BT - 1) / pl.BT;
    long long* const prof_buf = p.prof;
    for (int w = 0; w < pl.waves; ++w) {
      p.b_lo = w * pl.groups * pl.BT;
      p.cbase = w * pl.groups;
      const int groups = min(pl.groups, tiles - w * pl.groups);
      const bool pdl = w == 0 && (a.prep & kPrepPdl) != 0;
      bool done = false;
      if constexpr (kXP) {
        if (xprod > 0) {
          launch_persistent(a.rs_acts[0] ? persist_fwd_v10_kernel<CELL, TW, HC, U, MT, NBS, LLV, true, true, NW>
                                         : persist_fwd_v10_kernel<CELL, TW, HC, U, MT, NBS, LLV, false, true, NW>,
                            p, pl.C * groups + xprod, a.D, Cfg::NT, smem, pl.cl, s, true, pdl);
          done = true;
        }
      }
      if (!done)
        launch_persistent(a.rs_acts[0] ? persist_fwd_v10_kernel<CELL, TW, HC, U, MT, NBS, LLV, true, false, NW>
                                       : persist_fwd_v10_kernel<CELL, TW, HC, U, MT, NBS, LLV, false, false, NW>,
                          p, pl.C * groups, a.D, Cfg::NT, pl.smem, pl.cl, s, true, pdl);
      if (w == 0) p.prof = nullptr;  // the profile is the first launch's
    }
    if (prof_buf) {
      long long h[16 * 8];
      OPENRNN_CUDA_CHECK(cudaMemcpyAsync(h, dprof, sizeof h, cudaMemcpyDeviceToHost, s));
      OPENRNN_CUDA_CHECK(cudaStreamSynchronize(s));
      double d[7] = {0};
      for (int st = 0; st < 15; ++st) {
        for (int k = 0; k < 6; ++k) d[k] += double(h[st * 8 + k + 1] - h[st * 8 + k]) / 15;
        d[6] += double(h[(st + 1) * 8] - h[st * 8 + 6]) / 15;
      }
      std::fprintf(stderr, "prof %s B=%d cycles/step: counter wait %.0f | issue %.0f | state landed %.0f | product %.0f "
                   "| cell+arrive %.0f | outputs %.0f | to next step %.0f | total %.0f\n", name().c_str(), a.B, d[0],
                   d[1], d[2], d[3], d[4], d[5], d[6], d[0] + d[1] + d[2] + d[3] + d[4] + d[5] + d[6]);
    }
  }
};

// The v10 configuration set per 16-bit storage type (H = 1024), tiles of 4, 8 and 16 sequences (one, two or four n8
// tiles of split state rows), 16 units per CTA (64 CTAs per group and direction): LSTM 64 W registers per thread, 2 m
// groups x 8 k slices; GRU 48, k split 16 ways. (LSTM with 8 units, 128 CTAs whose clusters of 8 do not all fit an
// H100, was slower from B = 4 up and no faster at B = 1: docs/performance.md, "PERSISTENT v10".)
template <typename TW>
void add_kernels_v10(std::vector<std::unique_ptr<Kernel>>& v) {
  // The tile of 4 with the tagged-word exchange, for one sequence per group (choose() tries it before the plain one)
  v.emplace_back(new KernelV10Impl<LSTM, TW, 1024, 16, 2, 4, true>());
  v.emplace_back(new KernelV10Impl<GRU, TW, 1024, 16, 3, 4, true>());
  static_assert(sizeof(TW) == 2, "16-bit storage; float32: add_kernels_v10_f32");
  // Each LSTM tile with the product on warpgroup MMAs ("MT = 0", sessions 56-57) just before its mma.sync twin (same
  // rank in choose(): the earlier one goes first). choose() takes the tile of 32 by default, the others only with
  // OPENRNN_PERSIST_V10_WG=1 (they measured slower: docs/performance.md, session 57).
  v.emplace_back(new KernelV10Impl<LSTM, TW, 1024, 16, 0, 4>());
  v.emplace_back(new KernelV10Impl<LSTM, TW, 1024, 16, 2, 4>());
  v.emplace_back(new KernelV10Impl<LSTM, TW, 1024, 16, 0, 8>());
  v.emplace_back(new KernelV10Impl<LSTM, TW, 1024, 16, 2, 8>());
  v.emplace_back(new KernelV10Impl<LSTM, TW, 1024, 16, 0, 16>());
  v.emplace_back(new KernelV10Impl<LSTM, TW, 1024, 16, 2, 16>());
  // The tiles of 32 (session 55): B = 33-64 in one launch of two groups where the tile of 16 takes two (choose()
  // prefers the fewest launches). GRU's holds the partial sums of 16 sequences at a time (FwdConfigV10::NBSP).
  v.emplace_back(new KernelV10Impl<LSTM, TW, 1024, 16, 0, 32>());
  v.emplace_back(new KernelV10Impl<LSTM, TW, 1024, 16, 2, 32>());
  v.emplace_back(new KernelV10Impl<GRU, TW, 1024, 16, 3, 4>());
  v.emplace_back(new KernelV10Impl<GRU, TW, 1024, 16, 3, 8>());
  v.emplace_back(new KernelV10Impl<GRU, TW, 1024, 16, 3, 16>());
  v.emplace_back(new KernelV10Impl<GRU, TW, 1024, 16, 3, 32>());
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
