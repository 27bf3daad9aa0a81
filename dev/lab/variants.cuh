// Type-erased wrapper around one persist_fwd_kernel instantiation: capacity planning from the device's limits and the
// launch (cluster launch, or cooperative launch in grid mode, so that a grid that cannot be co-resident is refused
// by the runtime instead of deadlocking).
#pragma once

#include <cstdio>
#include <string>

#include "lab.h"
#include "persist_fwd.cuh"
#include "persist_fwd_v2.cuh"
#include "persist_fwd_v3.cuh"
#include "persist_fwd_v4.cuh"
#include "persist_fwd_v5.cuh"
#include "persist_fwd_v6.cuh"

#include <type_traits>

namespace lab {

template <typename TW>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType v = DType::F32;
};
template <>
struct DTypeOf<__nv_bfloat16> {
  static constexpr DType v = DType::BF16;
};
template <>
struct DTypeOf<__half> {
  static constexpr DType v = DType::F16;
};

// VER 1: persist_fwd_kernel (v1); VER 2: persist_fwd_v2_kernel; VER 3: persist_fwd_v3_kernel; VER 4 (shipped):
// persist_fwd_v4_kernel.
template <int VER, int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID>
class FwdVariant final : public Variant {
  using Cfg = typename std::conditional<
      VER == 1, FwdConfig<CELL, TW, R, NW, KPW, KREG, BC, GRID>,
      typename std::conditional<
          VER == 2, FwdConfigV2<CELL, TW, R, NW, KPW, KREG, BC, GRID>,
          typename std::conditional<
              VER == 3, FwdConfigV3<CELL, TW, R, NW, KPW, KREG, BC, GRID>,
              typename std::conditional<VER == 4, FwdConfigV4<CELL, TW, R, NW, KPW, KREG, BC, GRID>,
                                        FwdConfigV5<CELL, TW, R, NW, KPW, KREG, BC, GRID>>::type>::type>::type>::type;

 public:
  std::string name() const override {
    char b[128];
    snprintf(b, sizeof b, "v%d_%s_%s_H%d_%s%d_R%d_kreg%d_bc%d", VER, cell_name(CELL), dtype_name(DTypeOf<TW>::v),
             Cfg::H, GRID ? "grid" : "cl", Cfg::H / Cfg::U, R, KREG, BC);
    return b;
  }
  int cell() const override { return CELL; }
  DType dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return Cfg::H; }
  bool grid_mode() const override { return GRID; }

  using KernelFn = void (*)(const FwdParams<TW>);
  static KernelFn kptr() {
    if constexpr (VER == 1) return &persist_fwd_kernel<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
    else if constexpr (VER == 2) return &persist_fwd_v2_kernel<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
    else if constexpr (VER == 3) return &persist_fwd_v3_kernel<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
    else if constexpr (VER == 4) return &persist_fwd_v4_kernel<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
    else return &persist_fwd_v5_kernel<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
  }
  static const void* kfn() { return reinterpret_cast<const void*>(kptr()); }

  Plan plan(int B, int D) const override {
    Plan pl;
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    const size_t limit = prop.sharedMemPerBlockOptin;
    pl.C = Cfg::H / Cfg::U;
    cudaFuncAttributes fa;
    cudaFuncGetAttributes(&fa, kfn());
    pl.regs = fa.numRegs;
    pl.local_bytes = int(fa.localSizeBytes);
    char msg[256];
    if (GRID) {
      // v2: several groups (batch tiles) when more CTAs fit; v1: one group.
      int per_sm0 = 0;
      cudaFuncSetAttribute(kfn(), cudaFuncAttributeMaxDynamicSharedMemorySize, int(limit));
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm0, kfn(), Cfg::NT, Cfg::smem_bytes(BC, BC));
      int groups = 1;
      if (VER >= 2) {
        const int fit = per_sm0 * prop.multiProcessorCount / (pl.C * D);
        const int want = (B + BC - 1) / BC;
        groups = fit < want ? fit : want;
        if (groups < 1) groups = 1;
      }
      int bt = (B + groups - 1) / groups;
      groups = (B + bt - 1) / bt;
      const int rows = (bt + BC - 1) / BC * BC;
      pl.smem = Cfg::smem_bytes(BC, rows);
      if (pl.smem > limit) {
        snprintf(msg, sizeof msg, "needs %zu B of shared memory per CTA at B=%d, the device allows %zu", pl.smem, B, limit);
        pl.why = msg;
        return pl;
      }
      cudaFuncSetAttribute(kfn(), cudaFuncAttributeMaxDynamicSharedMemorySize, int(pl.smem));
      int per_sm = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kfn(), Cfg::NT, pl.smem);
      pl.max_active = per_sm * prop.multiProcessorCount;
      if (pl.C * groups * D > pl.max_active) {
        snprintf(msg, sizeof msg, "needs %d co-resident CTAs, the device holds %d", pl.C * groups * D,
                 pl.max_active);
        pl.why = msg;
        return pl;
      }
      pl.BT = bt;
      pl.groups = groups;
      pl.ok = true;
      return pl;
    }
    // Cluster mode: the largest batch tile that fits in shared memory, then spread B over the co-resident clusters.
    int bt_max = 0;
    for (int bt = BC; bt <= 256; bt += BC)
      if (Cfg::smem_bytes(bt, bt) <= limit) bt_max = bt;
    if (bt_max == 0) {
      snprintf(msg, sizeof msg, "needs %zu B of shared memory per CTA, the device allows %zu",
               Cfg::smem_bytes(BC, BC), limit);
      pl.why = msg;
      return pl;
    }
    if (pl.C > 8) cudaFuncSetAttribute(kfn(), cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    const size_t smem_max = Cfg::smem_bytes(bt_max, bt_max);
    cudaFuncSetAttribute(kfn(), cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_max));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(pl.C, 1, 1);
    cfg.blockDim = dim3(Cfg::NT, 1, 1);
    cfg.dynamicSmemBytes = smem_max;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = pl.C;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    int clusters = 0;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, kfn(), &cfg);
    if (e != cudaSuccess || clusters < 1) {
      snprintf(msg, sizeof msg, "a cluster of %d CTAs with %zu B shared memory each cannot be scheduled (%s)", pl.C,
               smem_max, e != cudaSuccess ? cudaGetErrorString(e) : "0 active clusters");
      cudaGetLastError();
      pl.why = msg;
      return pl;
    }
    pl.max_active = clusters;
    const int tiles_wanted = clusters / D > 0 ? clusters / D : 1;
    int bt = (B + tiles_wanted - 1) / tiles_wanted;
    bt = (bt + BC - 1) / BC * BC;
    if (bt > bt_max) bt = bt_max;
    pl.BT = bt;
    pl.groups = (B + bt - 1) / bt;
    pl.smem = Cfg::smem_bytes(bt, bt);
    pl.ok = true;
    return pl;
  }

  cudaError_t run(const DevProblem& d, const Plan& pl, cudaStream_t s) const override {
    FwdParams<TW> p;
    p.T = d.T;
    p.B = d.B;
    p.H = d.H;
    p.Hr = d.H;
    p.C = pl.C;
    p.BT = pl.BT;
    p.D = d.D;
    p.y = static_cast<TW*>(d.y);
    p.lengths = d.lengths;
    for (int i = 0; i < 2; ++i) {
      p.xproj[i] = d.xproj[i];
      p.whh[i] = static_cast<const TW*>(d.whh[i]);
      p.bx[i] = d.bx[i];
      p.bh[i] = d.bh[i];
      p.h0[i] = d.h0[i];
      p.c0[i] = d.c0[i];
      p.hn[i] = d.hn[i];
      p.cn[i] = d.cn[i];
      p.hg[i] = d.hg[i];
      p.flags[i] = d.flags[i];
    }
    cudaLaunchConfig_t cfg = {};
    cfg.blockDim = dim3(Cfg::NT, 1, 1);
    cfg.dynamicSmemBytes = pl.smem;
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    if (GRID) {
      for (int i = 0; i < d.D; ++i) {
        cudaError_t e = cudaMemsetAsync(d.flags[i], 0, sizeof(unsigned) * (pl.C > pl.groups ? pl.C : pl.groups), s);
        if (e != cudaSuccess) return e;
      }
      cfg.gridDim = dim3(pl.C * pl.groups, d.D, 1);
      at[0].id = cudaLaunchAttributeCooperative;
      at[0].val.cooperative = 1;
    } else {
      cfg.gridDim = dim3(pl.C * pl.groups, d.D, 1);
      at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = pl.C;
      at[0].val.clusterDim.y = 1;
      at[0].val.clusterDim.z = 1;
    }
    cfg.attrs = at;
    cfg.numAttrs = 1;
    p.prof = d.prof;
    p.clip = 0.f;
    return cudaLaunchKernelEx(&cfg, kptr(), p);
  }
};

// The variant sets compiled for one storage type (see README.md for the capacity arithmetic behind each choice).
// v1: cluster H=256 C=8 (U=32) / C=16 (U=16), H=512 C=16 (U=32, non-portable cluster size); grid U=8: H=256 (32
// CTAs), H=512 (64), H=1024 (128). KREG: k per row in registers; float32 keeps half of the H=512/1024 slices in
// shared memory, 16-bit types keep all in registers (a register holds two weights).
template <typename TW>
void add_variants_v1(std::vector<std::unique_ptr<Variant>>& v) {
  constexpr bool w16 = sizeof(TW) == 2;
  v.emplace_back(new FwdVariant<1, LSTM, TW, 128, 16, 16, 16, 2, false>());
  v.emplace_back(new FwdVariant<1, LSTM, TW, 64, 16, 16, 16, 4, false>());
  v.emplace_back(new FwdVariant<1, LSTM, TW, 128, 16, 32, w16 ? 32 : 16, 2, false>());
  v.emplace_back(new FwdVariant<1, LSTM, TW, 32, 16, 16, 16, 8, true>());
  v.emplace_back(new FwdVariant<1, LSTM, TW, 32, 16, 32, 32, 8, true>());
  v.emplace_back(new FwdVariant<1, LSTM, TW, 32, 16, 64, w16 ? 64 : 32, 8, true>());
  v.emplace_back(new FwdVariant<1, GRU, TW, 96, 16, 16, 16, 2, false>());
  v.emplace_back(new FwdVariant<1, GRU, TW, 48, 16, 16, 16, 4, false>());
  v.emplace_back(new FwdVariant<1, GRU, TW, 96, 16, 32, w16 ? 32 : 16, 2, false>());
  v.emplace_back(new FwdVariant<1, GRU, TW, 24, 16, 16, 16, 8, true>());
  v.emplace_back(new FwdVariant<1, GRU, TW, 24, 16, 32, 32, 8, true>());
  v.emplace_back(new FwdVariant<1, GRU, TW, 24, 16, 64, w16 ? 64 : 32, 8, true>());
  if (!w16) {
    v.emplace_back(new FwdVariant<1, RNN_TANH, TW, 32, 16, 16, 16, 4, false>());
    v.emplace_back(new FwdVariant<1, RNN_RELU, TW, 32, 16, 32, 32, 8, true>());
  }
}

// v2 (persist_fwd_v2.cuh): wider batch chunks; grid variants use several groups when B allows.
template <typename TW>
void add_variants_v2(std::vector<std::unique_ptr<Variant>>& v) {
  constexpr bool w16 = sizeof(TW) == 2;
  v.emplace_back(new FwdVariant<2, LSTM, TW, 128, 16, 16, 16, 4, false>());                // H=256 C=8
  v.emplace_back(new FwdVariant<2, LSTM, TW, 64, 16, 16, 16, 8, false>());                 // H=256 C=16
  v.emplace_back(new FwdVariant<2, LSTM, TW, 128, 16, 32, w16 ? 32 : 16, w16 ? 4 : 2, false>());  // H=512 C=16
  v.emplace_back(new FwdVariant<2, LSTM, TW, 32, 16, 16, 16, 16, true>());                 // H=256 grid 32
  v.emplace_back(new FwdVariant<2, LSTM, TW, 32, 16, 32, w16 ? 32 : 16, 16, true>());      // H=512 grid 64
  v.emplace_back(new FwdVariant<2, LSTM, TW, 32, 16, 64, w16 ? 64 : 32, 8, true>());       // H=1024 grid 128
  v.emplace_back(new FwdVariant<2, GRU, TW, 96, 16, 16, 16, 4, false>());
  v.emplace_back(new FwdVariant<2, GRU, TW, 48, 16, 16, 16, 8, false>());
  v.emplace_back(new FwdVariant<2, GRU, TW, 96, 16, 32, w16 ? 32 : 16, w16 ? 4 : 2, false>());
  v.emplace_back(new FwdVariant<2, GRU, TW, 24, 16, 16, 16, 16, true>());
  v.emplace_back(new FwdVariant<2, GRU, TW, 24, 16, 32, w16 ? 32 : 16, 16, true>());
  v.emplace_back(new FwdVariant<2, GRU, TW, 24, 16, 64, w16 ? 64 : 32, 8, true>());
  if (!w16) {
    v.emplace_back(new FwdVariant<2, RNN_TANH, TW, 32, 16, 16, 16, 4, false>());
    v.emplace_back(new FwdVariant<2, RNN_RELU, TW, 32, 16, 32, 32, 8, true>());
  }
}

// v3 (persist_fwd_v3.cuh): each configuration at BC=1 (small B) and a wide BC (larger B); the bench keeps the best.
template <typename TW>
void add_variants_v3(std::vector<std::unique_ptr<Variant>>& v) {
  constexpr bool w16 = sizeof(TW) == 2;
  constexpr int K512 = w16 ? 32 : 16, K1024 = w16 ? 64 : 32, BC512 = w16 ? 4 : 2;
  v.emplace_back(new FwdVariant<3, LSTM, TW, 128, 16, 16, 16, 1, false>());      // H=256 C=8
  v.emplace_back(new FwdVariant<3, LSTM, TW, 128, 16, 16, 16, 4, false>());
  v.emplace_back(new FwdVariant<3, LSTM, TW, 128, 16, 32, K512, 1, false>());    // H=512 C=16
  v.emplace_back(new FwdVariant<3, LSTM, TW, 128, 16, 32, K512, BC512, false>());
  v.emplace_back(new FwdVariant<3, LSTM, TW, 32, 16, 64, K1024, 1, true>());     // H=1024 grid 128
  v.emplace_back(new FwdVariant<3, LSTM, TW, 32, 16, 64, K1024, 8, true>());
  v.emplace_back(new FwdVariant<3, LSTM, TW, 32, 16, 16, 16, 16, true>());       // H=256 grid 32 x groups
  v.emplace_back(new FwdVariant<3, LSTM, TW, 32, 16, 32, K512, 16, true>());     // H=512 grid 64 x groups
  v.emplace_back(new FwdVariant<3, GRU, TW, 96, 16, 16, 16, 1, false>());
  v.emplace_back(new FwdVariant<3, GRU, TW, 96, 16, 16, 16, 4, false>());
  v.emplace_back(new FwdVariant<3, GRU, TW, 96, 16, 32, K512, 1, false>());
  v.emplace_back(new FwdVariant<3, GRU, TW, 96, 16, 32, K512, BC512, false>());
  v.emplace_back(new FwdVariant<3, GRU, TW, 24, 16, 64, K1024, 1, true>());
  v.emplace_back(new FwdVariant<3, GRU, TW, 24, 16, 64, K1024, 8, true>());
  v.emplace_back(new FwdVariant<3, GRU, TW, 24, 16, 16, 16, 16, true>());
  v.emplace_back(new FwdVariant<3, GRU, TW, 24, 16, 32, K512, 16, true>());
  if (!w16) {
    v.emplace_back(new FwdVariant<3, RNN_TANH, TW, 32, 16, 16, 16, 4, false>());
    v.emplace_back(new FwdVariant<3, RNN_RELU, TW, 32, 16, 32, 32, 8, true>());
  }
}

// v4 (src/cuda/persistent_fwd.cuh, shipped): the library's configuration set (persistent_kernels.cuh add_kernels),
// RNN tanh/relu included.
template <typename TW>
void add_variants_v4(std::vector<std::unique_ptr<Variant>>& v) {
  constexpr bool w16 = sizeof(TW) == 2;
  constexpr int K512 = w16 ? 32 : 16, K1024 = w16 ? 64 : 32, BC512 = w16 ? 4 : 2;
  v.emplace_back(new FwdVariant<4, LSTM, TW, 128, 16, 16, 16, 1, false>());      // H=256 C=8
  v.emplace_back(new FwdVariant<4, LSTM, TW, 128, 16, 16, 16, 4, false>());
  v.emplace_back(new FwdVariant<4, LSTM, TW, 128, 16, 32, K512, 1, false>());    // H=512 C=16
  v.emplace_back(new FwdVariant<4, LSTM, TW, 128, 16, 32, K512, BC512, false>());
  v.emplace_back(new FwdVariant<4, LSTM, TW, 32, 16, 64, K1024, 1, true>());     // H=1024 grid 128
  v.emplace_back(new FwdVariant<4, LSTM, TW, 32, 16, 64, K1024, 8, true>());
  v.emplace_back(new FwdVariant<4, LSTM, TW, 32, 16, 16, 16, 16, true>());       // H=256 grid 32 x groups
  v.emplace_back(new FwdVariant<4, LSTM, TW, 32, 16, 32, K512, 16, true>());     // H=512 grid 64 x groups
  v.emplace_back(new FwdVariant<4, GRU, TW, 96, 16, 16, 16, 1, false>());
  v.emplace_back(new FwdVariant<4, GRU, TW, 96, 16, 16, 16, 4, false>());
  v.emplace_back(new FwdVariant<4, GRU, TW, 96, 16, 32, K512, 1, false>());
  v.emplace_back(new FwdVariant<4, GRU, TW, 96, 16, 32, K512, BC512, false>());
  v.emplace_back(new FwdVariant<4, GRU, TW, 24, 16, 64, K1024, 1, true>());
  v.emplace_back(new FwdVariant<4, GRU, TW, 24, 16, 64, K1024, 8, true>());
  v.emplace_back(new FwdVariant<4, GRU, TW, 24, 16, 16, 16, 16, true>());
  v.emplace_back(new FwdVariant<4, GRU, TW, 24, 16, 32, K512, 16, true>());
  v.emplace_back(new FwdVariant<4, RNN_TANH, TW, 32, 16, 16, 16, 4, false>());   // H=256 C=8
  v.emplace_back(new FwdVariant<4, RNN_TANH, TW, 32, 16, 32, 32, 4, false>());   // H=512 C=16
  v.emplace_back(new FwdVariant<4, RNN_RELU, TW, 64, 16, 64, K1024, 4, false>());  // H=1024 C=16 (U=64)
}

// v5 (persist_fwd_v5.cuh, DRAFT never run on a GPU): tensor-core matvec, 16-bit LSTM, 16 batch columns per chunk.
template <typename TW>
void add_variants_v5(std::vector<std::unique_ptr<Variant>>& v) {
  if constexpr (sizeof(TW) == 2) {
    v.emplace_back(new FwdVariant<5, LSTM, TW, 128, 16, 16, 16, 16, false>());  // H=256 C=8: 8 row tiles x 2 k
    v.emplace_back(new FwdVariant<5, LSTM, TW, 128, 16, 32, 32, 16, false>());  // H=512 C=16
    v.emplace_back(new FwdVariant<5, LSTM, TW, 32, 16, 64, 64, 16, true>());    // H=1024 grid 128: 2 x 8
  }
}

// v6 (src/cuda/persistent_fwd_v6.cuh, shipped for small batches): one tile of at most BC columns per cluster, so a
// plan needs ceil(B / BC) co-resident clusters per direction (refused otherwise, like the library's choose()).
template <int CELL, typename TW, int H_, int C_, int BC, int KGR>
class V6Variant final : public Variant {
  using Cfg = FwdConfigV6<CELL, TW, H_, C_, BC, KGR>;
  static const void* kfn() { return reinterpret_cast<const void*>(&persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR>); }

 public:
  std::string name() const override {
    char b[128];
    snprintf(b, sizeof b, "v6_%s_%s_H%d_cl%d_kgr%d_bc%d", cell_name(CELL), dtype_name(DTypeOf<TW>::v), H_, C_, KGR,
             BC);
    return b;
  }
  int cell() const override { return CELL; }
  DType dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return H_; }
  bool grid_mode() const override { return false; }

  Plan plan(int B, int D) const override {
    Plan pl;
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    pl.C = C_;
    cudaFuncAttributes fa;
    cudaFuncGetAttributes(&fa, kfn());
    pl.regs = fa.numRegs;
    pl.local_bytes = int(fa.localSizeBytes);
    pl.smem = Cfg::smem_bytes();
    char msg[256];
    if (pl.smem > prop.sharedMemPerBlockOptin) {
      snprintf(msg, sizeof msg, "needs %zu B of shared memory per CTA", pl.smem);
      pl.why = msg;
      return pl;
    }
    if (C_ > 8) cudaFuncSetAttribute(kfn(), cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    cudaFuncSetAttribute(kfn(), cudaFuncAttributeMaxDynamicSharedMemorySize, int(pl.smem));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(C_, 1, 1);
    cfg.blockDim = dim3(Cfg::NT, 1, 1);
    cfg.dynamicSmemBytes = pl.smem;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = C_;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kfn(), &cfg) != cudaSuccess) clusters = 0;
    cudaGetLastError();
    pl.max_active = clusters;
    pl.BT = BC;
    pl.groups = (B + BC - 1) / BC;
    if (pl.groups * D > clusters) {
      snprintf(msg, sizeof msg, "needs %d co-resident clusters of %d, the device holds %d", pl.groups * D, C_,
               clusters);
      pl.why = msg;
      return pl;
    }
    pl.ok = true;
    return pl;
  }

  cudaError_t run(const DevProblem& d, const Plan& pl, cudaStream_t s) const override {
    FwdParams<TW> p{};
    p.T = d.T;
    p.B = d.B;
    p.H = d.H;
    p.Hr = d.H;
    p.C = pl.C;
    p.BT = pl.BT;
    p.D = d.D;
    p.y = static_cast<TW*>(d.y);
    p.lengths = d.lengths;
    for (int i = 0; i < 2; ++i) {
      p.xproj[i] = d.xproj[i];
      p.whh[i] = static_cast<const TW*>(d.whh[i]);
      p.bx[i] = d.bx[i];
      p.bh[i] = d.bh[i];
      p.h0[i] = d.h0[i];
      p.c0[i] = d.c0[i];
      p.hn[i] = d.hn[i];
      p.cn[i] = d.cn[i];
    }
    p.prof = d.prof;
    p.clip = 0.f;
    cudaLaunchConfig_t cfg = {};
    cfg.blockDim = dim3(Cfg::NT, 1, 1);
    cfg.dynamicSmemBytes = pl.smem;
    cfg.stream = s;
    cfg.gridDim = dim3(C_ * pl.groups, d.D, 1);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = C_;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, persist_fwd_v6_kernel<CELL, TW, H_, C_, BC, KGR>, p);
  }
};

// v6: the library's small-batch set (persistent_kernels_v6.cuh), LSTM and GRU at H = 256 / 512.
template <typename TW>
void add_variants_v6(std::vector<std::unique_ptr<Variant>>& v) {
  constexpr bool w16 = sizeof(TW) == 2;
  v.emplace_back(new V6Variant<LSTM, TW, 256, 8, 1, 2>());
  v.emplace_back(new V6Variant<LSTM, TW, 256, 8, 2, 2>());
  v.emplace_back(new V6Variant<LSTM, TW, 256, 16, 1, 2>());  // one unit per warp
  v.emplace_back(new V6Variant<LSTM, TW, 512, 16, 1, w16 ? 4 : 2>());
  v.emplace_back(new V6Variant<LSTM, TW, 512, 16, 2, w16 ? 4 : 2>());
  v.emplace_back(new V6Variant<GRU, TW, 256, 8, 1, 2>());
  v.emplace_back(new V6Variant<GRU, TW, 256, 16, 1, 2>());
  v.emplace_back(new V6Variant<GRU, TW, 512, 16, 1, w16 ? 4 : 2>());
}

// Earlier versions stay in the source (README.md has their numbers); build them with -DLAB_WITH_V1 / -DLAB_WITH_V2.
template <typename TW>
void add_variants(std::vector<std::unique_ptr<Variant>>& v) {
#ifdef LAB_WITH_V1
  add_variants_v1<TW>(v);
#endif
#ifdef LAB_WITH_V2
  add_variants_v2<TW>(v);
#endif
  add_variants_v3<TW>(v);
  add_variants_v4<TW>(v);
  add_variants_v6<TW>(v);
#ifdef LAB_WITH_V5
  add_variants_v5<TW>(v);
#endif
}

}  // namespace lab
