// One persist_fwd_v4_kernel instantiation behind the Kernel interface (persistent_plan.h): capacity planning and the
// launch (cluster launch, or cooperative launch in grid mode). Included by persistent_{f32,bf16,f16}.cu only.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "cuda_common.cuh"
#include "persistent_fwd.cuh"
#include "persistent_plan.h"
#include "persistent_xprod.cuh"  // xprod_smem
#include "standard_plan.h"  // env_switch01

namespace openrnn {
namespace cuda {
namespace persist {

template <typename TW>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr openrnn_data_type v = OPENRNN_DATA_FLOAT;
};
template <>
struct DTypeOf<__nv_bfloat16> {
  static constexpr openrnn_data_type v = OPENRNN_DATA_BFLOAT16;
};
template <>
struct DTypeOf<__half> {
  static constexpr openrnn_data_type v = OPENRNN_DATA_HALF;
};

// The API's cell of a kernel's Cell (persistent_common.cuh).
inline openrnn_cell api_cell(int cell) {
  return cell == LSTM       ? OPENRNN_CELL_LSTM
         : cell == GRU      ? OPENRNN_CELL_GRU
         : cell == GRU_RB   ? OPENRNN_CELL_GRU_RESET_BEFORE
         : cell == RNN_TANH ? OPENRNN_CELL_RNN_TANH
                            : OPENRNN_CELL_RNN_RELU;
}

// How many clusters of `cl` CTAs (NT threads, smem bytes of dynamic shared memory each) the device runs at once, the
// smallest over the nf kernels in fns (0 where the query fails: the caller refuses the plan).
inline int max_active_clusters(const void* const* fns, int nf, int cl, int NT, size_t smem) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(cl, 1, 1);
  cfg.blockDim = dim3(NT, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = cl;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  int clusters = INT_MAX;
  for (int i = 0; i < nf; ++i) {
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, fns[i], &cfg) != cudaSuccess) {
      cudaGetLastError();
      n = 0;
    }
    clusters = n < clusters ? n : clusters;
  }
  return clusters == INT_MAX ? 0 : clusters;
}

// Raises the dynamic shared-memory limit of kernel f on the current device to `bytes`; never lowers it. The limit is
// state of the function, shared by every plan in the process, so a setter whose size varies from call to call must
// not undo what an earlier cached plan relies on. pick_xprod's sizes vary with the input width Il: before session 48
// it set the limit on every cache miss, so a later miss for a smaller Il left it below a cached plan's size for a
// larger Il, and that plan's launch failed with cudaErrorInvalidValue (float32 B = 1 at H <= 256 with PERSISTENT
// forced, two input widths in one process). false where the device refuses the size (the error is cleared).
inline bool raise_dyn_smem(const void* f, size_t bytes) {
  static std::mutex mu;
  static std::map<std::pair<int, const void*>, size_t> limit;  // the largest limit set, per (device, kernel)
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  std::lock_guard<std::mutex> lock(mu);
  size_t& cur = limit[std::make_pair(dev, f)];
  if (bytes <= cur) return true;
  if (cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  cur = bytes;
  return true;
}

// Producers of the input projection inside a persistent launch (persistent_xprod.cuh, Kernel::xprod_plan): the
// first count P of `cands` that is a multiple of the cluster size `cl`, whose shared memory (the larger of the
// consumers' `cons_smem` and xprod_smem(ncol, P, Il)) both kernel instantiations (inference `fi`, training `ft`)
// accept, and whose clusters are co-resident beside the `cons` consumer CTAs per direction, for D directions (the
// launch is cooperative: every cluster at once, or it fails; never a consumer waiting on a producer that cannot
// start). {P, shared memory}, or {0, 0} where no count fits. Cached: the queries cost tens of µs of host time.
inline std::pair<int, size_t> pick_xprod(const cudaDeviceProp& prop, const void* fi, const void* ft,
                                         std::initializer_list<int> cands, int cl, int NT, size_t cons_smem, int ncol,
                                         int Il, int cons, int D) {
  static std::mutex mu;
  static std::map<std::tuple<int, const void*, int, int, size_t, int, int, int>, std::pair<int, size_t>> cache;
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) dev = -1;
  const auto key = std::make_tuple(dev, fi, cl, Il, cons_smem, ncol, cons, D);
  std::lock_guard<std::mutex> lock(mu);
  const auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::pair<int, size_t> best{0, 0};
  for (const int P : cands) {
    if (P % cl != 0) continue;
    const size_t sm = std::max(cons_smem, xprod_smem(ncol, P, Il));
    if (sm > prop.sharedMemPerBlockOptin) continue;
    bool ok = true;
    for (const void* f : {fi, ft}) ok = raise_dyn_smem(f, sm) && ok;
    if (!ok) continue;
    const void* fns[2] = {fi, ft};
    if (static_cast<long long>(max_active_clusters(fns, 2, cl, NT, sm)) * cl < static_cast<long long>(cons + P) * D)
      continue;
    best = {P, sm};
    break;
  }
  cache.emplace(key, best);
  return best;
}

// Cluster-mode plan, shared by the forward and backward kernels: the largest batch tile (a multiple of BC, at most
// 256) whose shared memory (smem(bt)) fits, the cluster occupancy of every kernel in fns at that size (the smallest
// counts), then the tile that spreads B over the clusters each of the D directions gets. waves > 1: the tiles do
// not all run at once (extra clusters wait for free SMs; correct, never deadlocked, but slower).
template <typename SmemFn>
Plan plan_cluster(const cudaDeviceProp& prop, int B, int D, int C, int BC, int NT, const void* const* fns, int nf,
                  SmemFn smem, int H, double wmb) {
  Plan pl;
  pl.C = C;
  char msg[320];
  const size_t limit = prop.sharedMemPerBlockOptin;
  int bt_max = 0;
  for (int bt = BC; bt <= 256; bt += BC)
    if (smem(bt) <= limit) bt_max = bt;
  if (bt_max == 0) {
    snprintf(msg, sizeof msg, "H=%d: the W_hh slice and exchange buffers need %zu B of shared memory per CTA, this "
             "GPU allows %zu", H, smem(BC), limit);
    pl.why = msg;
    return pl;
  }
  const size_t smem_max = smem(bt_max);
  for (int i = 0; i < nf; ++i)
    if ((C > 8 && cudaFuncSetAttribute(fns[i], cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) ||
        cudaFuncSetAttribute(fns[i], cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_max)) != cudaSuccess) {
      cudaGetLastError();
      pl.why = "cluster attributes refused by the device";
      return pl;
    }
  const int clusters = max_active_clusters(fns, nf, C, NT, smem_max);
  if (clusters < 1) {
    snprintf(msg, sizeof msg,
             "H=%d: W_hh (%.1f MB per direction) needs a cluster of %d CTAs with %zu B of shared memory each, which "
             "this GPU cannot schedule",
             H, wmb, C, smem_max);
    pl.why = msg;
    return pl;
  }
  const int tiles = clusters / D > 0 ? clusters / D : 1;
  int bt = (B + tiles - 1) / tiles;
  bt = (bt + BC - 1) / BC * BC;
  if (bt > bt_max) bt = bt_max;
  // More tiles than clusters at once: as many waves as the largest tile needs, each as full and the tiles as small
  // as that allows (B = 64 over 7 clusters of at most 8: two waves of tiles of 5, not of 8 with one cluster alone
  // in the second). Session 25, with the multi-wave backward; OPENRNN_PERSIST_BWD_WAVES=0 (developer switch) keeps
  // the widest tiles, as before.
  const int waves = ((B + bt - 1) / bt + tiles - 1) / tiles;
  if (waves > 1 && env_switch01("OPENRNN_PERSIST_BWD_WAVES") != 0)
    bt = ((B + tiles * waves - 1) / (tiles * waves) + BC - 1) / BC * BC;
  pl.BT = bt;
  pl.groups = (B + bt - 1) / bt;
  pl.waves = (pl.groups + tiles - 1) / tiles;
  pl.smem = smem(bt);
  pl.ok = true;
  return pl;
}

// One launch of a persistent kernel on stream s: grid (nx, D) of nt-thread CTAs with smem bytes of dynamic shared
// memory, in clusters of `cluster` CTAs along x, and/or cooperative (every CTA co-resident or the launch fails; never
// a deadlock): cluster = 0 is grid mode (cooperative), coop = true makes a cluster launch cooperative too (v10, whose
// clusters wait on each other through global memory). P: the kernel's parameter block, passed by value.
// pdl: launched as a programmatic dependent of the previous kernel on s (LaunchArgs::prep, kPrepPdl; the kernel calls
// pdl_wait before it reads what that kernel writes).
template <typename P>
void launch_persistent(void (*kernel)(P), const P& p, int nx, int D, int nt, size_t smem, int cluster,
                       cudaStream_t s, bool coop = false, bool pdl = false) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(nx, D, 1);
  cfg.blockDim = dim3(nt, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute at[3];
  int n = 0;
  if (pdl) {
    at[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster > 0) {
    at[n].id = cudaLaunchAttributeClusterDimension;
    at[n].val.clusterDim.x = cluster;
    at[n].val.clusterDim.y = 1;
    at[n].val.clusterDim.z = 1;
    ++n;
  }
  if (cluster == 0 || coop) {
    at[n].id = cudaLaunchAttributeCooperative;
    at[n].val.cooperative = 1;
    ++n;
  }
  cfg.attrs = at;
  cfg.numAttrs = n;
  OPENRNN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, p));
}

// The kernel parameter block of one layer's launch (v4 and v6 take the same one).
template <typename TW>
FwdParams<TW> fwd_params(const LaunchArgs& a, const Plan& pl, int H) {
  FwdParams<TW> p{};
  p.T = a.T;
  p.B = a.B;
  p.H = H;
  p.Hr = a.Hr;
  p.C = pl.C;
  p.BT = pl.BT;
  p.D = a.D;
  p.y = static_cast<TW*>(a.y);
  p.lengths = a.lengths;
  p.prof = nullptr;
  p.clip = a.clip;
  for (int i = 0; i < 2; ++i) {
    p.xproj[i] = a.xproj[i];
    p.whh[i] = static_cast<const TW*>(a.whh[i]);
    p.bx[i] = a.bx[i];
    p.bh[i] = a.bh[i];
    p.h0[i] = a.h0[i];
    p.c0[i] = a.c0[i];
    p.hn[i] = a.hn[i];
    p.cn[i] = a.cn[i];
    p.hy[i] = static_cast<TW*>(a.hy[i]);
    p.cy[i] = static_cast<TW*>(a.cy[i]);
    p.hg[i] = a.hg[i];
    p.flags[i] = a.flags[i];
    p.rs_acts[i] = a.rs_acts[i];
    p.rs_hs[i] = static_cast<TW*>(a.rs_hs[i]);
    p.rs_cs[i] = a.rs_cs[i];
    p.rs_hn[i] = a.rs_hn[i];
    p.rs_rh[i] = static_cast<TW*>(a.rs_rh[i]);
    p.wih[i] = static_cast<const TW*>(a.wih[i]);
  }
  p.xprod = a.xprod;
  p.xcons = 0;   // set by the launch that has producers
  p.xchunk = 0;
  p.Il = a.Il;
  p.xin = static_cast<const TW*>(a.xin);
  return p;
}

template <int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID>
class KernelImpl final : public Kernel {
  using Cfg = FwdConfigV4<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
  // TRAIN = true: the instantiation that also writes the training reserve; the inference one carries none of that
  // code (it cost 1.7% on geometric mean, 11% at LSTM B=1 H=256, as a runtime branch: docs/performance.md).
  // Planning sets attributes on, and takes the occupancy of, both.
  static const void* kfn(bool train) {
    return train ? reinterpret_cast<const void*>(&persist_fwd_v4_kernel<CELL, TW, R, NW, KPW, KREG, BC, GRID, true>)
                 : reinterpret_cast<const void*>(&persist_fwd_v4_kernel<CELL, TW, R, NW, KPW, KREG, BC, GRID, false>);
  }

 public:
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return Cfg::H; }
  int bc() const override { return BC; }
  bool grid_mode() const override { return GRID; }
  std::string name() const override {
    char b[96];
    snprintf(b, sizeof b, "H%d_%s%d_R%d_kreg%d_bc%d", Cfg::H, GRID ? "grid" : "cluster", Cfg::H / Cfg::U, R, KREG,
             BC);
    return b;
  }

  Plan plan(const cudaDeviceProp& prop, int B, int D) const override {
    Plan pl;
    const size_t limit = prop.sharedMemPerBlockOptin;
    pl.C = Cfg::H / Cfg::U;
    char msg[320];
    const double wmb = double(Cfg::G) * Cfg::H * Cfg::H * sizeof(TW) / (1 << 20);
    if (GRID) {
      int per_sm = INT_MAX;
      for (bool train : {false, true}) {
        int n = 0;
        if (cudaFuncSetAttribute(kfn(train), cudaFuncAttributeMaxDynamicSharedMemorySize, int(limit)) !=
                cudaSuccess ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kfn(train), Cfg::NT, Cfg::smem_bytes(BC, BC)) !=
                cudaSuccess) {
          cudaGetLastError();
          pl.why = "occupancy query failed";
          return pl;
        }
        per_sm = n < per_sm ? n : per_sm;
      }
      const int capacity = per_sm * prop.multiProcessorCount;
      if (pl.C * D > capacity) {
        snprintf(msg, sizeof msg,
                 "H=%d: W_hh (%.1f MB per direction) is spread over %d CTAs per direction, %d for D=%d, but this GPU "
                 "holds %d co-resident CTAs of this kernel",
                 Cfg::H, wmb, pl.C, pl.C * D, D, capacity);
        pl.why = msg;
        return pl;
      }
      int groups = capacity / (pl.C * D);
      const int want = (B + BC - 1) / BC;
      if (groups > want) groups = want;
      if (groups > kMaxGroups) groups = kMaxGroups;
      if (groups < 1) groups = 1;
      const int bt = (B + groups - 1) / groups;
      pl.groups = (B + bt - 1) / bt;
      pl.BT = bt;
      pl.smem = Cfg::smem_bytes(BC, (bt + BC - 1) / BC * BC);
      if (pl.smem > limit) {
        snprintf(msg, sizeof msg,
                 "H=%d B=%d: a batch tile of %d sequences needs %zu B of shared memory per CTA, this GPU allows %zu",
                 Cfg::H, B, bt, pl.smem, limit);
        pl.why = msg;
        return pl;
      }
      pl.ok = true;
      return pl;
    }
    const void* fns[2] = {kfn(false), kfn(true)};
    return plan_cluster(prop, B, D, pl.C, BC, Cfg::NT, fns, 2, [](int bt) { return Cfg::smem_bytes(bt, bt); }, Cfg::H,
                        wmb);
  }

  void launch(const LaunchArgs& a, const Plan& pl, cudaStream_t s) const override {
    const FwdParams<TW> p = fwd_params<TW>(a, pl, Cfg::H);
    if (GRID && !(a.prep & kPrepFlags))
      for (int i = 0; i < a.D; ++i)
        OPENRNN_CUDA_CHECK(cudaMemsetAsync(a.flags[i], 0, sizeof(unsigned) * kMaxGroups, s));
    launch_persistent(a.rs_acts[0] ? persist_fwd_v4_kernel<CELL, TW, R, NW, KPW, KREG, BC, GRID, true>
                                   : persist_fwd_v4_kernel<CELL, TW, R, NW, KPW, KREG, BC, GRID, false>,
                      p, pl.C * pl.groups, a.D, Cfg::NT, pl.smem, GRID ? 0 : pl.C, s, false, (a.prep & kPrepPdl) != 0);
  }
};

// The configuration set per storage type (dev/lab/README.md: the capacity arithmetic and the measured choice).
// RNN (G = 1): one batch chunk width per H (BC = 4: small-B matvec padded 4x, which the G = 1 matvec affords); H=1024
// fits a cluster of 16 (U = 64, 4 MB float32: half registers, half shared memory), so no grid mode is needed.
template <typename TW>
void add_kernels(std::vector<std::unique_ptr<Kernel>>& v) {
  constexpr bool w16 = sizeof(TW) == 2;
  constexpr int K512 = w16 ? 32 : 16, K1024 = w16 ? 64 : 32, BC512 = w16 ? 4 : 2;
  v.emplace_back(new KernelImpl<LSTM, TW, 128, 16, 16, 16, 1, false>());  // H=256 cluster 8
  v.emplace_back(new KernelImpl<LSTM, TW, 128, 16, 16, 16, 4, false>());
  v.emplace_back(new KernelImpl<LSTM, TW, 128, 16, 32, K512, 1, false>());  // H=512 cluster 16
  v.emplace_back(new KernelImpl<LSTM, TW, 128, 16, 32, K512, BC512, false>());
  v.emplace_back(new KernelImpl<LSTM, TW, 32, 16, 64, K1024, 1, true>());  // H=1024 grid 128
  v.emplace_back(new KernelImpl<LSTM, TW, 32, 16, 64, K1024, 8, true>());
  v.emplace_back(new KernelImpl<LSTM, TW, 32, 16, 16, 16, 16, true>());  // H=256 grid 32 x groups
  v.emplace_back(new KernelImpl<LSTM, TW, 32, 16, 32, K512, 16, true>());  // H=512 grid 64 x groups
  v.emplace_back(new KernelImpl<GRU, TW, 96, 16, 16, 16, 1, false>());
  v.emplace_back(new KernelImpl<GRU, TW, 96, 16, 16, 16, 4, false>());
  v.emplace_back(new KernelImpl<GRU, TW, 96, 16, 32, K512, 1, false>());
  v.emplace_back(new KernelImpl<GRU, TW, 96, 16, 32, K512, BC512, false>());
  v.emplace_back(new KernelImpl<GRU, TW, 24, 16, 64, K1024, 1, true>());
  v.emplace_back(new KernelImpl<GRU, TW, 24, 16, 64, K1024, 8, true>());
  v.emplace_back(new KernelImpl<GRU, TW, 24, 16, 16, 16, 16, true>());
  v.emplace_back(new KernelImpl<GRU, TW, 24, 16, 32, K512, 16, true>());
  // GRU reset-before: cluster mode only (its second exchange per step would be a second grid round trip at H=1024).
  v.emplace_back(new KernelImpl<GRU_RB, TW, 96, 16, 16, 16, 1, false>());  // H=256 cluster 8
  v.emplace_back(new KernelImpl<GRU_RB, TW, 96, 16, 16, 16, 4, false>());
  v.emplace_back(new KernelImpl<GRU_RB, TW, 96, 16, 32, K512, 1, false>());  // H=512 cluster 16
  v.emplace_back(new KernelImpl<GRU_RB, TW, 96, 16, 32, K512, BC512, false>());
  v.emplace_back(new KernelImpl<RNN_TANH, TW, 32, 16, 16, 16, 4, false>());  // H=256 cluster 8
  v.emplace_back(new KernelImpl<RNN_TANH, TW, 32, 16, 32, 32, 4, false>());  // H=512 cluster 16
  v.emplace_back(new KernelImpl<RNN_TANH, TW, 64, 16, 64, K1024, 4, false>());  // H=1024 cluster 16
  v.emplace_back(new KernelImpl<RNN_RELU, TW, 32, 16, 16, 16, 4, false>());
  v.emplace_back(new KernelImpl<RNN_RELU, TW, 32, 16, 32, 32, 4, false>());
  v.emplace_back(new KernelImpl<RNN_RELU, TW, 64, 16, 64, K1024, 4, false>());
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
