// Storage types of the test harness, written independently of src/dtype.h: encode a double into the bytes of an
// openrnn_data_type element (round to nearest, ties to even), decode bytes back into a double, and round a double to
// the nearest value of a type. Also the harness's random number generator (splitmix64; unrelated to Philox).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "openrnn/openrnn.h"

namespace ort {

inline size_t elem_size(openrnn_data_type t) {
  return t == OPENRNN_DATA_DOUBLE ? 8 : t == OPENRNN_DATA_FLOAT ? 4 : 2;
}

inline const char* type_tag(openrnn_data_type t) {
  switch (t) {
    case OPENRNN_DATA_DOUBLE: return "f64";
    case OPENRNN_DATA_FLOAT: return "f32";
    case OPENRNN_DATA_HALF: return "f16";
    case OPENRNN_DATA_BFLOAT16: return "bf16";
  }
  return "bad";
}

// Rounds v to `bits` significant bits (implicit bit included), with the exponent floored at min_exp (values below
// 2^min_exp are subnormal: quantum 2^(min_exp - bits + 1)). Uses nearbyint in the default round-to-nearest-even mode.
inline double round_significand(double v, int bits, int min_exp) {
  if (!std::isfinite(v) || v == 0.0) return v;
  int e;
  std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1): leading bit has weight 2^(e-1)
  int lead = e - 1;
  if (lead < min_exp) lead = min_exp;
  const double quantum = std::ldexp(1.0, lead - bits + 1);
  return std::nearbyint(v / quantum) * quantum;
}

// The nearest value of type t (float16 overflows to inf past 65504 + half an ulp, as IEEE does).
inline double round_to(openrnn_data_type t, double v) {
  switch (t) {
    case OPENRNN_DATA_DOUBLE: return v;
    case OPENRNN_DATA_FLOAT: return static_cast<double>(static_cast<float>(v));
    case OPENRNN_DATA_HALF: {
      const double r = round_significand(v, 11, -14);
      return std::fabs(r) > 65504.0 ? std::copysign(std::numeric_limits<double>::infinity(), v) : r;
    }
    case OPENRNN_DATA_BFLOAT16: return round_significand(v, 8, -126);
  }
  return v;
}

// Writes round_to(t, v) as element i of a buffer of type t.
inline void encode(openrnn_data_type t, double v, void* buf, size_t i) {
  unsigned char* p = static_cast<unsigned char*>(buf) + i * elem_size(t);
  switch (t) {
    case OPENRNN_DATA_DOUBLE: std::memcpy(p, &v, 8); return;
    case OPENRNN_DATA_FLOAT: {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case OPENRNN_DATA_HALF: {
      uint16_t bits;
      if (std::isnan(v)) {
        bits = 0x7e00;
      } else {
        const double r = round_to(t, v);
        const uint16_t sign = std::signbit(r) ? 0x8000 : 0;
        const double a = std::fabs(r);
        if (std::isinf(a)) {
          bits = sign | 0x7c00;
        } else if (a < std::ldexp(1.0, -14)) {
          bits = sign | static_cast<uint16_t>(a / std::ldexp(1.0, -24));  // subnormal: integer multiple of 2^-24
        } else {
          int e;
          std::frexp(a, &e);
          const int lead = e - 1;  // in -14..15
          const uint16_t mant = static_cast<uint16_t>(a / std::ldexp(1.0, lead - 10) - 1024.0);
          bits = sign | static_cast<uint16_t>((lead + 15) << 10) | mant;
        }
      }
      std::memcpy(p, &bits, 2);
      return;
    }
    case OPENRNN_DATA_BFLOAT16: {
      // round_to gives a value exactly representable in float whose low 16 bits are zero.
      const float f = std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(round_to(t, v));
      uint32_t u;
      std::memcpy(&u, &f, 4);
      const uint16_t bits = static_cast<uint16_t>(u >> 16);
      std::memcpy(p, &bits, 2);
      return;
    }
  }
}

inline double decode(openrnn_data_type t, const void* buf, size_t i) {
  const unsigned char* p = static_cast<const unsigned char*>(buf) + i * elem_size(t);
  switch (t) {
    case OPENRNN_DATA_DOUBLE: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case OPENRNN_DATA_FLOAT: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case OPENRNN_DATA_HALF: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      const double sign = (b & 0x8000) ? -1.0 : 1.0;
      const int ex = (b >> 10) & 0x1f, mant = b & 0x3ff;
      if (ex == 0x1f) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
      if (ex == 0) return sign * std::ldexp(static_cast<double>(mant), -24);
      return sign * std::ldexp(static_cast<double>(mant + 1024), ex - 25);
    }
    case OPENRNN_DATA_BFLOAT16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      const uint32_t u = static_cast<uint32_t>(b) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
  }
  return 0.0;
}

// Encodes a whole vector into bytes of type t.
inline std::vector<unsigned char> encode_all(openrnn_data_type t, const std::vector<double>& v) {
  std::vector<unsigned char> out(v.size() * elem_size(t));
  for (size_t i = 0; i < v.size(); ++i) encode(t, v[i], out.data(), i);
  return out;
}
inline std::vector<double> decode_all(openrnn_data_type t, const std::vector<unsigned char>& bytes) {
  std::vector<double> out(bytes.size() / elem_size(t));
  for (size_t i = 0; i < out.size(); ++i) out[i] = decode(t, bytes.data(), i);
  return out;
}

// splitmix64: small, seedable, identical on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi), 53 random bits.
  double uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53); }
  // Uniform in +-[lo, hi): never zero, never close to it (the harness avoids zeros and ones on purpose).
  double signed_away(double lo, double hi) {
    const double m = uniform(lo, hi);
    return (next() & 1) ? m : -m;
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t s_;
};

inline std::vector<double> random_vector(Rng& r, size_t n, double scale) {
  std::vector<double> v(n);
  for (auto& e : v) e = r.signed_away(0.05 * scale, scale);
  return v;
}

}  // namespace ort
