// Philox4x32-10 counter-based RNG (Salmon et al., SC'11) and the dropout mask built on it. Shared, unchanged, by the
// CPU and CUDA backends, so a mask is the same bit pattern on every device. docs/numerics.md states the mapping.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define OPENRNN_HD __host__ __device__ __forceinline__
#else
#define OPENRNN_HD inline
#endif

namespace openrnn {

struct Philox4 {
  uint32_t v[4];
};

OPENRNN_HD uint32_t philox_mulhi(uint32_t a, uint32_t b) {
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
}

// Ten rounds of Philox4x32 on counter c with key (k0, k1).
OPENRNN_HD Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = philox_mulhi(M0, c.v[0]), lo0 = M0 * c.v[0];
    const uint32_t hi1 = philox_mulhi(M1, c.v[2]), lo1 = M1 * c.v[2];
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += W0;
    k1 += W1;
  }
  return c;
}

// Integer threshold of dropout probability p: an element is kept iff (r >> 8) >= threshold, where r is its 32-bit
// Philox word. Computed once on the host in double so that CPU and GPU compare the same integers.
inline uint32_t dropout_threshold(double p) {
  double t = p * 16777216.0 + 0.5;  // 2^24
  if (t < 0) t = 0;
  if (t > 16777216.0) t = 16777216.0;
  return static_cast<uint32_t>(t);
}

// Keep bit of one element of the input of layer `layer` (1..L-1). index = (t * B + b) * W + u, always in
// sequence-major order whatever the data layout, with W = D * Hout the width of the previous layer's output.
// Four consecutive indices share one Philox call: counter = (q lo, q hi, offset lo, offset hi ^ layer << 16),
// q = index / 4, key = (seed lo, seed hi); word index % 4 is used. Distinct streams for offset < 2^48, layer < 2^16.
OPENRNN_HD bool dropout_keep(uint64_t seed, uint64_t offset, int layer, uint64_t index, uint32_t threshold) {
  const uint64_t q = index >> 2;
  Philox4 c{{static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32), static_cast<uint32_t>(offset),
             static_cast<uint32_t>(offset >> 32) ^ (static_cast<uint32_t>(layer) << 16)}};
  const Philox4 r = philox4x32_10(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return (r.v[index & 3] >> 8) >= threshold;
}

}  // namespace openrnn
