// Storage <-> arithmetic conversions for the CPU backend. S (the arithmetic type) is double for float64 problems and
// float for float32, float16 and bfloat16 ones; 16-bit values are widened exactly and narrowed with
// round-to-nearest-even (src/dtype.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dtype.h"
#include "openrnn/openrnn.h"

namespace openrnn {
namespace cpu {

// Element i of a buffer of storage type t, as S.
template <typename S>
inline S load_elem(const void* p, openrnn_data_type t, size_t i) {
  switch (t) {
    case OPENRNN_DATA_FLOAT: return static_cast<S>(static_cast<const float*>(p)[i]);
    case OPENRNN_DATA_DOUBLE: return static_cast<S>(static_cast<const double*>(p)[i]);
    case OPENRNN_DATA_HALF: return static_cast<S>(half_to_float(static_cast<const uint16_t*>(p)[i]));
    case OPENRNN_DATA_BFLOAT16: return static_cast<S>(bf16_to_float(static_cast<const uint16_t*>(p)[i]));
  }
  return S(0);
}

template <typename S>
inline void store_elem(void* p, openrnn_data_type t, size_t i, S v) {
  switch (t) {
    case OPENRNN_DATA_FLOAT: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case OPENRNN_DATA_DOUBLE: static_cast<double*>(p)[i] = static_cast<double>(v); return;
    case OPENRNN_DATA_HALF: static_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(v)); return;
    case OPENRNN_DATA_BFLOAT16: static_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); return;
  }
}

// dst[0..n) = src[off .. off+n) converted to S.
template <typename S>
inline void load_row(const void* src, openrnn_data_type t, size_t off, S* dst, size_t n) {
  if ((t == OPENRNN_DATA_FLOAT && sizeof(S) == 4) || (t == OPENRNN_DATA_DOUBLE && sizeof(S) == 8)) {
    std::memcpy(dst, static_cast<const char*>(src) + off * sizeof(S), n * sizeof(S));
    return;
  }
  for (size_t i = 0; i < n; ++i) dst[i] = load_elem<S>(src, t, off + i);
}

// dst[off .. off+n) = src[0..n) converted to the storage type.
template <typename S>
inline void store_row(void* dst, openrnn_data_type t, size_t off, const S* src, size_t n) {
  if ((t == OPENRNN_DATA_FLOAT && sizeof(S) == 4) || (t == OPENRNN_DATA_DOUBLE && sizeof(S) == 8)) {
    std::memcpy(static_cast<char*>(dst) + off * sizeof(S), src, n * sizeof(S));
    return;
  }
  for (size_t i = 0; i < n; ++i) store_elem<S>(dst, t, off + i, src[i]);
}

// dst[off .. off+n) = value (the padding fill), converted once.
inline void fill_row(void* dst, openrnn_data_type t, size_t off, double value, size_t n) {
  switch (t) {
    case OPENRNN_DATA_FLOAT: {
      float* d = static_cast<float*>(dst) + off;
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<float>(value);
      return;
    }
    case OPENRNN_DATA_DOUBLE: {
      double* d = static_cast<double*>(dst) + off;
      for (size_t i = 0; i < n; ++i) d[i] = value;
      return;
    }
    case OPENRNN_DATA_HALF:
    case OPENRNN_DATA_BFLOAT16: {
      const uint16_t bits = t == OPENRNN_DATA_HALF ? float_to_half(static_cast<float>(value))
                                                   : float_to_bf16(static_cast<float>(value));
      uint16_t* d = static_cast<uint16_t*>(dst) + off;
      for (size_t i = 0; i < n; ++i) d[i] = bits;
      return;
    }
  }
}

// True when a buffer of storage type t can be used in place as S (no conversion).
template <typename S>
inline bool native(openrnn_data_type t) {
  return (t == OPENRNN_DATA_FLOAT && sizeof(S) == 4) || (t == OPENRNN_DATA_DOUBLE && sizeof(S) == 8);
}

}  // namespace cpu
}  // namespace openrnn
