// Persistent forward kernel, lab version v1: one launch runs all T steps of one layer (both directions when D=2).
//
// Decomposition. A "group" of C CTAs owns one batch tile and all H hidden units: CTA `rank` owns the U = H/C units
// [rank*U, (rank+1)*U) and therefore the R = G*U rows {g*H + u} of W_hh (every gate of its units, so the pointwise
// cell update is local). Inside a CTA, warp w owns the k-range [w*KPW, (w+1)*KPW) of the H columns (split-K), and lane
// l owns rows {l, l+32, ...} (RPT = ceil(R/32) of them). Each thread keeps KREG of its k (per row) in registers and
// the other KSM = KPW-KREG in shared memory, for the whole sequence: W_hh is read from DRAM once per launch.
//
// Per step t and batch chunk of BC columns: acc[row][bc] = sum_k W[row][k] h_{t-1}[bc][k] over the warp's k-range
// (h_{t-1} read from shared memory as warp-uniform float4 broadcasts); partial sums go to shared memory
// red[w][row][bc]; after one __syncthreads the U*BC "pointwise" threads (u, bc) add the NW partials of each gate, the
// input projection and biases, apply the cell, and publish h_t[b][u].
//
// Two ways to publish h_t (template GRID):
//  * cluster mode (GRID=false): the group is one thread-block cluster. Each CTA keeps a full copy hs[2][BTpad][H] of
//    h (double-buffered by step parity) and writes its U new values into every peer's hs[(t+1)&1] with
//    st.shared::cluster; one barrier.cluster (arrive.release / wait.acquire) per step. Clusters never wait on each
//    other, so any number of batch tiles is deadlock-free (tiles beyond the co-resident count run in waves).
//  * grid mode (GRID=true): the group is the whole (cooperatively launched) grid, for W_hh too big for one cluster.
//    h_t goes to a global buffer hg[(t+1)&1][B][H]; CTA q then stores flags[q] = t+1 with release semantics; before
//    step t+1 every CTA waits (acquire) until all flags reach t+1 and streams h_t chunk by chunk (BC columns) from L2
//    into shared memory, the next chunk's loads in flight during the current chunk's matvec.
//
// Double-buffer safety (one barrier per step): a writer at step t writes buffer (t+1)&1, which readers last read at
// step t-1; the writer passed the step t-1 barrier, which every reader reached only after finishing step t-1.
//
// Ragged lengths: at steps t >= len[b] the state is carried unchanged and y[t][b] is zero-filled; direction 1 runs
// each sequence from its own last step (t_eff = len-1-t).
#pragma once

#include "persist_common.cuh"

namespace lab {

template <int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID>
struct FwdConfig {
  using Pair = typename Store<TW>::Pair;
  static constexpr int G = CellTraits<CELL>::G;
  static constexpr int U = R / G;
  static constexpr int H = NW * KPW;
  static constexpr int NT = NW * 32;
  static constexpr int RPT = (R + 31) / 32;
  static constexpr int KSM = KPW - KREG;
  static_assert(R % G == 0, "R must hold whole units");
  static_assert(KREG % 4 == 0 && KSM % 4 == 0, "k slices are walked 4 at a time");
  static_assert(U * BC <= NT, "one pointwise thread per (unit, column)");

  // Shared memory in bytes for `rows` batch rows per hs buffer (cluster: BTpad; grid: BC) and `crows` c-state rows.
  static size_t smem_bytes(int hs_rows, int c_rows) {
    size_t w = size_t(NW) * (KSM / 2) * RPT * 32 * sizeof(Pair);
    size_t red = size_t(2) * NW * R * BC * sizeof(float);
    size_t hs = size_t(2) * hs_rows * H * sizeof(float);
    size_t cs = CELL == LSTM ? size_t(U) * c_rows * sizeof(float) : 0;
    return w + red + hs + cs;
  }
};

template <int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID>
__global__ void __launch_bounds__(NW * 32, 1) persist_fwd_kernel(const FwdParams<TW> p) {
  using Cfg = FwdConfig<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
  using S = Store<TW>;
  using Pair = typename Cfg::Pair;
  constexpr int G = Cfg::G, U = Cfg::U, H = Cfg::H, NT = Cfg::NT, RPT = Cfg::RPT, KSM = Cfg::KSM;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int dir = blockIdx.y;
  const bool reverse = dir == 1;
  const int T = p.T, B = p.B;
  int rank, b0, nb;
  if (GRID) {
    rank = blockIdx.x;
    b0 = 0;
    nb = B;
  } else {
    rank = blockIdx.x % p.C;
    b0 = (blockIdx.x / p.C) * p.BT;
    nb = min(p.BT, B - b0);
  }
  const int nchunk = (nb + BC - 1) / BC;
  const int rows_pad = nchunk * BC;          // batch rows held for c (and for hs in cluster mode)
  const int hs_rows = GRID ? BC : rows_pad;  // rows per hs buffer
  const int u0 = rank * U;

  extern __shared__ float4 smem4[];
  Pair* Wsm = reinterpret_cast<Pair*>(smem4);                 // [NW][KSM/2][RPT][32]
  float* red = reinterpret_cast<float*>(Wsm + NW * (KSM / 2) * RPT * 32);  // [2][NW][R][BC]
  float* hs = red + 2 * NW * R * BC;                          // [2][hs_rows][H]
  float* cs = hs + 2 * hs_rows * H;                           // [U][rows_pad] (LSTM)

  // ---- W_hh slice into registers + shared memory (read once per launch) ----
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

  // Pointwise role: thread (u, bc) for tid < U*BC, fixed for the whole launch.
  const bool pw_thread = tid < U * BC;
  const int pu = tid / BC, pbc = tid % BC;
  float bxr[G], bhr[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    bxr[g] = pw_thread ? p.bx[dir][g * H + u0 + pu] : 0.f;
    bhr[g] = pw_thread ? p.bh[dir][g * H + u0 + pu] : 0.f;
  }

  // ---- initial state ----
  const float* h0 = p.h0[dir];
  if (!GRID) {
    for (int i = tid; i < 2 * hs_rows * H; i += NT) {
      const int buf = i / (hs_rows * H), b = (i / H) % hs_rows, k = i % H;
      hs[i] = (buf == 0 && b < nb && h0) ? h0[size_t(b0 + b) * H + k] : 0.f;
    }
  }
  if (CELL == LSTM) {
    for (int i = tid; i < U * rows_pad; i += NT) {
      const int u = i / rows_pad, b = i % rows_pad;
      cs[i] = (b < nb && p.c0[dir]) ? p.c0[dir][size_t(b0 + b) * H + u0 + u] : 0.f;
    }
  }
  if (!GRID) {
    cluster_arrive_release();  // peers' hs initialised before anyone writes into them
    cluster_wait_acquire();
  } else {
    __syncthreads();
  }

  const float* xp = p.xproj[dir];
  float* hg = GRID ? p.hg[dir] : nullptr;
  constexpr int NPRE = GRID ? (BC * H / 4 + NT - 1) / NT : 1;

  for (int t = 0; t < T; ++t) {
    const float* hsrc = nullptr;  // grid mode: where h_{t-1} [B][H] lives in global memory
    if (GRID) {
      hsrc = t == 0 ? h0 : hg + size_t(t & 1) * B * H;
      if (t > 0) {
        if (tid < p.C)
          while (ld_acquire_gpu(p.flags[dir] + tid) < unsigned(t)) {
          }
      }
      __syncthreads();
      for (int i = tid * 4; i < BC * H; i += NT * 4) {
        const int b = i / H;
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (b < nb && hsrc) v = __ldcg(reinterpret_cast<const float4*>(hsrc + size_t(b) * H + i % H));
        *reinterpret_cast<float4*>(hs + i) = v;
      }
      __syncthreads();
    }

    for (int c = 0; c < nchunk; ++c) {
      const float* hcur = GRID ? hs + (c & 1) * BC * H : hs + size_t(t & 1) * hs_rows * H + c * BC * H;

      // Pointwise thread: issue the loads it needs after the matvec now (x projection, h_{t-1}, length).
      const int b = c * BC + pbc;  // batch row within the group
      const bool pw = pw_thread && b < nb;
      int len = T, te = t;
      float xg[G];
      float hprev = 0.f;
      if (pw) {
        if (p.lengths) len = p.lengths[b0 + b];
        te = reverse ? len - 1 - t : t;
        const float* xrow = xp + (size_t(te) * B + b0 + b) * (G * H) + u0 + pu;
#pragma unroll
        for (int g = 0; g < G; ++g) xg[g] = t < len ? xrow[g * H] : 0.f;
        hprev = hcur[pbc * H + u0 + pu];
      }

      // Grid mode: next chunk of h_{t-1} into registers while this chunk computes.
      float4 pre[NPRE];
      if (GRID && c + 1 < nchunk) {
#pragma unroll
        for (int q = 0; q < NPRE; ++q) {
          const int i = (tid + q * NT) * 4;
          pre[q] = make_float4(0.f, 0.f, 0.f, 0.f);
          const int bb = (c + 1) * BC + i / H;
          if (i < BC * H && bb < nb && hsrc)
            pre[q] = __ldcg(reinterpret_cast<const float4*>(hsrc + size_t(bb) * H + i % H));
        }
      }

      // ---- matvec over this warp's k-range ----
      float acc[RPT][BC];
#pragma unroll
      for (int j = 0; j < RPT; ++j)
#pragma unroll
        for (int q = 0; q < BC; ++q) acc[j][q] = 0.f;
      const float* hk = hcur + warp * KPW;
#pragma unroll
      for (int kk = 0; kk < KREG; kk += 4) {
        float4 hv[BC];
#pragma unroll
        for (int q = 0; q < BC; ++q) hv[q] = *reinterpret_cast<const float4*>(hk + q * H + kk);
#pragma unroll
        for (int j = 0; j < RPT; ++j) {
          const float2 wa = S::to_f2(wreg[j][kk / 2]), wb = S::to_f2(wreg[j][kk / 2 + 1]);
#pragma unroll
          for (int q = 0; q < BC; ++q) {
            acc[j][q] = fmaf(wa.x, hv[q].x, acc[j][q]);
            acc[j][q] = fmaf(wa.y, hv[q].y, acc[j][q]);
            acc[j][q] = fmaf(wb.x, hv[q].z, acc[j][q]);
            acc[j][q] = fmaf(wb.y, hv[q].w, acc[j][q]);
          }
        }
      }
      const Pair* ws = Wsm + warp * (KSM / 2) * RPT * 32 + lane;
#pragma unroll 2
      for (int kk = 0; kk < KSM; kk += 4) {
        float4 hv[BC];
#pragma unroll
        for (int q = 0; q < BC; ++q) hv[q] = *reinterpret_cast<const float4*>(hk + q * H + KREG + kk);
#pragma unroll
        for (int j = 0; j < RPT; ++j) {
          const float2 wa = S::to_f2(ws[((kk / 2) * RPT + j) * 32]);
          const float2 wb = S::to_f2(ws[((kk / 2 + 1) * RPT + j) * 32]);
#pragma unroll
          for (int q = 0; q < BC; ++q) {
            acc[j][q] = fmaf(wa.x, hv[q].x, acc[j][q]);
            acc[j][q] = fmaf(wa.y, hv[q].y, acc[j][q]);
            acc[j][q] = fmaf(wb.x, hv[q].z, acc[j][q]);
            acc[j][q] = fmaf(wb.y, hv[q].w, acc[j][q]);
          }
        }
      }
      float* rd = red + (c & 1) * NW * R * BC;
#pragma unroll
      for (int j = 0; j < RPT; ++j) {
        const int r = lane + 32 * j;
        if (r < R) {
#pragma unroll
          for (int q = 0; q < BC; ++q) rd[(warp * R + r) * BC + q] = acc[j][q];
        }
      }
      if (GRID && c + 1 < nchunk) {
        float* dst = hs + ((c + 1) & 1) * BC * H;
#pragma unroll
        for (int q = 0; q < NPRE; ++q) {
          const int i = (tid + q * NT) * 4;
          if (i < BC * H) *reinterpret_cast<float4*>(dst + i) = pre[q];
        }
      }
      __syncthreads();

      // ---- pointwise: reduce the NW partials, apply the cell, publish h_t ----
      if (pw) {
        float s[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          float a = 0.f;
#pragma unroll
          for (int w = 0; w < NW; ++w) a += rd[(w * R + g * U + pu) * BC + pbc];
          s[g] = a;
        }
        const bool valid = t < len;
        float hnew = hprev;
        if (CELL == LSTM) {
          float& cref = cs[pu * rows_pad + b];
          if (valid) {
            const float gi = 1.f / (1.f + expf(-(xg[0] + bxr[0] + s[0] + bhr[0])));
            const float gf = 1.f / (1.f + expf(-(xg[1] + bxr[1] + s[1] + bhr[1])));
            const float gg = tanhf(xg[2] + bxr[2] + s[2] + bhr[2]);
            const float go = 1.f / (1.f + expf(-(xg[3] + bxr[3] + s[3] + bhr[3])));
            const float cnew = gf * cref + gi * gg;
            cref = cnew;
            hnew = go * tanhf(cnew);
          }
          if (t == T - 1) p.cn[dir][size_t(b0 + b) * H + u0 + pu] = cref;
        } else if (CELL == GRU) {
          if (valid) {
            const float r = 1.f / (1.f + expf(-(xg[0] + bxr[0] + s[0] + bhr[0])));
            const float z = 1.f / (1.f + expf(-(xg[1] + bxr[1] + s[1] + bhr[1])));
            const float n = tanhf(xg[2] + bxr[2] + r * (s[2] + bhr[2]));
            hnew = (1.f - z) * n + z * hprev;
          }
        } else {
          if (valid) {
            const float a = xg[0] + bxr[0] + s[0] + bhr[0];
            hnew = CELL == RNN_TANH ? tanhf(a) : fmaxf(a, 0.f);
          }
        }
        const int yt = valid ? te : t;
        p.y[(size_t(yt) * B + b0 + b) * (p.D * H) + dir * H + u0 + pu] = S::from_f(valid ? hnew : 0.f);
        if (t == T - 1) p.hn[dir][size_t(b0 + b) * H + u0 + pu] = hnew;
        if (GRID) {
          hg[size_t((t + 1) & 1) * B * H + size_t(b) * H + u0 + pu] = hnew;
        } else {
          float* dst = hs + size_t((t + 1) & 1) * hs_rows * H + b * H + u0 + pu;
          for (int q = 0; q < p.C; ++q) st_dsmem(map_dsmem(dst, q), hnew);
        }
      }
    }

    // ---- end of step: publish h_t to the group ----
    if (GRID) {
      __syncthreads();
      if (tid == 0) {
        __threadfence();
        st_release_gpu(p.flags[dir] + rank, unsigned(t + 1));
      }
    } else {
      cluster_arrive_release();
      cluster_wait_acquire();
    }
  }
}

}  // namespace lab
