// Lane types for the CPU pointwise loops. The step loops in cpu_pointwise.h are written once over a lane type V:
//   double   one lane; the activations are cell_math.h's own (libm exp/tanh), so a float64 problem computes exactly
//            the equations of src/cell_math.h in the same order: the float64 path is the oracle.
//   VecF     eight float32 lanes (AVX2 + FMA; the library is built with -march=x86-64-v3) with a polynomial exp and
//            tanh written below. Measured against double libm on 7.4 million points of [-90, 90] (scratch program
//            simd_check.cpp, 2026-11-21): relative error at most 1.3 * 2^-24 for exp, 3.1 * 2^-24 for tanh (absolute
//            9.3e-8), 2.5 * 2^-24 for sigmoid, i.e. within 1.6 ulp: float32 results stay far inside the 1e-5
//            relative contract against float64.
// Tails (a unit range that is not a multiple of the lane count) use masked loads/stores, so every unit goes through
// the same arithmetic.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cell_math.h"

namespace openrnn {
namespace cpu {

// ---- double: one lane, cell_math.h's scalar functions ------------------------------------------------------------
inline double vload(const double* p, int /*n*/) { return *p; }
inline void vstore(double* p, double v, int /*n*/) { *p = v; }
inline double vsigmoid(double x) { return cell::sigmoid(x); }
inline double vtanh(double x) { return cell::tanh_(x); }
inline double vrelu(double x) { return cell::relu(x); }
// c clamped to [-clip, clip] (clip > 0), as in cell::lstm_forward.
inline double vclamp(double c, double clip) { return c > clip ? clip : (c < -clip ? -clip : c); }
// dc where |c| < clip, else 0 (cell::lstm_backward: a clipped c' passes no gradient).
inline double vclip_grad(double dc, double c, double clip) { return (c < clip && c > -clip) ? dc : 0.0; }
// relu'(h) * dh with relu'(0) = 0 (cell::rnn_backward).
inline double vrelu_grad(double h, double dh) { return h > 0.0 ? dh : 0.0; }

template <typename S>
struct Lanes;
template <>
struct Lanes<double> {
  using V = double;
  static constexpr int N = 1;
  static double set1(double s) { return s; }
};

// ---- float32: eight AVX2 lanes ---------------------------------------------------------------------------------
struct VecF {
  __m256 v;
  VecF() = default;
  VecF(__m256 x) : v(x) {}  // NOLINT: implicit on purpose, the lane type behaves like a number
  VecF(float s) : v(_mm256_set1_ps(s)) {}
};
inline VecF operator+(VecF a, VecF b) { return _mm256_add_ps(a.v, b.v); }
inline VecF operator-(VecF a, VecF b) { return _mm256_sub_ps(a.v, b.v); }
inline VecF operator*(VecF a, VecF b) { return _mm256_mul_ps(a.v, b.v); }
inline VecF operator/(VecF a, VecF b) { return _mm256_div_ps(a.v, b.v); }
inline VecF operator-(VecF a) { return _mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f)); }

// Mask of the first n lanes (n in 1..8).
inline __m256i lane_mask(int n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}
inline VecF vload(const float* p, int n) {
  if (n >= 8) return _mm256_loadu_ps(p);
  return _mm256_maskload_ps(p, lane_mask(n));
}
inline void vstore(float* p, VecF v, int n) {
  if (n >= 8)
    _mm256_storeu_ps(p, v.v);
  else
    _mm256_maskstore_ps(p, lane_mask(n), v.v);
}

// e^x for float32 lanes. x is clamped to [-87.3, 88.7] (results flush to ~1e-38 / ~3.4e38 there; the activations
// below saturate long before). Range reduction x = n ln2 + r, |r| <= ln2/2, with ln2 split in a high part exact in
// float and a low correction; e^r by its Taylor series to r^7 (truncation < 6e-9 relative); 2^n built in the
// exponent field.
inline VecF vexp(VecF xv) {
  __m256 x = _mm256_min_ps(_mm256_max_ps(xv.v, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2 = 0.693359375 (exact in 9 bits) - 2.12194440e-4
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n: n in [-126, 128]; split in two factors so that n = 128 (x near 88.7) does not overflow the exponent field.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

inline VecF vsigmoid(VecF x) { return VecF(1.0f) / (VecF(1.0f) + vexp(-x)); }

// tanh for float32 lanes: |x| < 0.5 by the odd Taylor series to x^17 (truncation < 5e-10); otherwise
// sign(x) (1 - 2 / (1 + e^{2|x|})), which loses at most one bit to cancellation for |x| >= 0.5 and saturates to
// exactly +-1 for large |x|.
inline VecF vtanh(VecF xv) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign, xv.v);
  const __m256 s = _mm256_mul_ps(xv.v, xv.v);
  __m256 p = _mm256_set1_ps(6404582.0f / 10854718875.0f);
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-929569.0f / 638512875.0f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(21844.0f / 6081075.0f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-1382.0f / 155925.0f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(62.0f / 2835.0f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-17.0f / 315.0f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(2.0f / 15.0f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-1.0f / 3.0f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, s), xv.v, xv.v);
  const __m256 e = vexp(VecF(_mm256_add_ps(ax, ax))).v;
  const __m256 big_abs =
      _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e)));
  const __m256 big = _mm256_or_ps(big_abs, _mm256_and_ps(sign, xv.v));
  const __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.5f), _CMP_LT_OQ);
  return _mm256_blendv_ps(big, small, is_small);
}
inline VecF vrelu(VecF x) {
  // x > 0 ? x : 0 (NaN maps to 0 in both this and cell::relu)
  return _mm256_and_ps(x.v, _mm256_cmp_ps(x.v, _mm256_setzero_ps(), _CMP_GT_OQ));
}
inline VecF vclamp(VecF c, float clip) {
  return _mm256_min_ps(_mm256_max_ps(c.v, _mm256_set1_ps(-clip)), _mm256_set1_ps(clip));
}
inline VecF vclip_grad(VecF dc, VecF c, float clip) {
  const __m256 inside = _mm256_and_ps(_mm256_cmp_ps(c.v, _mm256_set1_ps(clip), _CMP_LT_OQ),
                                      _mm256_cmp_ps(c.v, _mm256_set1_ps(-clip), _CMP_GT_OQ));
  return _mm256_and_ps(dc.v, inside);
}
inline VecF vrelu_grad(VecF h, VecF dh) {
  return _mm256_and_ps(dh.v, _mm256_cmp_ps(h.v, _mm256_setzero_ps(), _CMP_GT_OQ));
}

template <>
struct Lanes<float> {
  using V = VecF;
  static constexpr int N = 8;
  static VecF set1(float s) { return VecF(s); }
};

}  // namespace cpu
}  // namespace openrnn
