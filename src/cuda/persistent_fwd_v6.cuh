// PERSISTENT forward kernel v6, the small-batch ("warp-row") kernel: one launch runs all T steps of one layer,
// both directions when D = 2 (blockIdx.y), for batch tiles of at most BC sequences per thread-block cluster.
// dev/lab/README.md has the version history, the prediction written before the first run and the measured outcome;
// v4 (persistent_fwd.cuh) keeps the larger batches and grid mode.
//
// Why a second kernel. v4's step costs three shared-memory round trips (split-K partials -> gate threads -> cell
// threads) and two __syncthreads before the cluster barrier; at B <= 4 those round trips, not arithmetic, were the
// step (lab phase profile: ~1050 of ~2550 cycles at LSTM float32 H=256 B=1). v6 removes all of them:
//
// Decomposition. Cluster of C CTAs per batch tile of BC columns (b0 = group * BC); CTA `rank` owns the U = H/C units
// [rank*U, (rank+1)*U); warp w of NW (16, or 8: float32 at H = 256) owns UW = U/NW of them, and every gate row of
// those units: RW = G*UW rows of W_hh.
// Lane l owns the k columns {128 i + 4 l + (0..3)}, i < KG = H/128 (conflict-free float4 reads of h), so each lane
// holds RW x 4*KG weights: the first KGR k groups in registers, the rest in shared memory ([warp][group][row][lane]
// 16-byte quads, conflict-free) for the whole sequence.
//
// Per step t (no __syncthreads, no cluster barrier):
//  1. matvec: acc[row][q] = sum over the lane's k of W[row][k] h_{t-1}[q][k] (fixed order).
//  2. warp reduce-scatter: the NV = GP*UW*BC sums (GP = G rounded up to a power of two, GRU's 4th "gate" is 0) are
//     halved across lanes with xor shuffles (stage s keeps one half, sends the other to lane ^ (16 >> s)), then
//     the remaining xor stages sum whole values: lane l ends with value v = l >> (5 - log2 NV), the same bits in all
//     its 32/NV replicas (a butterfly gives every replica the same float sum: fixed order, bitwise reproducible).
//     Value v = g*E + e, E = UW*BC, e = uw*BC + q: gate g of unit uw, column q.
//  3. gate: the lane adds the input projection (a register loaded one step ahead), the biases and applies gate g's
//     activation. cell: the lane gathers the G gates of its (unit, column) from the lanes holding them (shuffles)
//     and updates c and h, which stay in registers for the whole sequence (every replica computes the same values).
//  4. push: C*E st.async stores per warp (lane = one peer and one of the warp's (unit, column) values) into
//     hs[(t+1)&1] of every CTA, each completing 4 bytes on that CTA's mbarrier bar[(t+1)&1]; then the global
//     writes of the step (y, the training reserve, h_n / c_n) and next step's input-projection load.
//  Step t+1 starts when the CTA's own bar[(t+1)&1] phase completes: all H*BC values of h_t have landed. There is no
//  cluster-wide barrier per step (the first version of v6 used barrier.cluster: push + barrier cost ~1500 of ~2600
//  cycles per step, dev/lab/README.md); a CTA waits only for its incoming data.
// Why the double buffer cannot be overwritten early: CTA P writes Q's hs[(t+1)&1] at step t; Q last read that
// buffer in its step t-1 matvec, and P only reaches step t after receiving all of h_{t-1}, including the values
// every warp of Q pushed after its own step t-1 matvec. Likewise the data of mbarrier phase k+1 cannot arrive
// before phase k completed, and Q re-arms bar[b] (one arrive.expect_tx of H*BC*4 bytes) right after its wait, before
// its own push, which every producer needs first. The re-arm releases at CTA scope only: at cluster scope the release
// cost ~550 ns per step, in the critical path of the re-arming thread's push (session 12, dev/lab/exchange_bench.cu).
// No push at the last step; every CTA waits for all data sent to it before it leaves, and a final cluster barrier
// keeps the cluster alive until the last stores have landed.
//
// Semantics are v4's (FwdParams, persistent_common.cuh): padded units [Hr, H) carry exact zeros, ragged lengths carry
// the state past len and zero-fill y, direction 1 runs each sequence from its own last step, cell clipping, and with
// TRAIN the same entries of STANDARD's reserve (acts, state slots, cell slots, GRU W_hn h + b_hn).
#pragma once

#include <type_traits>

#include "persistent_common.cuh"
#include "persistent_xprod.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

constexpr int ilog2_ce(int n) { return n <= 1 ? 0 : 1 + ilog2_ce(n / 2); }

// One halving stage of the warp reduce-scatter and, recursively, the rest: N values -> N/2, exchanged across lane bit
// 16 >> S (the upper half-warp keeps the upper half). One template per stage, so every index into val is a
// compile-time constant: the loop it replaced (for n = NV; n > 1; n >>= 1) kept val in local memory whenever NV >= 16
// (ptxas: 64- / 128-byte stack frames; session 11), which was most of the two-column tile's extra step time.
template <int N, int S, int NV>
__device__ __forceinline__ void reduce_scatter_stage(float (&val)[NV], int lane) {
  if constexpr (N > 1) {
    constexpr int mask = 16 >> S;
    const bool upper = (lane & mask) != 0;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const float keep = upper ? val[i + N / 2] : val[i];
      const float send = upper ? val[i] : val[i + N / 2];
      val[i] = keep + __shfl_xor_sync(0xffffffffu, send, mask);
    }
    reduce_scatter_stage<N / 2, S + 1>(val, lane);
  }
}

// NW_ (session 40): warps per CTA. 16 is the shipped layout; 8 gives each warp twice the units (UW = U / 8) and
// halves the CTA's loads of h, gathers and pushes (shared-memory / MIO pipe work per step), for a reduce-scatter of
// twice the values in the same number of rounds (NV = 16 at UW = 4: four halving stages and one whole-value stage).
template <int CELL, typename TW, int H_, int C_, int BC, int KGR, int NW_ = 16>
struct FwdConfigV6 {
  using Pair = typename Store<TW>::Pair;
  // Four consecutive k of one row: 16 B (float32) or 8 B (16-bit); one shared-memory load per lane and group.
  struct alignas(2 * sizeof(Pair)) Quad {
    Pair a, b;
  };
  static constexpr int H = H_, C = C_;
  static constexpr int G = CellTraits<CELL>::G;
  static constexpr int GP = G == 3 ? 4 : G;
  static constexpr int NW = NW_, NT = NW * 32;
  static constexpr int U = H / C;
  static constexpr int UW = U / NW;
  static constexpr int RW = G * UW;
  static constexpr int E = UW * BC;
  static constexpr int NV = GP * E;
  static constexpr int P = ilog2_ce(NV);
  static constexpr int SH = 5 - P;  // lane bits that index replicas
  static constexpr int KG = H / 128;
  static constexpr int KGS = KG - KGR;
  static constexpr int PUSH_ROUNDS = (C * E + 31) / 32;
  static_assert(H % 128 == 0 && U % NW == 0 && UW >= 1, "H/C units must split evenly over the warps");
  static_assert((1 << P) == NV && NV <= 32, "one reduced value per lane group: GP*UW*BC a power of two <= 32");
  static_assert(KGR >= 0 && KGR <= KG, "register k groups");
  // Shared memory: W_hh quads [NW][KGS][RW][32] | hs [2][BC][H] float32 | bar [2] mbarriers (8 B each).
  static size_t smem_bytes() { return size_t(NW) * KGS * RW * 32 * sizeof(Quad) + size_t(2) * BC * H * 4 + 16; }
};

// XPK (session 38): the instantiation with the input projection's producers (persistent_xprod.cuh): p.xprod CTAs per
// direction after the p.xcons consumers, in clusters of their own; float32 one-column tiles only. Its own
// instantiation, so that the plain kernel's code does not change (the runtime-branch version of v10's cost 4% there).
template <int CELL, typename TW, int H_, int C_, int BC, int KGR, bool TRAIN = false, bool XPK = false, int NW_ = 16>
__global__ void __launch_bounds__(NW_ * 32, 1) persist_fwd_v6_kernel(const FwdParams<TW> p) {
  using Cfg = FwdConfigV6<CELL, TW, H_, C_, BC, KGR, NW_>;
  using S = Store<TW>;
  using Pair = typename Cfg::Pair;
  using Quad = typename Cfg::Quad;
  constexpr int G = Cfg::G, H = Cfg::H, C = Cfg::C, U = Cfg::U, UW = Cfg::UW, RW = Cfg::RW, E = Cfg::E;
  constexpr int NV = Cfg::NV, SH = Cfg::SH, KG = Cfg::KG, KGS = Cfg::KGS, NW = Cfg::NW;
  constexpr int REP = (1 << SH) - 1;  // replica bits of a lane

  extern __shared__ float4 smem4[];
  static_assert(!XPK || (std::is_same<TW, float>::value && BC == 1 && (CELL == LSTM || CELL == GRU)),
                "producers: float32 one-column LSTM / GRU tiles");
  if constexpr (XPK) {
    if (int(blockIdx.x) >= p.xcons) {
      const int d = blockIdx.y;
      xprod_producer<G, Cfg::NT>(reinterpret_cast<const float*>(p.xin), reinterpret_cast<const float*>(p.wih[d]),
                        const_cast<float*>(p.xproj[d]), p.flags[d] + kXprodCounter, p.lengths, p.T, p.B, p.Hr, H, p.Il,
                        int(blockIdx.x) - p.xcons, p.xprod, p.xchunk, d == 1, reinterpret_cast<float*>(smem4));
      return;
    }
  }
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int dir = blockIdx.y;
  const bool reverse = dir == 1;
  const int T = p.T, B = p.B, Hr = p.Hr;
  const int rank = blockIdx.x % C, group = blockIdx.x / C;
  const int b0 = group * BC;
  const int nb = min(BC, B - b0);
  const int uw0 = rank * U + warp * UW;  // first unit of this warp

  Quad* Wsm = reinterpret_cast<Quad*>(smem4);
  float* hs = reinterpret_cast<float*>(Wsm + NW * KGS * RW * 32);
  uint64_t* bar = reinterpret_cast<uint64_t*>(hs + 2 * BC * H);
  constexpr unsigned kStepBytes = unsigned(BC) * H * 4;  // one phase: every unit of every column, from all CTAs

  // ---- W_hh rows of this warp (row j = gate j / UW of unit uw0 + j % UW), the lane's k groups. Scalar loads (odd
  // Hr is not pair-aligned); once per launch. Padded rows / columns load as 0.
  Pair wreg[RW][KGR > 0 ? 2 * KGR : 1];
  {
    const TW* W = p.whh[dir];
    const TW zero = S::from_f(0.f);
#pragma unroll
    for (int j = 0; j < RW; ++j) {
      const int u = uw0 + j % UW;
      const bool ok = u < Hr;
      const TW* src = W + (ok ? size_t((j / UW) * Hr + u) * Hr : 0);
      auto ld = [&](int k) { return ok && k < Hr ? S::to_f(src[k]) : S::to_f(zero); };
#pragma unroll
      for (int i = 0; i < KG; ++i) {
        const int k = 128 * i + 4 * lane;
        const Pair a = S::from_f2(ld(k), ld(k + 1)), b = S::from_f2(ld(k + 2), ld(k + 3));
        if (i < KGR) {
          wreg[j][2 * i] = a;
          wreg[j][2 * i + 1] = b;
        } else {
          Quad qd;
          qd.a = a;
          qd.b = b;
          Wsm[((warp * KGS + (i - KGR)) * RW + j) * 32 + lane] = qd;
        }
      }
    }
  }

  pdl_wait();  // what the prep kernel writes (biases, h0 / c0) is read from here on

  // ---- lane role after the reduction: gate g of (unit uw, column q) ----
  const int v = lane >> SH;
  const int g = v / E, e = v % E, uw = e / BC, q = e % BC;
  const int u = uw0 + uw;
  const bool gate_real = g < G;
  const bool live = u < Hr;
  const bool lead = (lane & REP) == 0;
  const int b = b0 + q;
  const int len = q < nb ? (p.lengths ? p.lengths[b] : T) : 0;  // 0: a column past the batch, never valid
  const float gbx = gate_real && live ? p.bx[dir][g * Hr + u] : 0.f;
  const float gbh = gate_real && live ? p.bh[dir][g * Hr + u] : 0.f;

  // ---- initial state: hs[0] = h0 (zeros past Hr / nb), hs[1] = 0; c and h of the lane's (unit, column) ----
  const float* h0 = p.h0[dir];
  for (int i = tid; i < 2 * BC * H; i += Cfg::NT) {
    const int buf = i / (BC * H), bb = (i / H) % BC, k = i % H;
    hs[i] = (buf == 0 && bb < nb && h0 && k < Hr) ? h0[size_t(b0 + bb) * Hr + k] : 0.f;
  }
  float h = (q < nb && live && h0) ? h0[size_t(b) * Hr + u] : 0.f;
  float c = (CELL == LSTM && q < nb && live && p.c0[dir]) ? p.c0[dir][size_t(b) * Hr + u] : 0.f;

  const float* xp = p.xproj[dir];
  auto load_x = [&](int s) -> float {
    if (!gate_real || !live || s >= len) return 0.f;
    const int te = reverse ? len - 1 - s : s;
    return xp[(size_t(te) * B + b) * (G * H) + g * H + u];
  };
  // XPK: every lane loads its gate's projection, so each warp's lane 0 acquires the producers' count of the chunk
  // that holds the step (before step 0, then at each chunk start: below) and __syncwarp hands it to the warp. Running
  // values, no integer division in the step (session 39: in v10 a modulo and a division there changed how ptxas
  // scheduled the cell and cost 50-90 cycles per step): xnext the next step that starts a chunk, xneed the count it
  // needs (P per chunk), xseen the largest count this warp's lane 0 acquired (the producers run ahead, so after the
  // first few chunks one acquire covers the rest).
  int xnext = XPK ? p.xchunk : 0;
  unsigned xneed = XPK ? unsigned(p.xprod) : 0u, xseen = 0;
  auto xwait = [&]() {
    if constexpr (XPK) {
      if (lane == 0 && xseen < xneed) {
        while ((xseen = ld_acquire_gpu(p.flags[dir] + kXprodCounter)) < xneed) {
        }
      }
      __syncwarp();
    }
  };
  xwait();
  float xv = load_x(0);
  // bar[1] receives h_0 (pushed at step 0), bar[0] h_1; pushes happen at steps 0 .. T-2.
  if (tid == 0) {
    mbar_pair_init(bar);
    fence_mbar_init_cluster();
    mbar_pair_arm(bar, 1, T - 1, [](int) { return kStepBytes; });
  }
  // Every CTA of the cluster has started, initialised hs and its mbarriers before anyone pushes into it.
  cluster_arrive_release();
  cluster_wait_acquire();

  // Phase profile (lab_fwd prof): clock64 stamps of CTA (0, 0) thread 0 for steps 8..23, slots 0-6 per step.
  const bool prof = p.prof && blockIdx.x == 0 && blockIdx.y == 0 && tid == 0;
  auto stamp = [&](int t, int k) {
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + k] = clock64();
  };

  for (int t = 0; t < T; ++t) {
    const float* hc = hs + (t & 1) * BC * H;
    if (t > 0) {
      // h_{t-1} is bar[t&1]'s completion number (t-1)/2.
      mbar_wait_parity(&bar[t & 1], ((t - 1) >> 1) & 1);
      if (tid == 0 && t + 1 <= T - 2) mbar_arrive_expect_tx_cta(&bar[t & 1], kStepBytes);  // for h_{t+1}
    }
    stamp(t, 0);

    // ---- 1. matvec ----
    float acc[RW][BC];
#pragma unroll
    for (int j = 0; j < RW; ++j)
#pragma unroll
      for (int qq = 0; qq < BC; ++qq) acc[j][qq] = 0.f;
#pragma unroll
    for (int i = 0; i < KG; ++i) {
      float4 hv[BC];
#pragma unroll
      for (int qq = 0; qq < BC; ++qq) hv[qq] = *reinterpret_cast<const float4*>(hc + qq * H + 128 * i + 4 * lane);
#pragma unroll
      for (int j = 0; j < RW; ++j) {
        Pair pa, pb;
        if (i < KGR) {
          pa = wreg[j][2 * i];
          pb = wreg[j][2 * i + 1];
        } else {
          const Quad qd = Wsm[((warp * KGS + (i - KGR)) * RW + j) * 32 + lane];
          pa = qd.a;
          pb = qd.b;
        }
        const float2 wa = S::to_f2(pa), wb = S::to_f2(pb);
#pragma unroll
        for (int qq = 0; qq < BC; ++qq) {
          acc[j][qq] = fmaf(wa.x, hv[qq].x, acc[j][qq]);
          acc[j][qq] = fmaf(wa.y, hv[qq].y, acc[j][qq]);
          acc[j][qq] = fmaf(wb.x, hv[qq].z, acc[j][qq]);
          acc[j][qq] = fmaf(wb.y, hv[qq].w, acc[j][qq]);
        }
      }
    }

    stamp(t, 1);
    // ---- 2. reduce-scatter across the warp: value (g*UW + uw)*BC + q -> lanes of v = lane >> SH ----
    float val[NV];
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const int gv = i / E, jv = gv * UW + (i % E) / BC;
      val[i] = gv < G ? acc[gv < G ? jv : 0][i % BC] : 0.f;
    }
    reduce_scatter_stage<NV, 0>(val, lane);
#pragma unroll
    for (int mask = 16 >> Cfg::P; mask >= 1; mask >>= 1) val[0] += __shfl_xor_sync(0xffffffffu, val[0], mask);
    const float sum = val[0];
    stamp(t, 2);

    // ---- 3. gate of this lane, then the cell of its (unit, column) ----
    float act = 0.f, hrec = 0.f;
    if (CELL == LSTM) {
      const float pre = xv + gbx + sum + gbh;
      act = g == 2 ? fast_tanh(pre) : fast_sigmoid(pre);
    } else if (CELL == GRU) {
      if (g < 2) {
        act = fast_sigmoid(xv + gbx + sum + gbh);
      } else {
        act = xv + gbx;     // input side of n
        hrec = sum + gbh;   // recurrent side of n, multiplied by r
      }
    } else {
      const float a = xv + gbx + sum + gbh;
      act = CELL == RNN_TANH ? fast_tanh(a) : fmaxf(a, 0.f);
    }
    auto from_gate = [&](float x, int gg) { return __shfl_sync(0xffffffffu, x, ((gg * E + e) << SH) | (lane & REP)); };
    const bool valid = t < len;
    const int te = reverse ? len - 1 - t : t;
    float gn = 0.f;  // GRU n (kept for the training reserve)
    if (CELL == LSTM) {
      const float gi = from_gate(act, 0), gf = from_gate(act, 1), gc = from_gate(act, 2), go = from_gate(act, 3);
      if (valid) {
        c = gf * c + gi * gc;
        if (p.clip > 0.f) c = fminf(fmaxf(c, -p.clip), p.clip);
        h = go * fast_tanh(c);
      }
      if (!live) c = 0.f;
    } else if (CELL == GRU) {
      const float gr = from_gate(act, 0), gz = from_gate(act, 1), gx = from_gate(act, 2), ghr = from_gate(hrec, 2);
      if (valid) {
        gn = fast_tanh(gx + gr * ghr);
        h = (1.f - gz) * gn + gz * h;
      }
    } else {
      if (valid) h = act;
    }
    if (!live) h = 0.f;
    stamp(t, 3);

    // ---- 4. push h_t into every CTA's hs[(t+1)&1]: item = lane + 32 r -> (peer item / E, value item % E) ----
    if (t + 1 < T) {
      float* nxt = hs + ((t + 1) & 1) * BC * H;
      uint64_t* nbar = &bar[(t + 1) & 1];
#pragma unroll
      for (int r = 0; r < Cfg::PUSH_ROUNDS; ++r) {
        const int item = lane + 32 * r;
        const int e2 = item % E;
        const float hv = __shfl_sync(0xffffffffu, h, e2 << SH);
        if (item < C * E) {
          const uint32_t peer = uint32_t(item / E);
          st_async_f32(map_dsmem(nxt + (e2 % BC) * H + uw0 + e2 / BC, peer), hv, map_dsmem(nbar, peer));
        }
      }
    }
    stamp(t, 4);

    // ---- global writes of step t while the peers' h is in flight (one replica; gate rows by their gate lanes) ----
    if (q < nb && live && lead) {
      if (g == 0) {
        const int yt = valid ? te : t;
        p.y[(size_t(yt) * B + b) * (p.D * Hr) + dir * Hr + u] = S::from_f(valid ? h : 0.f);
        if (t == T - 1) {
          store_final(p.hy[dir], p.hn[dir], size_t(b) * Hr + u, h);
          if (CELL == LSTM) store_final(p.cy[dir], p.cn[dir], size_t(b) * Hr + u, c);
        }
      }
      if constexpr (TRAIN) {
        const int rt = valid ? te : t;
        const size_t row = size_t(rt) * B + b;
        float* ap = p.rs_acts[dir] + row * (G * Hr) + u;
        if (CELL == LSTM) {
          ap[g * Hr] = valid ? act : 0.f;
        } else if (CELL == GRU) {
          if (g < 2) ap[g * Hr] = valid ? act : 0.f;
          if (g == 2) {
            ap[2 * Hr] = valid ? gn : 0.f;
            p.rs_hn[dir][row * Hr + u] = valid ? hrec : 0.f;
          }
        } else {
          ap[0] = valid ? h : 0.f;
        }
        const int slot = !reverse ? t + 1 : (valid ? te : -1);
        if (g == 0 && slot >= 0) {
          const size_t srow = size_t(slot) * B + b;
          store_state(p.rs_hs[dir] + srow * (Hr * kStateSlots<TW>) + u, Hr, h);
          if (CELL == LSTM) p.rs_cs[dir][srow * Hr + u] = c;
        }
      }
    }
    if (t + 1 < T) {
      if (XPK && t + 1 == xnext) {
        xnext += p.xchunk;
        xneed += unsigned(p.xprod);
        xwait();
      }
      xv = load_x(t + 1);
    }
    stamp(t, 5);
    stamp(t, 6);
  }
  cluster_arrive_release();
  cluster_wait_acquire();
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
