// LAB RECORD, not built: PERSISTENT v8, the cluster variant of v7 (measured on the H100, 2026-11-21, and not
// shipped: slower than v7 on every row; dev/lab/README.md "v8" and docs/performance.md "PERSISTENT v7" have the
// numbers). It compiled against the library at commit 8082f1d plus the v7 helper refactor (v7_load_w, mma::warp_k16,
// mma::store_acc, v7_cell, v7_outputs in src/cuda/persistent_fwd_v7.cuh); to run it again, include it from
// src/cuda/persistent_kernels_v7.cuh, register the KernelV8Impl objects at the end of this file in add_kernels_v7,
// and give choose() a rank for version 8 (taken only when its clusters all run at once, as v6).
// PERSISTENT forward kernel v8, v7's tensor-core step with the exchange inside one thread-block cluster: float16 /
// bfloat16 LSTM and GRU (linear-before-reset) at compiled H = 256 and 512, one cluster of C = 16 CTAs per 16
// sequences, both directions when D = 2 (blockIdx.y).
//
// Why. v7 exchanges h_t through L2 with one counter per row group; its step has a floor of ~2.5 µs (~4500 cycles:
// the exchange stores acknowledged before the release arrival, the arrival reaching L2, the poller's acquire load,
// then an L2 round trip for the state rows; docs/performance.md, "PERSISTENT v7"). v8 keeps the whole split state of
// its 16 sequences ([32, H] 16-bit rows, hi and lo, double-buffered by step parity) in every CTA's shared memory:
// each CTA pushes the hi / lo rows of its own units into all C CTAs over DSMEM (16-byte st.shared::cluster) and
// arrives on the cluster barrier; the next step waits on it and multiplies straight from shared memory (no cp.async,
// no L2 on the critical path).
//
// Decomposition. CTA `rank` of cluster `group` owns the UB = H/16 units [rank*UB, (rank+1)*UB) (all G gates: the
// cell update is local) and rows [32*group, 32*group + 32) of the split state (sequences 16*group ...); it holds the
// G*UB rows of W_hh of its units in shared memory for the whole sequence (LSTM H = 512: 128 rows, 130 KB). Warps: 2
// along M (16 rows each) times G along N (gate g's UB columns). Per step t:
//  1. the thread's input projections (registers, before the wait);
//  2. barrier.cluster.wait.acquire (the arrival of every CTA's push of h_{t-1});
//  3. product: A = this step's state buffer, all k, x the resident W slice (mma::warp_k16); accumulators -> Cs;
//  4. cell (v7_cell): h / c in registers; hi and lo of h_t staged as [32 rows][UB] 16-bit in shared memory;
//  5. push: every CTA's staged tile into buffer (t+1)&1 of all C CTAs (rows x UB units, 16-byte stores), then
//     barrier.cluster.arrive.release; then the step's global writes (v7_outputs).
// Before step 0 every CTA stages h0 and pushes it into buffer 0 (after a first full cluster barrier: DSMEM may only
// be written once every peer runs); after the last step a final wait keeps the cluster alive until every push landed.
// Why the double buffer is safe: CTA P writes Q's buffer (t+1)&1 at step t; Q read that buffer at step t-1, and P
// passed the step-t wait, which needed Q's arrival made after Q's step t-1 product. Units past Hr (padding of the
// compiled H) and rows past 2B stay exact zeros in every buffer (zeroed at the start, pushed as zeros).
// Semantics (ragged lengths, reverse direction, clipping, training reserve) are v7's / v4's (v7_outputs).
// Deterministic: fixed summation order, no atomics.
#pragma once

#include "persistent_fwd_v7.cuh"  // src/cuda
#include "persistent_kernels.cuh"  // src/cuda: plan_cluster, fwd_params, DTypeOf, api_cell
#include "persistent_plan.h"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, int H_, int UB>
struct FwdConfigV8 {
  static constexpr int G = CellTraits<CELL>::G;
  static_assert(G == 4 || G == 3, "v8 is built for LSTM and GRU");
  static constexpr int H = H_, C = H_ / UB;  // compiled size, cluster size
  static_assert(C <= 16 && C * UB == H_, "the cluster holds all units");
  static constexpr int MB = 32, NSEQ = MB / 2;  // rows of the split state per cluster (hi, lo per sequence)
  static constexpr int WM = 2, NWARP = WM * G, NT = NWARP * 32, NB = G * UB;
  static constexpr int TM = MB / WM, MT = TM / 16, NTL = UB / 8;
  static constexpr int CLD = NB + 8;
  static constexpr int LDW = H_ + 8;  // W slice and state rows, halves (conflict-free ldmatrix)
  static constexpr int EPT = (NSEQ * UB + NT - 1) / NT;
  static constexpr int CHR = UB / 8;  // 16-byte chunks per staged row
  // Shared memory: W slice [NB][LDW] TW | state [2][MB][LDW] TW | Cs [MB][CLD] float | staged [MB][UB] TW | lens.
  static constexpr size_t smem_bytes =
      size_t(NB) * LDW * 2 + size_t(2) * MB * LDW * 2 + size_t(MB) * CLD * 4 + size_t(MB) * UB * 2 + NSEQ * 4;
};

template <int CELL, typename TW, int H_, int UB, bool TRAIN = false>
__global__ void __launch_bounds__(FwdConfigV8<CELL, H_, UB>::NT, 1) persist_fwd_v8_kernel(const FwdParams<TW> p) {
  using Cfg = FwdConfigV8<CELL, H_, UB>;
  constexpr int G = Cfg::G, C = Cfg::C, NT = Cfg::NT, NB = Cfg::NB, TM = Cfg::TM, MT = Cfg::MT, NTL = Cfg::NTL;
  constexpr int MB = Cfg::MB, NSEQ = Cfg::NSEQ, CLD = Cfg::CLD, LDW = Cfg::LDW, EPT = Cfg::EPT, CHR = Cfg::CHR;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wm = warp % Cfg::WM, wg = warp / Cfg::WM;
  const int dir = blockIdx.y;
  const bool reverse = dir == 1;
  const int T = p.T, B = p.B, Hr = p.Hr, Hx = p.H;
  const int rank = blockIdx.x % C, group = blockIdx.x / C;
  const int u0 = rank * UB, b0 = group * NSEQ;
  const int K16 = (Hr + 15) / 16 * 16;  // k loop: columns past Hr are zero in W and in the state

  extern __shared__ __align__(16) unsigned char smem_raw[];
  TW* Ws = reinterpret_cast<TW*>(smem_raw);                 // [NB][LDW]
  TW* As = Ws + NB * LDW;                                   // [2][MB][LDW]
  float* Cs = reinterpret_cast<float*>(As + 2 * MB * LDW);  // [MB][CLD]
  TW* Stg = reinterpret_cast<TW*>(Cs + MB * CLD);           // [MB][UB]
  int* lens = reinterpret_cast<int*>(Stg + MB * UB);         // [NSEQ]

  v7_load_w<TW>(Ws, LDW, p.whh[dir], Hr, u0, UB, NB, H_, tid, NT);
  {
    const TW zero = Store<TW>::from_f(0.f);
    for (int i = tid; i < 2 * MB * LDW; i += NT) As[i] = zero;
  }
  for (int i = tid; i < NSEQ; i += NT) {
    const int b = b0 + i;
    lens[i] = b < B ? (p.lengths ? p.lengths[b] : T) : 0;
  }

  // This thread's cell elements e = tid + i*NT -> (sequence b0 + e / UB, unit u0 + e % UB).
  float hreg[EPT], creg[EPT], gbx[EPT][G], gbh[EPT][G];
#pragma unroll
  for (int i = 0; i < EPT; ++i) {
    const int e = tid + i * NT, b = b0 + e / UB, u = u0 + e % UB;
    const bool live = e < NSEQ * UB && b < B && u < Hr;
    hreg[i] = live ? p.h0[dir][size_t(b) * Hr + u] : 0.f;
    creg[i] = live && CELL == LSTM ? p.c0[dir][size_t(b) * Hr + u] : 0.f;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      gbx[i][g] = live ? p.bx[dir][g * Hr + u] : 0.f;
      gbh[i][g] = live ? p.bh[dir][g * Hr + u] : 0.f;
    }
  }
  // Stage h (hi row 2bl, lo row 2bl+1; zeros for padding units / sequences) and push the tile into buffer `buf` of
  // every CTA of the cluster.
  auto stage = [&]() {
#pragma unroll
    for (int i = 0; i < EPT; ++i) {
      const int e = tid + i * NT, bl = e / UB, ul = e % UB, b = b0 + bl, u = u0 + ul;
      if (e >= NSEQ * UB) continue;
      const bool live = b < B && u < Hr;
      store_state(Stg + (2 * bl) * UB + ul, UB, live ? hreg[i] : 0.f);
    }
  };
  auto push = [&](int buf) {
    TW* dst0 = As + buf * MB * LDW + u0;
    for (int i = tid; i < C * MB * CHR; i += NT) {
      const int q = i / (MB * CHR), r = (i / CHR) % MB, ch = i % CHR;
      const float4 v = *reinterpret_cast<const float4*>(Stg + r * UB + ch * 8);
      st_dsmem_v4(map_dsmem(dst0 + r * LDW + ch * 8, q), v);
    }
  };
  stage();
  cluster_arrive_release();  // every CTA of the cluster runs and has zeroed its buffers before any DSMEM write
  cluster_wait_acquire();
  push(0);
  cluster_arrive_release();

  const float* xp = p.xproj[dir];
  for (int t = 0; t < T; ++t) {
    float xv[EPT][G];
#pragma unroll
    for (int i = 0; i < EPT; ++i) {
      const int e = tid + i * NT, bl = e / UB, b = b0 + bl, u = u0 + e % UB;
      const bool live = e < NSEQ * UB && b < B && u < Hr;
      const int len = live ? lens[bl] : 0;
      const int te = t >= len ? 0 : (reverse ? len - 1 - t : t);
      const float* row = xp + (size_t(te) * B + b) * (G * Hx) + u;
#pragma unroll
      for (int g = 0; g < G; ++g) xv[i][g] = t < len ? row[g * Hx] : 0.f;
    }
    cluster_wait_acquire();  // h_{t-1} of every unit is in this CTA's buffer t&1

    float acc[MT][NTL][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NTL; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    const TW* as = As + (t & 1) * MB * LDW + (wm * TM) * LDW;
    const TW* bs = Ws + (wg * UB) * LDW;
#pragma unroll 4
    for (int k = 0; k < K16; k += 16) mma::warp_k16<TW, MT, NTL>(acc, as + k, LDW, bs + k, LDW, lane);
    mma::store_acc<MT, NTL>(acc, Cs, CLD, wm * TM, wg * UB, lane);
    __syncthreads();

    float act[EPT][G], sn[EPT];
#pragma unroll
    for (int i = 0; i < EPT; ++i) {
      const int e = tid + i * NT, bl = e / UB, ul = e % UB, b = b0 + bl, u = u0 + ul;
#pragma unroll
      for (int g = 0; g < G; ++g) act[i][g] = 0.f;
      sn[i] = 0.f;
      if (e < NSEQ * UB && b < B && u < Hr && t < lens[bl]) {
        const float* cc = Cs + (2 * bl) * CLD + ul;
        float sg[G];
#pragma unroll
        for (int g = 0; g < G; ++g) sg[g] = __fadd_rn(cc[g * UB], cc[CLD + g * UB]);  // hi row + lo row
        v7_cell<CELL>(xv[i], gbx[i], gbh[i], sg, p.clip, hreg[i], creg[i], act[i], sn[i]);
      }
    }
    if (t + 1 < T) {
      stage();
      __syncthreads();
      push((t + 1) & 1);
    }
    cluster_arrive_release();
#pragma unroll
    for (int i = 0; i < EPT; ++i) {
      const int e = tid + i * NT, bl = e / UB, b = b0 + bl, u = u0 + e % UB;
      if (!(e < NSEQ * UB && b < B && u < Hr)) continue;
      v7_outputs<CELL, TW, TRAIN>(p, dir, t, lens[bl], b, u, hreg[i], creg[i], act[i], sn[i]);
    }
  }
  cluster_wait_acquire();  // matches the last arrival: no CTA leaves while a peer may still write into it
}


// One v8 configuration (compiled H, UB = H / 16 units per CTA, clusters of 16); bc() = 16 sequences per cluster.
template <int CELL, typename TW, int H_, int UB>
class KernelV8Impl final : public Kernel {
  using Cfg = FwdConfigV8<CELL, H_, UB>;
  static const void* kfn(bool train) {
    return train ? reinterpret_cast<const void*>(&persist_fwd_v8_kernel<CELL, TW, H_, UB, true>)
                 : reinterpret_cast<const void*>(&persist_fwd_v8_kernel<CELL, TW, H_, UB, false>);
  }

 public:
  openrnn_cell cell() const override { return api_cell(CELL); }
  openrnn_data_type dtype() const override { return DTypeOf<TW>::v; }
  int H() const override { return H_; }
  int bc() const override { return Cfg::NSEQ; }
  bool grid_mode() const override { return false; }
  int version() const override { return 8; }
  int ub() const override { return UB; }
  std::string name() const override {
    char b[96];
    snprintf(b, sizeof b, "v8_H%d_cluster%d_ub%d", H_, Cfg::C, UB);
    return b;
  }
  Plan plan(const cudaDeviceProp& prop, int B, int D) const override {
    const void* fns[2] = {kfn(false), kfn(true)};
    const double wmb = double(Cfg::G) * H_ * H_ * sizeof(TW) / (1 << 20);
    return plan_cluster(prop, B, D, Cfg::C, Cfg::NSEQ, Cfg::NT, fns, 2,
                        [](int bt) { return bt <= Cfg::NSEQ ? Cfg::smem_bytes : SIZE_MAX; }, H_, wmb);
  }
  void launch(const LaunchArgs& a, const Plan& pl, cudaStream_t s) const override {
    FwdParams<TW> p = fwd_params<TW>(a, pl, H_);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(Cfg::C * pl.groups, a.D, 1);
    cfg.blockDim = dim3(Cfg::NT, 1, 1);
    cfg.dynamicSmemBytes = Cfg::smem_bytes;
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = Cfg::C;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    if (a.rs_acts[0])
      OPENRNN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, persist_fwd_v8_kernel<CELL, TW, H_, UB, true>, p));
    else
      OPENRNN_CUDA_CHECK(cudaLaunchKernelEx(&cfg, persist_fwd_v8_kernel<CELL, TW, H_, UB, false>, p));
  }
};

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
