// Storage types. float16 and bfloat16 are stored as raw 16-bit patterns on the host (no compiler extension needed)
// and converted to float32 with round-to-nearest-even; all arithmetic happens in float32 (docs/numerics.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "openrnn/openrnn.h"

namespace openrnn {

inline size_t dtype_size(openrnn_data_type t) {
  switch (t) {
    case OPENRNN_DATA_FLOAT: return 4;
    case OPENRNN_DATA_DOUBLE: return 8;
    case OPENRNN_DATA_HALF: return 2;
    case OPENRNN_DATA_BFLOAT16: return 2;
  }
  return 0;
}

inline const char* dtype_name(openrnn_data_type t) {
  switch (t) {
    case OPENRNN_DATA_FLOAT: return "float32";
    case OPENRNN_DATA_DOUBLE: return "float64";
    case OPENRNN_DATA_HALF: return "float16";
    case OPENRNN_DATA_BFLOAT16: return "bfloat16";
  }
  return "unknown";
}

struct half_bits { uint16_t bits; };
struct bf16_bits { uint16_t bits; };

inline float bits_to_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t float_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float bf16_to_float(uint16_t b) { return bits_to_float(static_cast<uint32_t>(b) << 16); }
inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                                    // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bits_to_float(sign);
    // subnormal: value = mant * 2^-24
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_to_float(sign | 0x7f800000u | (mant << 13));
  return bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_half(float f) {
  const uint32_t u = float_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;                 // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;                // overflow (>= 65520 rounds to inf) and inf
  if (a < 0x38800000u) {                                      // below the smallest normal 2^-14: subnormal or 0
    const float v = bits_to_float(a) * 16777216.0f;          // scale by 2^24: the subnormal's integer mantissa
    // nearbyint with the default round-to-nearest-even mode
    float r = v + 8388608.0f;
    r -= 8388608.0f;
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t m = a + 0xfffu + ((a >> 13) & 1u);                 // round mantissa to 10 bits, nearest even
  return sign | static_cast<uint16_t>(((m >> 13) - (112u << 10)));
}

}  // namespace openrnn
