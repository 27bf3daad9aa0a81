// Lab version v5 (DRAFT, never run on a GPU): v4 with the recurrent matvec on tensor cores (mma.sync m16n8k16,
// 16-bit W_hh as A fragments resident in registers, h split into 16-bit hi + lo parts as B fragments, float32
// accumulation), for 16-bit LSTM at B >= 16 where v4's FFMA matvec is issue-bound (dev/lab/README.md). Everything
// after the matvec (gate phase, cell phase, exchange, padding, ragged lengths) is v4's code. Warp w owns row tile
// w / KS (16 rows) and k slice w % KS; the KS partial sums of a row meet in shared memory as in v4.
// Compiled only with -DLAB_WITH_V5; not part of the library.
#pragma once

#include <type_traits>

#include "persist_common.cuh"
#include "../../src/cuda/persistent_common.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID>
struct FwdConfigV5 {
  using Pair = typename Store<TW>::Pair;
  static constexpr int G = CellTraits<CELL>::G;
  static constexpr int U = R / G;
  static constexpr int H = NW * KPW;
  static constexpr int NT = NW * 32;
  // Tensor-core split: RT row tiles of 16 rows, KS warps per row tile each owning KW = H / KS of the k range
  // (KSTEPS mma k-steps of 16, A fragments resident in registers: 4 per k-step); NB n-tiles of 8 batch columns.
  static constexpr int RT = R / 16;
  static constexpr int KS = NW / RT;
  static constexpr int KW = H / KS;
  static constexpr int KSTEPS = KW / 16;
  static constexpr int NB = BC / 8;
  static constexpr int HP = H + 8;  // h row stride in shared memory: breaks the 8-way bank conflict of B fragments
  static_assert(sizeof(TW) == 2, "tensor-core variant: 16-bit storage only");
  static_assert(R % 16 == 0 && NW % RT == 0 && H % (KS * 16) == 0, "whole 16x16 tiles per warp");
  static_assert(BC % 8 == 0 && KS % 2 == 0, "n-tiles of 8; even partial count");
  static_assert(R % G == 0 && U % 4 == 0, "R must hold whole units, U a multiple of 4");
  // Gate phase: thread tid handles row tid % R of the columns tid / R + i * (NT / R), i < GI.
  static_assert(NT % R == 0 && (R * BC) % NT == 0, "whole gate-phase rounds");
  static constexpr int GI = R * BC / NT;

  // Shared memory: red [2][KS][BC][R] | hs [2][hs_rows][HP] | gs [BC][R + U] | cs [2][rows_pad][U] (LSTM) |
  // lens int [rows_pad]. W_hh lives in registers only.
  static size_t smem_bytes(int hs_rows, int rows_pad) {
    size_t w = 0;
    size_t red = size_t(2) * KS * R * BC;
    size_t hs = size_t(2) * hs_rows * HP;
    size_t gs = size_t(BC) * (R + U);
    size_t cs = CELL == LSTM ? size_t(2) * rows_pad * U : 0;
    return w + 4 * (red + hs + gs + cs) + 4 * size_t(rows_pad);
  }
};

// D = A * B + D, m16n8k16, 16-bit inputs, float32 accumulation.
template <typename TW>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same<TW, __nv_bfloat16>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

template <int CELL, typename TW, int R, int NW, int KPW, int KREG, int BC, bool GRID>
__global__ void __launch_bounds__(NW * 32, 1) persist_fwd_v5_kernel(const FwdParams<TW> p) {
  using Cfg = FwdConfigV5<CELL, TW, R, NW, KPW, KREG, BC, GRID>;
  using S = Store<TW>;
  using Pair = typename Cfg::Pair;
  constexpr int G = Cfg::G, U = Cfg::U, H = Cfg::H, NT = Cfg::NT, KS = Cfg::KS, KW = Cfg::KW, KSTEPS = Cfg::KSTEPS;
  constexpr int NB = Cfg::NB, HP = Cfg::HP, GI = Cfg::GI, GQS = NT / R;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int dir = blockIdx.y;
  const bool reverse = dir == 1;
  const int T = p.T, B = p.B, Hr = p.Hr;
  const int rank = blockIdx.x % p.C, group = blockIdx.x / p.C;
  const int b0 = group * p.BT;
  const int nb = min(p.BT, B - b0);
  const int nchunk = (nb + BC - 1) / BC;
  const int rows_pad = nchunk * BC;
  const int hs_rows = GRID ? BC : rows_pad;
  const int u0 = rank * U;
  const bool prof = p.prof && blockIdx.x == 0 && blockIdx.y == 0 && tid == 0;

  extern __shared__ float4 smem4[];
  float* red = reinterpret_cast<float*>(smem4);
  float* hs = red + 2 * KS * R * BC;
  float* gs = hs + 2 * hs_rows * HP;
  float* cs = gs + BC * (R + U);
  int* lens = reinterpret_cast<int*>(cs + (CELL == LSTM ? 2 * rows_pad * U : 0));

  // ---- W_hh slice -> mma A fragments (m16n8k16, row-major A): warp = (row tile wr, k slice wk); lane holds rows
  // g = lane/4 and g+8 of the tile, k pairs 2*(lane%4) and +8 of every k-step. Padded rows / columns read as 0.
  const TW* W = p.whh[dir];
  const int wr = warp / KS, wk = warp % KS;
  uint32_t afr[KSTEPS][4];
  {
    const TW zero = S::from_f(0.f);
    const int rA = wr * 16 + lane / 4, rB = rA + 8;
    auto grow = [&](int r) { return (r / U) * Hr + u0 + r % U; };
    const bool okA = u0 + rA % U < Hr, okB = u0 + rB % U < Hr;
    const TW* srcA = W + (okA ? size_t(grow(rA)) * Hr : 0);
    const TW* srcB = W + (okB ? size_t(grow(rB)) * Hr : 0);
    auto pack = [&](const TW* src, bool ok, int k) {
      const TW a = ok && k < Hr ? src[k] : zero, b = ok && k + 1 < Hr ? src[k + 1] : zero;
      const Pair pr = S::from_f2(S::to_f(a), S::to_f(b));
      return *reinterpret_cast<const uint32_t*>(&pr);
    };
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      const int k = wk * KW + ks * 16 + 2 * (lane % 4);
      afr[ks][0] = pack(srcA, okA, k);
      afr[ks][1] = pack(srcB, okB, k);
      afr[ks][2] = pack(srcA, okA, k + 8);
      afr[ks][3] = pack(srcB, okB, k + 8);
    }
  }

  // Gate-phase role: row gr of column gq (gate gg, unit gu); biases of that row.
  const int gq = tid / R, gr = tid % R, gg = gr / U, gu = gr % U;
  const bool g_live = u0 + gu < Hr;
  const float gbx = g_live ? p.bx[dir][gg * Hr + u0 + gu] : 0.f;
  const float gbh = g_live ? p.bh[dir][gg * Hr + u0 + gu] : 0.f;
  // Cell-phase role: copy pk of (unit pu, column pbc).
  const int ncopy = GRID ? 1 : min(NT / (U * BC), p.C);
  const int pk = tid / (U * BC), pu = tid % U, pbc = (tid / U) % BC;
  const bool cell_thread = pk < ncopy;
  const bool p_live = u0 + pu < Hr;

  // ---- initial state ----
  const float* h0 = p.h0[dir];
  for (int i = tid; i < rows_pad; i += NT) lens[i] = i < nb ? (p.lengths ? p.lengths[b0 + i] : T) : 0;
  if (!GRID) {
    for (int i = tid; i < 2 * hs_rows * HP; i += NT) {
      const int buf = i / (hs_rows * HP), b = (i / HP) % hs_rows, k = i % HP;
      hs[i] = (buf == 0 && b < nb && h0 && k < Hr) ? h0[size_t(b0 + b) * Hr + k] : 0.f;
    }
  }
  if (CELL == LSTM) {
    for (int i = tid; i < U * rows_pad; i += NT) {
      const int b = i / U, u = i % U;
      cs[i] = (b < nb && p.c0[dir] && u0 + u < Hr) ? p.c0[dir][size_t(b0 + b) * Hr + u0 + u] : 0.f;
    }
  }
  __syncthreads();  // lens visible to every role

  const float* xp = p.xproj[dir];
  // Input projection of gate row gr, column gq of chunk c at step s (0 when not needed: padded unit, column past
  // the tile, step past the length). A plain load: issued a chunk ahead, it lands during the barrier / matvec.
  auto load_x = [&](int s, int c, int q) -> float {
    const int b = c * BC + q;
    if (!g_live || b >= nb) return 0.f;
    const int len = lens[b];
    if (s >= len) return 0.f;
    const int te = reverse ? len - 1 - s : s;
    return xp[(size_t(te) * B + b0 + b) * (G * H) + gg * H + u0 + gu];
  };
  float xv[GI];
#pragma unroll
  for (int i = 0; i < GI; ++i) xv[i] = load_x(0, 0, gq + i * GQS);
  if (!GRID) {
    cluster_arrive_release();
    cluster_wait_acquire();
  } else {
    __syncthreads();
  }

  float* hg = GRID ? p.hg[dir] : nullptr;
  unsigned* counter = GRID ? p.flags[dir] + group : nullptr;
  // Grid mode: rows [c*BC, (c+1)*BC) of h_{t-1} -> hs[c & 1]: from hg with cp.async (zero-filled past nb), or at
  // t = 0 from h0 ([B, Hr], possibly odd Hr: plain loads, zero past Hr).
  auto load_chunk = [&](int c, const float* hsrc, bool from_h0) {
    float* dst = hs + (c & 1) * BC * HP;
    if (from_h0) {
      for (int i = tid; i < BC * H; i += NT) {
        const int bb = c * BC + i / H, k = i % H;
        dst[(i / H) * HP + k] = (bb < nb && hsrc && k < Hr) ? hsrc[size_t(b0 + bb) * Hr + k] : 0.f;
      }
      return;
    }
    for (int i = tid * 4; i < BC * H; i += NT * 4) {
      const int bb = c * BC + i / H;
      const bool ok = bb < nb;
      cp_async16_zfill(dst + (i / H) * HP + i % H, ok ? hsrc + size_t(b0 + bb) * H + i % H : p.bx[dir], ok ? 16 : 0);
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
      load_chunk(0, hsrc, t == 0);
      cp_async_wait_all();
      __syncthreads();
    }
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 0] = clock64();
    const int cbuf = t & 1;  // LSTM c: read cs[cbuf], write cs[cbuf ^ 1]

    for (int c = 0; c < nchunk; ++c) {
      const float* hcur = GRID ? hs + (c & 1) * BC * HP : hs + size_t(t & 1) * hs_rows * HP + c * BC * HP;
      const int b = c * BC + pbc;
      const bool pw = cell_thread && b < nb;
      // h_{t-1} of this thread's unit, read before the next chunk's loads may overwrite the grid-mode buffer.
      const float hprev = pw ? hcur[pbc * HP + u0 + pu] : 0.f;

      if (GRID && c + 1 < nchunk) load_chunk(c + 1, hsrc, t == 0);

      // ---- 1. matvec on tensor cores: per n-tile of 8 columns, D += A(W) * B(h_hi) + A(W) * B(h_lo), where h (float32)
      // = h_hi + h_lo in two 16-bit parts (the hi/lo split keeps ~16 mantissa bits of h; W is exact in its type) ----
      float acc[NB][4];
#pragma unroll
      for (int j = 0; j < NB; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        const int k = wk * KW + ks * 16 + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < NB; ++j) {
          const float* hrow = hcur + (j * 8 + lane / 4) * HP;
          const float2 x0 = *reinterpret_cast<const float2*>(hrow + k);
          const float2 x1 = *reinterpret_cast<const float2*>(hrow + k + 8);
          const Pair h0p = S::from_f2(x0.x, x0.y), h1p = S::from_f2(x1.x, x1.y);
          const float2 r0 = S::to_f2(h0p), r1 = S::to_f2(h1p);
          const Pair l0p = S::from_f2(x0.x - r0.x, x0.y - r0.y), l1p = S::from_f2(x1.x - r1.x, x1.y - r1.y);
          const uint32_t bh[2] = {*reinterpret_cast<const uint32_t*>(&h0p), *reinterpret_cast<const uint32_t*>(&h1p)};
          const uint32_t bl[2] = {*reinterpret_cast<const uint32_t*>(&l0p), *reinterpret_cast<const uint32_t*>(&l1p)};
          mma_16816<TW>(acc[j], afr[ks], bh);
          mma_16816<TW>(acc[j], afr[ks], bl);
        }
      }
      float* rd = red + (c & 1) * KS * R * BC;
      // C fragment: rows g, g+8 of the tile, columns 2*(lane%4) and +1 of the n-tile.
#pragma unroll
      for (int j = 0; j < NB; ++j) {
        const int r = wr * 16 + lane / 4, q = j * 8 + 2 * (lane % 4);
        rd[(wk * BC + q) * R + r] = acc[j][0];
        rd[(wk * BC + q + 1) * R + r] = acc[j][1];
        rd[(wk * BC + q) * R + r + 8] = acc[j][2];
        rd[(wk * BC + q + 1) * R + r + 8] = acc[j][3];
      }
      if (GRID && c + 1 < nchunk) cp_async_wait_all();
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 1] = clock64();
      __syncthreads();
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 2] = clock64();

      // ---- 2. gate phase (same float operations, same order as v3's pointwise code) ----
#pragma unroll
      for (int i = 0; i < GI; ++i) {
        const int q = gq + i * GQS;
        if (c * BC + q >= nb) continue;
        float a0 = 0.f, a1 = 0.f;
#pragma unroll
        for (int w = 0; w < KS; w += 2) {
          a0 += rd[(w * BC + q) * R + gr];
          a1 += rd[((w + 1) * BC + q) * R + gr];
        }
        const float sum = a0 + a1;
        float* gd = gs + q * (R + U);
        if (CELL == LSTM) {
          const float pre = xv[i] + gbx + sum + gbh;
          gd[gr] = gg == 2 ? fast_tanh(pre) : fast_sigmoid(pre);
        } else if (CELL == GRU) {
          if (gg < 2) {
            gd[gr] = fast_sigmoid(xv[i] + gbx + sum + gbh);
          } else {
            gd[gr] = xv[i] + gbx;
            gd[R + gu] = sum + gbh;
          }
        } else {
          const float a = xv[i] + gbx + sum + gbh;
          gd[gr] = CELL == RNN_TANH ? fast_tanh(a) : fmaxf(a, 0.f);
        }
      }
#pragma unroll
      for (int i = 0; i < GI; ++i) {
        if (c + 1 < nchunk) xv[i] = load_x(t, c + 1, gq + i * GQS);
        else if (t + 1 < T) xv[i] = load_x(t + 1, 0, gq + i * GQS);
      }
      __syncthreads();
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 3] = clock64();

      // ---- 3. cell phase ----
      if (pw) {
        const float* gd = gs + pbc * (R + U);
        const int len = lens[b];
        const bool valid = t < len;
        const int te = reverse ? len - 1 - t : t;
        float hnew = hprev;
        if (CELL == LSTM) {
          const float cprev = cs[(cbuf * rows_pad + b) * U + pu];
          float cnew = cprev;
          if (valid) {
            cnew = gd[U + pu] * cprev + gd[pu] * gd[2 * U + pu];
            if (p.clip > 0.f) cnew = fminf(fmaxf(cnew, -p.clip), p.clip);
            hnew = gd[3 * U + pu] * fast_tanh(cnew);
          }
          if (!p_live) cnew = 0.f;
          if (pk == 0) {
            cs[((cbuf ^ 1) * rows_pad + b) * U + pu] = cnew;
            if (t == T - 1 && p_live) p.cn[dir][size_t(b0 + b) * Hr + u0 + pu] = cnew;
          }
        } else if (CELL == GRU) {
          if (valid) {
            const float r = gd[pu], z = gd[U + pu];
            const float n = fast_tanh(gd[2 * U + pu] + r * gd[R + pu]);
            hnew = (1.f - z) * n + z * hprev;
          }
        } else {
          if (valid) hnew = gd[pu];
        }
        if (!p_live) hnew = 0.f;
        if (pk == 0) {
          const int yt = valid ? te : t;
          if (p_live) {
            p.y[(size_t(yt) * B + b0 + b) * (p.D * Hr) + dir * Hr + u0 + pu] = S::from_f(valid ? hnew : 0.f);
            if (t == T - 1) p.hn[dir][size_t(b0 + b) * Hr + u0 + pu] = hnew;
          }
          if (GRID) hg[size_t((t + 1) & 1) * B * H + size_t(b0 + b) * H + u0 + pu] = hnew;
        }
        if (!GRID) {
          float* dst = hs + size_t((t + 1) & 1) * hs_rows * HP + b * HP + u0 + pu;
          for (int q = pk; q < p.C; q += ncopy) st_dsmem(map_dsmem(dst, q), hnew);
        }
      }
      if (prof && c == 0 && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 4] = clock64();
    }
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + 5] = clock64();

    // ---- publish h_t ----
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
using openrnn::cuda::persist::FwdConfigV5;
using openrnn::cuda::persist::persist_fwd_v5_kernel;
}  // namespace lab
