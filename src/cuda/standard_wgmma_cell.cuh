// STANDARD algorithm, 16-bit Hopper step kernel (standard_wgmma.cuh): the cell on the product warps' accumulators
// (RegCell, session 76), with the two helpers it needs. Included by standard_wgmma.cuh only; see its header comment
// for the kernel, and RegCell's comment below for the fragment layout this relies on.
#pragma once

#include <cmath>
#include <cstdint>

#include "standard_kernels.cuh"  // FwdStep, CellInputs, to_f / from_f, cell::

namespace openrnn {
namespace cuda {
namespace wg {

// cell::sigmoid's operations (expf, then the IEEE reciprocal of y = 1 + exp(-x)) without the division's slow-path
// branch, which kept the compiler from interleaving one element's cell with the next one's. y >= 1, so the
// reciprocal's fast path (MUFU.RCP and one Newton step: the correctly rounded quotient, as the compiler's own code
// computes it for y in [1, 2^126)) applies except for y >= 2^126 (x < -87.3), where 1/y is below 2^-126: there y is
// scaled by 2^-64 first and the result by 2^-64 after (rounded twice, it may differ from the IEEE quotient in the last
// bit of a subnormal result); y = inf gives 0.
struct SigmoidNoBranch {
  __device__ __forceinline__ float operator()(float x) const {
    const float y = 1.f + cell::exp_(-x);
    const bool big = y >= 0x1p126f;
    const float ys = big ? y * 0x1p-64f : y;
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(ys));
    const float e = __fmaf_rn(ys, r, -1.f);
    r = __fmaf_rn(r, -e, r);
    return big ? (y == INFINITY ? 0.f : r * 0x1p-64f) : r;
  }
};

// Two adjacent values of the outputs as one store: (a, b) at p, p + 1 (p aligned to the pair: wgmma_prepare folds only
// where the cell's buffers allow it, fold_aligned).
__device__ __forceinline__ void st_pair(float* p, float a, float b) {
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}
template <typename T>
__device__ __forceinline__ void st_pair(T* p, T a, T b) {
  struct alignas(4) Pair {
    T a, b;
  };
  *reinterpret_cast<Pair*>(p) = Pair{a, b};
}

// The cell on the product's accumulators (the folded tiles but the lean one: Tile's REG). With the fold, thread
// (warpgroup wr, warp q, lane l) of the product holds one sequence, bl = 32 wr + 8 q + l / 4 of the tile, and, since
// the W box puts gate g's UB rows at columns g * UB, every gate of the units ul = 8 m + c2 + e (c2 = 2 (l % 4),
// m < UB / 8, e < 2): gate g's hi product in register 4 (g UB / 8 + m) + e, its lo product two registers further
// (mma_async's fragment). So the thread runs the cell on those UB / 4 elements from its registers: no accumulator
// store to shared memory, no gather, one sequence per thread, and every address is that row's base plus a constant.
// The arithmetic is lstm_unit_in's / gru_unit_in's (the same float operations in the same order, gh = hi + lo as the
// folded epilogue sums it, the sigmoid as SigmoidNoBranch: bitwise the same results but for subnormal sigmoids).
// Each element pair (e = 0, 1: adjacent units) is loaded and stored as one vector: a lane's pair and its three
// neighbours' fill one 32-byte sector of a row (16 bytes for 16-bit values). PERM (W_hh read through
// encode_perm_map's view, Maps::perm): the accumulator column 8 m + 2 c + e holds unit (UB / 4) c + 2 m + e instead,
// so the thread's units are the 2 M consecutive ones from ub = u0 + (UB / 4) c, loaded and stored as 16-byte vectors
// (8-byte for 16-bit values at M = 2): a quad's four lanes cover a row's UB units in whole sectors, with a quarter of
// the store instructions. Inputs (gx, the previous c or h, the biases) are loaded before the main loop, as
// CellInputs / CellBias.
template <int CELL, int UB, bool PERM = false, bool PAD = false>
struct RegCell {
  static constexpr int G = CellInputs<CELL>::G, M = UB / 8;
  // The unit of pair m (e = 0; e = 1 is the next unit) relative to the thread's first: 8 m, or with PERM 2 m (the
  // thread's units are then 2 M consecutive ones, ub = u0 + (UB / 4) (l % 4)).
  __device__ static constexpr int off(int m) { return PERM ? 2 * m : 8 * m; }
  static_assert(CELL == 0 || CELL == 1, "LSTM or GRU linear-before-reset");
  float x[M][G][2];  // gx of gate g (0 where the sequence is inactive)
  float prev[M][2];  // LSTM: the previous c
  // GRU: the previous h's hi and lo pairs as stored ([m][0] hi, [m][1] lo; e = 0 in the low half), added in run():
  // added here, the sums made the product warps wait for these loads before their first MMA (session 76, run 3: the
  // GRU step's hand-off took 2.6 µs against LSTM's 1.3-1.5 at B = 256 H = 1024).
  uint32_t hprev[CELL == 1 ? M : 1][2];
  // The biases as stored (16-bit, e = 0 in the low half): half the registers of floats, converted exactly where used.
  uint32_t bias[M][2][G];  // [m][0: b_ih, 1: b_hh][g]

  template <typename T>
  __device__ static uint32_t bits(T v) {
    return *reinterpret_cast<const uint16_t*>(&v);
  }
  template <typename T>
  __device__ static float half_at(uint32_t w, int e) {
    const uint16_t v = static_cast<uint16_t>(w >> (16 * e));
    return to_f(*reinterpret_cast<const T*>(&v));
  }
  template <typename T>
  __device__ __forceinline__ float bias_at(int m, int hh, int g, int e) const {
    return half_at<T>(bias[m][hh][g], e);
  }
  // The state rows (FwdStep::hrow) and the lo part's offset: PAD, the padded pitch p.hsp (StdDims::wpad); else Hout
  // and H, as the kernels were before the padding (a run-time p.hsp there cost LSTM's tiles 0.6-1.9% at H = 1024:
  // session 81, run 4). PAD is the kernel's (launch_pad: p.hsp != p.Hout).
  template <typename T>
  __device__ static long long srow(const FwdStep<T, float>& p, int b) {
    return PAD ? p.hrow(b) : (long long)b * p.Hout * 2;
  }
  template <typename T>
  __device__ static int lo_off(const FwdStep<T, float>& p) {
    return PAD ? p.hsp : p.H;
  }
  // Biases: never written by a forward call (loaded before pdl_wait); 0 where absent or past H. ub = u0 + c2: the
  // thread's first unit. (The caller's weight buffer: 2-byte alignment only, so two loads.)
  template <typename T>
  __device__ __forceinline__ void load_bias(const FwdStep<T, float>& p, int ub) {
    const int H = p.H;
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int u = ub + off(m);  // H % 8 == 0: both units of the pair are in or out
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const T* bp = hh ? p.bhh : p.bih;
#pragma unroll
        for (int g = 0; g < G; ++g)
          bias[m][hh][g] = bp && u < H ? bits(bp[g * H + u]) | (bits(bp[g * H + u + 1]) << 16) : 0u;
      }
    }
  }
  // No value loaded here feeds an operation before the main loop (the product warps do not wait on these loads there).
  template <typename T>
  __device__ __forceinline__ void load(const FwdStep<T, float>& p, int b, int ub) {
    if constexpr (PERM)
      load_perm(p, b, ub);
    else
      load_plain(p, b, ub);
  }
  template <typename T>
  __device__ __forceinline__ void load_plain(const FwdStep<T, float>& p, int b, int ub) {
    const int H = p.H;
    const bool valid = b < p.B, act = valid && p.active(b);
    const float* gr = p.gx + (act ? p.gx_rows.row(p.t, b) * (G * H) + ub : 0);
    const T* hr = p.hin + (valid ? srow(p, b) + ub : 0);
    const float* cr = CELL == 0 ? p.cin + (valid ? (long long)b * H + ub : 0) : nullptr;
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const bool ok = ub + 8 * m < H;  // H % 8 == 0: both units of the pair are in or out
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float2 v = act && ok ? *reinterpret_cast<const float2*>(gr + g * H + 8 * m) : make_float2(0.f, 0.f);
        x[m][g][0] = v.x;
        x[m][g][1] = v.y;
      }
      if constexpr (CELL == 0) {
        const float2 v = valid && ok ? *reinterpret_cast<const float2*>(cr + 8 * m) : make_float2(0.f, 0.f);
        prev[m][0] = v.x;
        prev[m][1] = v.y;
      } else {  // the state buffer: 16-byte aligned, unit pairs 4-byte aligned
        hprev[m][0] = valid && ok ? *reinterpret_cast<const uint32_t*>(hr + 8 * m) : 0u;
        hprev[m][1] = valid && ok ? *reinterpret_cast<const uint32_t*>(hr + 8 * m + lo_off(p)) : 0u;
      }
    }
  }

  // PERM: the thread's 2 M consecutive units (H % UB == 0: all of them in range) move as 16-byte vectors (8-byte for
  // 16-bit values at M = 2): every buffer 16-byte aligned (wgmma_prepare's perm_aligned), row strides multiples of 8
  // elements, ub a multiple of 2 M.
  __device__ static void ld_run(const float* q, float (&v)[M][2]) {
#pragma unroll
    for (int j = 0; j < M / 2; ++j) {
      const float4 w = *reinterpret_cast<const float4*>(q + 4 * j);
      v[2 * j][0] = w.x;
      v[2 * j][1] = w.y;
      v[2 * j + 1][0] = w.z;
      v[2 * j + 1][1] = w.w;
    }
  }
  __device__ static void st_run(float* q, const float (&v)[M][2]) {
#pragma unroll
    for (int j = 0; j < M / 2; ++j)
      *reinterpret_cast<float4*>(q + 4 * j) = make_float4(v[2 * j][0], v[2 * j][1], v[2 * j + 1][0], v[2 * j + 1][1]);
  }
  template <typename T>
  __device__ static void ld_words(const T* q, uint32_t (&w)[M]) {  // M words: units 2m, 2m + 1 in word m
    if constexpr (M == 4) {
      const uint4 v = *reinterpret_cast<const uint4*>(q);
      w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    } else {
      static_assert(M == 2, "UB = 16 or 32");
      const uint2 v = *reinterpret_cast<const uint2*>(q);
      w[0] = v.x, w[1] = v.y;
    }
  }
  template <typename T>
  __device__ static void st_words(T* q, const uint32_t (&w)[M]) {
    if constexpr (M == 4)
      *reinterpret_cast<uint4*>(q) = make_uint4(w[0], w[1], w[2], w[3]);
    else
      *reinterpret_cast<uint2*>(q) = make_uint2(w[0], w[1]);
  }
  template <typename T>
  __device__ __forceinline__ void load_perm(const FwdStep<T, float>& p, int b, int ub) {
    const int H = p.H;
    const bool valid = b < p.B, act = valid && p.active(b);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float v[M][2];
      if (act) {
        ld_run(p.gx + p.gx_rows.row(p.t, b) * (G * H) + g * H + ub, v);
      } else {
#pragma unroll
        for (int m = 0; m < M; ++m) v[m][0] = v[m][1] = 0.f;
      }
#pragma unroll
      for (int m = 0; m < M; ++m) x[m][g][0] = v[m][0], x[m][g][1] = v[m][1];
    }
    if constexpr (CELL == 0) {
      if (valid) {
        ld_run(p.cin + (long long)b * H + ub, prev);
      } else {
#pragma unroll
        for (int m = 0; m < M; ++m) prev[m][0] = prev[m][1] = 0.f;
      }
    } else {
      uint32_t hi[M], lo[M];
      if (valid) {
        ld_words(p.hin + srow(p, b) + ub, hi);
        ld_words(p.hin + srow(p, b) + ub + lo_off(p), lo);
      } else {
#pragma unroll
        for (int m = 0; m < M; ++m) hi[m] = lo[m] = 0u;
      }
#pragma unroll
      for (int m = 0; m < M; ++m) hprev[m][0] = hi[m], hprev[m][1] = lo[m];
    }
  }

  template <typename T, int R>
  __device__ __forceinline__ void run(const FwdStep<T, float>& p, int b, int ub, const float (&acc)[R]) const {
    static_assert(R == G * UB / 2, "the m64 x (G * UB) fragment");
    if (b >= p.B) return;
    const int H = p.H, GH = G * H, hs = lo_off(p);
    const bool act = p.active(b);
    const T* hi_in = p.hin + srow(p, b) + ub;  // the state rows: hi at [u], lo at [u + hs] (no projection)
    T* hi_out = p.hout + srow(p, b) + ub;
    T* yr = p.y + p.y_rows.row(p.t, b) * p.y_width + p.y_col + ub;
    float* cr = CELL == 0 ? p.cout + (long long)b * H + ub : nullptr;
    float* ar = p.acts ? p.acts + (long long)b * GH + ub : nullptr;
    float* hnr = p.hn ? p.hn + (long long)b * H + ub : nullptr;
    if (!act) {  // carried: the state and c unchanged, y the fill value, the step's activations 0
      const T fill = from_f<T>(p.fill);
      if constexpr (PERM) {
        uint32_t w[M];
        ld_words(hi_in, w);
        st_words(hi_out, w);
        ld_words(hi_in + hs, w);
        st_words(hi_out + hs, w);
#pragma unroll
        for (int m = 0; m < M; ++m) w[m] = bits(fill) | (bits(fill) << 16);
        st_words(yr, w);
        if constexpr (CELL == 0) st_run(cr, prev);
        float z[M][2];
#pragma unroll
        for (int m = 0; m < M; ++m) z[m][0] = z[m][1] = 0.f;
        if (ar)
#pragma unroll
          for (int g = 0; g < G; ++g) st_run(ar + g * H, z);
        if (hnr) st_run(hnr, z);
      } else {
#pragma unroll
        for (int m = 0; m < M; ++m) {
          if (ub + 8 * m >= H) break;
          const int o = 8 * m;
          *reinterpret_cast<uint32_t*>(hi_out + o) = *reinterpret_cast<const uint32_t*>(hi_in + o);
          *reinterpret_cast<uint32_t*>(hi_out + o + hs) = *reinterpret_cast<const uint32_t*>(hi_in + o + hs);
          st_pair(yr + o, fill, fill);
          if constexpr (CELL == 0) st_pair(cr + o, prev[m][0], prev[m][1]);
          if (ar)
#pragma unroll
            for (int g = 0; g < G; ++g) st_pair(ar + g * H + o, 0.f, 0.f);
          if (hnr) st_pair(hnr + o, 0.f, 0.f);
        }
      }
      return;
    }
    // Every element's arithmetic first (no branch between elements, so that the compiler interleaves them; units past
    // H compute on zeros and are not stored), then the stores.
    float h[M][2], c[M][2], av[M][G][2], hnv[M][2];
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float gh[G];
#pragma unroll
        for (int g = 0; g < G; ++g) gh[g] = acc[4 * (g * M + m) + e] + acc[4 * (g * M + m) + 2 + e];
        if constexpr (CELL == 0) {
          float pre[4];
#pragma unroll
          for (int g = 0; g < 4; ++g)
            pre[g] = x[m][g][e] + gh[g] + bias_at<T>(m, 0, g, e) + bias_at<T>(m, 1, g, e);
          cell::LstmAct<float> a;
          cell::lstm_forward(pre[0], pre[1], pre[2], pre[3], prev[m][e], p.clip, a, c[m][e], h[m][e],
                             SigmoidNoBranch{});
          av[m][0][e] = a.i;
          av[m][1][e] = a.f;
          av[m][2][e] = a.g;
          av[m][3][e] = a.o;
        } else {
          const float xr = x[m][0][e] + bias_at<T>(m, 0, 0, e), xz = x[m][1][e] + bias_at<T>(m, 0, 1, e),
                      xn = x[m][2][e] + bias_at<T>(m, 0, 2, e);
          const float hr = gh[0] + bias_at<T>(m, 1, 0, e), hz = gh[1] + bias_at<T>(m, 1, 1, e),
                      hn = gh[2] + bias_at<T>(m, 1, 2, e);
          const float hp = half_at<T>(hprev[m][0], e) + half_at<T>(hprev[m][1], e);  // ld_split: hi + lo
          cell::gru_forward(xr, xz, xn, hr, hz, hn, hp, av[m][0][e], av[m][1][e], av[m][2][e], h[m][e],
                            SigmoidNoBranch{});
          hnv[m][e] = hn;
        }
      }
    if constexpr (PERM) {  // the thread's 2 M consecutive units as vectors
      if constexpr (CELL == 0) st_run(cr, c);
      if (ar)
#pragma unroll
        for (int g = 0; g < G; ++g) {
          float v[M][2];
#pragma unroll
          for (int m = 0; m < M; ++m) v[m][0] = av[m][g][0], v[m][1] = av[m][g][1];
          st_run(ar + g * H, v);
        }
      if constexpr (CELL == 1)
        if (hnr) st_run(hnr, hnv);
      uint32_t whi[M], wlo[M];
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const T hi0 = from_f<T>(h[m][0]), hi1 = from_f<T>(h[m][1]);
        whi[m] = bits(hi0) | (bits(hi1) << 16);
        wlo[m] = bits(from_f<T>(h[m][0] - to_f(hi0))) | (bits(from_f<T>(h[m][1] - to_f(hi1))) << 16);
      }
      st_words(hi_out, whi);
      st_words(hi_out + hs, wlo);
      st_words(yr, whi);
    } else {
#pragma unroll
      for (int m = 0; m < M; ++m) {
        if (ub + 8 * m >= H) break;
        const int o = 8 * m;
        if constexpr (CELL == 0) st_pair(cr + o, c[m][0], c[m][1]);
        if (ar)
#pragma unroll
          for (int g = 0; g < G; ++g) st_pair(ar + g * H + o, av[m][g][0], av[m][g][1]);
        if constexpr (CELL == 1)
          if (hnr) st_pair(hnr + o, hnv[m][0], hnv[m][1]);
        // put_h (the split state) and put_y
        const T hi0 = from_f<T>(h[m][0]), hi1 = from_f<T>(h[m][1]);
        st_pair(hi_out + o, hi0, hi1);
        st_pair(hi_out + o + hs, from_f<T>(h[m][0] - to_f(hi0)), from_f<T>(h[m][1] - to_f(hi1)));
        st_pair(yr + o, hi0, hi1);
      }
    }
  }
};

}  // namespace wg
}  // namespace cuda
}  // namespace openrnn
