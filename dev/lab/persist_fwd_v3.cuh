// Lab version v3, kept for the record and for side-by-side timing with the shipped kernel: a verbatim copy of
// src/cuda/persistent_fwd.cuh as it was when the library shipped v3 (the library now ships v4). Ignores
// FwdParams::Hr (v3 only runs H equal to the compiled size).
// PERSISTENT forward kernel: one launch runs all T steps of one layer, both directions when D = 2 (blockIdx.y).
// The library ships lab version v3 (dev/lab/README.md: versions, predictions, measured timings, phase profiles).
//
// Decomposition. A "group" of C CTAs owns one batch tile of BT sequences and all H hidden units: CTA `rank` owns
// the U = H/C units [rank*U, (rank+1)*U) and so the R = G*U rows {g*H + u} of W_hh (every gate of its units: the
// cell update is local). Warp w owns the k-range [w*KPW, (w+1)*KPW) of the H columns (split-K over NW warps), lane l
// owns rows {l, l+32, ...} (RPT of them). KREG of each thread's k per row stay in registers and KSM = KPW - KREG in
// shared memory for the whole sequence (W_hh is read from DRAM once per launch). Input projections W_ih x for all
// steps come from one GEMM before the launch ([T, B, G*H] float32).
//
// Per step t, per batch chunk of BC columns: acc[row][bc] = sum_k W[row][k] h_{t-1}[bc][k] over the warp's k-range
// (h from shared memory as warp-uniform float4 broadcasts); partials -> red[w][bc][row]; one __syncthreads; the
// U*BC pointwise threads (u = tid % U, bc = tid / U) add the NW partials, biases and the staged input projection,
// apply the cell and publish h_t. Input projections of step t+1 are copied to shared memory with cp.async during
// step t. h and c are carried in float32; y is stored in the storage type.
//
// Publishing h_t (template GRID):
//  * cluster mode: the group is one thread-block cluster; every CTA keeps h_{t-1} for the whole tile in
//    hs[2][BTpad][H] (double-buffered by step parity); each pointwise thread stores its value into hs[(t+1)&1] of
//    all C CTAs (st.shared::cluster, coalesced per warp); one barrier.cluster arrive.release / wait.acquire per
//    step. Clusters never wait on each other: any number of batch tiles is deadlock-free (extra tiles run in waves).
//  * grid mode (W_hh too big for one cluster, e.g. H = 1024): the group is C CTAs of a cooperative launch (several
//    groups = batch tiles when they fit); h_t goes to a global [2][B][H] buffer, then each CTA adds 1 to its group's
//    arrival counter (after __threadfence) and, before step t+1, waits (ld.acquire) for C*(t+1) arrivals and
//    streams h_t chunk by chunk from L2 with cp.async. The cooperative launch fails instead of deadlocking when the
//    grid cannot be co-resident.
// One barrier per step suffices with double buffers: a writer at step t writes buffer (t+1)&1, which readers last
// read at step t-1, and the writer passed the step t-1 barrier, which every reader reached only after step t-1.
//
// Ragged lengths: at steps t >= len[b] the state is carried unchanged and y[t][b] is zero-filled; direction 1 runs
// each sequence from its own last step (t_eff = len-1-t). Determinism: fixed summation order, no atomics on data.
#pragma once

#include "persist_common.cuh"
#include "../../src/cuda/persistent_common.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID>
struct FwdConfigV3 {
  using Pair = typename Store<TW>::Pair;
  static constexpr int G = CellTraits<CELL>::G;
  static constexpr int U = R / G;
  static constexpr int H = NW * KPW;
  static constexpr int NT = NW * 32;
  static constexpr int RPT = (R + 31) / 32;
  static constexpr int KSM = KPW - KREG;
  static_assert(R % G == 0 && U % 4 == 0, "R must hold whole units, U a multiple of 4");
  static_assert(KREG % 4 == 0 && KSM % 4 == 0, "k slices are walked 4 at a time");
  static_assert(U * BC <= NT, "one pointwise thread per (unit, column)");

  static size_t smem_bytes(int hs_rows, int rows_pad) {
    size_t w = size_t(NW) * (KSM / 2) * RPT * 32 * sizeof(Pair);
    size_t red = size_t(2) * NW * R * BC;
    size_t hs = size_t(2) * hs_rows * H;
    size_t xs = size_t(2) * rows_pad * G * U;
    size_t hn = 0;
    size_t cs = CELL == LSTM ? size_t(rows_pad) * U : 0;
    return w + 4 * (red + hs + xs + hn + cs) + 4 * size_t(rows_pad);
  }
};

template <int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID>
__global__ void __launch_bounds__(NW * 32, 1) persist_fwd_v3_kernel(const FwdParams<TW> p) {
  using Cfg = FwdConfigV3<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
  using S = Store<TW>;
  using Pair = typename Cfg::Pair;
  constexpr int G = Cfg::G, U = Cfg::U, H = Cfg::H, NT = Cfg::NT, RPT = Cfg::RPT, KSM = Cfg::KSM;
  constexpr int QU = U / 4;  // float4 per unit slice

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int dir = blockIdx.y;
  const bool reverse = dir == 1;
  const int T = p.T, B = p.B;
  const int rank = blockIdx.x % p.C, group = blockIdx.x / p.C;
  const int b0 = group * p.BT;
  const int nb = min(p.BT, B - b0);
  const int nchunk = (nb + BC - 1) / BC;
  const int rows_pad = nchunk * BC;
  const int hs_rows = GRID ? BC : rows_pad;
  const int u0 = rank * U;
  const bool prof = p.prof && blockIdx.x == 0 && blockIdx.y == 0 && tid == 0;

  extern __shared__ float4 smem4[];
  Pair* Wsm = reinterpret_cast<Pair*>(smem4);
  float* red = reinterpret_cast<float*>(Wsm + NW * (KSM / 2) * RPT * 32);
  float* hs = red + 2 * NW * R * BC;
  float* xs = hs + 2 * hs_rows * H;
  float* cs = xs + 2 * rows_pad * G * U;
  int* lens = reinterpret_cast<int*>(cs + (CELL == LSTM ? rows_pad * U : 0));

  // ---- W_hh slice into registers + shared memory ----
  const TW* W = p.whh[dir];
  Pair wreg[RPT][KREG / 2 > 0 ? KREG / 2 : 1];
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const int r = lane + 32 * j;
    const bool ok = r < R;
    const size_t grow = size_t((r / U) * H + u0 + r % U);
    const TW* src = W + grow * H + warp * KPW;
#pragma unroll
    for (int kk = 0; kk < KREG / 2; ++kk)
      wreg[j][kk] = ok ? *reinterpret_cast<const Pair*>(src + 2 * kk) : S::from_f2(0.f, 0.f);
    for (int kk = 0; kk < KSM / 2; ++kk)
      Wsm[((warp * (KSM / 2) + kk) * RPT + j) * 32 + lane] =
          ok ? *reinterpret_cast<const Pair*>(src + KREG + 2 * kk) : S::from_f2(0.f, 0.f);
  }

  const bool pw_thread = tid < U * BC;
  const int pu = tid % U, pbc = tid / U;
  float bxr[G], bhr[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    bxr[g] = pw_thread ? p.bx[dir][g * H + u0 + pu] : 0.f;
    bhr[g] = pw_thread ? p.bh[dir][g * H + u0 + pu] : 0.f;
  }

  // ---- initial state ----
  const float* h0 = p.h0[dir];
  for (int i = tid; i < rows_pad; i += NT) lens[i] = i < nb ? (p.lengths ? p.lengths[b0 + i] : T) : 0;
  if (!GRID) {
    for (int i = tid; i < 2 * hs_rows * H; i += NT) {
      const int buf = i / (hs_rows * H), b = (i / H) % hs_rows, k = i % H;
      hs[i] = (buf == 0 && b < nb && h0) ? h0[size_t(b0 + b) * H + k] : 0.f;
    }
  }
  if (CELL == LSTM) {
    for (int i = tid; i < U * rows_pad; i += NT) {
      const int b = i / U, u = i % U;
      cs[i] = (b < nb && p.c0[dir]) ? p.c0[dir][size_t(b0 + b) * H + u0 + u] : 0.f;
    }
  }
  __syncthreads();  // lens visible to the staging threads

  const float* xp = p.xproj[dir];
  // Input projections of step s -> xs[s & 1] (rows past their length are skipped: never read).
  auto stage_x = [&](int s) {
    float* dst = xs + (s & 1) * rows_pad * G * U;
    for (int i = tid; i < nb * G * QU; i += NT) {
      const int b = i / (G * QU), rem = i % (G * QU), g = rem / QU, q4 = rem % QU;
      const int len = lens[b];
      if (s < len) {
        const int te = reverse ? len - 1 - s : s;
        cp_async16(dst + (b * G + g) * U + q4 * 4, xp + (size_t(te) * B + b0 + b) * (G * H) + g * H + u0 + q4 * 4);
      }
    }
    cp_async_commit();
  };
  stage_x(0);
  cp_async_wait_all();
  if (!GRID) {
    cluster_arrive_release();
    cluster_wait_acquire();
  } else {
    __syncthreads();
  }

  float* hg = GRID ? p.hg[dir] : nullptr;
  unsigned* counter = GRID ? p.flags[dir] + group : nullptr;
  // Grid mode: rows [c*BC, (c+1)*BC) of h_{t-1} -> hs[c & 1] with cp.async (zero-filled past nb): no registers held
  // while in flight (v2's first cut staged through registers and spilled).
  auto load_chunk = [&](int c, const float* hsrc) {
    float* dst = hs + (c & 1) * BC * H;
    for (int i = tid * 4; i < BC * H; i += NT * 4) {
      const int bb = c * BC + i / H;
      const bool ok = bb < nb && hsrc;
      cp_async16_zfill(dst + i, ok ? hsrc + size_t(b0 + bb) * H + i % H : p.bx[dir], ok ? 16 : 0);
    }
    cp_async_commit();
  };

  for (int t = 0; t < T; ++t) {
    const float* hsrc = nullptr;
    if (GRID) {
      hsrc = t == 0 ? h0 : hg + size_t(t & 1) * B * H;
      if (t > 0 && tid == 0)
        while (ld_acquire_gpu(counter) < unsigned(p.C) * unsigned(t)) {
        }
      __syncthreads();
      load_chunk(0, hsrc);
      cp_async_wait_all();
      __syncthreads();
    }
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 0] = clock64();
    if (t + 1 < T) stage_x(t + 1);
    const float* xcur = xs + (t & 1) * rows_pad * G * U;

    for (int c = 0; c < nchunk; ++c) {
      const float* hcur = GRID ? hs + (c & 1) * BC * H : hs + size_t(t & 1) * hs_rows * H + c * BC * H;
      const int b = c * BC + pbc;
      const bool pw = pw_thread && b < nb;
      const float hprev = pw ? hcur[pbc * H + u0 + pu] : 0.f;

      if (GRID && c + 1 < nchunk) load_chunk(c + 1, hsrc);

      // ---- matvec ----
      float acc[RPT][BC];
#pragma unroll
      for (int j = 0; j < RPT; ++j)
#pragma unroll
        for (int q = 0; q < BC; ++q) acc[j][q] = 0.f;
      const float* hk = hcur + warp * KPW;
#pragma unroll
      for (int kk = 0; kk < KREG; kk += 4) {
        float2 wa[RPT], wb[RPT];
#pragma unroll
        for (int j = 0; j < RPT; ++j) {
          wa[j] = S::to_f2(wreg[j][kk / 2]);
          wb[j] = S::to_f2(wreg[j][kk / 2 + 1]);
        }
#pragma unroll
        for (int q = 0; q < BC; ++q) {
          const float4 hv = *reinterpret_cast<const float4*>(hk + q * H + kk);
#pragma unroll
          for (int j = 0; j < RPT; ++j) {
            acc[j][q] = fmaf(wa[j].x, hv.x, acc[j][q]);
            acc[j][q] = fmaf(wa[j].y, hv.y, acc[j][q]);
            acc[j][q] = fmaf(wb[j].x, hv.z, acc[j][q]);
            acc[j][q] = fmaf(wb[j].y, hv.w, acc[j][q]);
          }
        }
      }
      const Pair* ws = Wsm + warp * (KSM / 2) * RPT * 32 + lane;
#pragma unroll 2
      for (int kk = 0; kk < KSM; kk += 4) {
        float2 wa[RPT], wb[RPT];
#pragma unroll
        for (int j = 0; j < RPT; ++j) {
          wa[j] = S::to_f2(ws[((kk / 2) * RPT + j) * 32]);
          wb[j] = S::to_f2(ws[((kk / 2 + 1) * RPT + j) * 32]);
        }
#pragma unroll
        for (int q = 0; q < BC; ++q) {
          const float4 hv = *reinterpret_cast<const float4*>(hk + q * H + KREG + kk);
#pragma unroll
          for (int j = 0; j < RPT; ++j) {
            acc[j][q] = fmaf(wa[j].x, hv.x, acc[j][q]);
            acc[j][q] = fmaf(wa[j].y, hv.y, acc[j][q]);
            acc[j][q] = fmaf(wb[j].x, hv.z, acc[j][q]);
            acc[j][q] = fmaf(wb[j].y, hv.w, acc[j][q]);
          }
        }
      }
      float* rd = red + (c & 1) * NW * R * BC;
#pragma unroll
      for (int j = 0; j < RPT; ++j) {
        const int r = lane + 32 * j;
        if (r < R) {
#pragma unroll
          for (int q = 0; q < BC; ++q) rd[(warp * BC + q) * R + r] = acc[j][q];
        }
      }
      if (GRID && c + 1 < nchunk) cp_async_wait_all();
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 1] = clock64();
      __syncthreads();
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 2] = clock64();

      // ---- pointwise ----
      if (pw) {
        float s[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          float a0 = 0.f, a1 = 0.f;  // two chains: half the dependent-add latency
#pragma unroll
          for (int w = 0; w < NW; w += 2) {
            a0 += rd[(w * BC + pbc) * R + g * U + pu];
            a1 += rd[((w + 1) * BC + pbc) * R + g * U + pu];
          }
          s[g] = a0 + a1;
        }
        const int len = lens[b];
        const bool valid = t < len;
        const int te = reverse ? len - 1 - t : t;
        const float* xb = xcur + b * G * U + pu;
        float hnew = hprev;
        if (CELL == LSTM) {
          float& cref = cs[b * U + pu];
          if (valid) {
            const float gi = fast_sigmoid(xb[0] + bxr[0] + s[0] + bhr[0]);
            const float gf = fast_sigmoid(xb[U] + bxr[1] + s[1] + bhr[1]);
            const float gg = fast_tanh(xb[2 * U] + bxr[2] + s[2] + bhr[2]);
            const float go = fast_sigmoid(xb[3 * U] + bxr[3] + s[3] + bhr[3]);
            float cnew = gf * cref + gi * gg;
            if (p.clip > 0.f) cnew = fminf(fmaxf(cnew, -p.clip), p.clip);
            cref = cnew;
            hnew = go * fast_tanh(cnew);
          }
          if (t == T - 1) p.cn[dir][size_t(b0 + b) * H + u0 + pu] = cref;
        } else if (CELL == GRU) {
          if (valid) {
            const float r = fast_sigmoid(xb[0] + bxr[0] + s[0] + bhr[0]);
            const float z = fast_sigmoid(xb[U] + bxr[1] + s[1] + bhr[1]);
            const float n = fast_tanh(xb[2 * U] + bxr[2] + r * (s[2] + bhr[2]));
            hnew = (1.f - z) * n + z * hprev;
          }
        } else {
          if (valid) {
            const float a = xb[0] + bxr[0] + s[0] + bhr[0];
            hnew = CELL == RNN_TANH ? fast_tanh(a) : fmaxf(a, 0.f);
          }
        }
        const int yt = valid ? te : t;
        p.y[(size_t(yt) * B + b0 + b) * (p.D * H) + dir * H + u0 + pu] = S::from_f(valid ? hnew : 0.f);
        if (t == T - 1) p.hn[dir][size_t(b0 + b) * H + u0 + pu] = hnew;
        if (GRID) {
          hg[size_t((t + 1) & 1) * B * H + size_t(b0 + b) * H + u0 + pu] = hnew;
        } else {
          float* dst = hs + size_t((t + 1) & 1) * hs_rows * H + b * H + u0 + pu;
          for (int q = 0; q < p.C; ++q) st_dsmem(map_dsmem(dst, q), hnew);
        }
      }
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 3] = clock64();
    }
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 4] = clock64();

    // ---- publish h_t ----
    cp_async_wait_all();  // x projections of step t+1 landed
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 5] = clock64();
    if (GRID) {
      __syncthreads();
      if (tid == 0) {
        __threadfence();
        atomicAdd(counter, 1u);
      }
    } else {
      cluster_arrive_release();
      cluster_wait_acquire();
    }
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 6] = clock64();
  }
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn

namespace lab {
using openrnn::cuda::persist::FwdConfigV3;
using openrnn::cuda::persist::persist_fwd_v3_kernel;
}  // namespace lab
