// The one random-number generator of a run. `--seed S` seeds it (through SplitMix64); every random draw of the run
// comes from it in a fixed order: parameter initialisation, then the dropout key, then each epoch's shuffle. Its
// whole state is four words, saved in checkpoints, so a resumed run continues the same sequence.
// Generator: xoshiro256** (Blackman & Vigna), written from the published description.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace openrnn::app {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed) {
    uint64_t z = seed;
    for (auto& w : s_) {
      z += 0x9E3779B97F4A7C15ull;
      uint64_t x = z;
      x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
      x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
      w = x ^ (x >> 31);
    }
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n), n >= 1, without modulo bias (rejection).
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = next(); while (r >= limit);
    return r % n;
  }
  // Standard normal (Box-Muller; uses two uniforms per call, no cached second value so the state stays 4 words).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  template <typename T>
  void shuffle(T* a, size_t n) {
    for (size_t i = n; i > 1; --i) {
      const size_t j = static_cast<size_t>(below(i));
      std::swap(a[i - 1], a[j]);
    }
  }

  // "xxxxxxxxxxxxxxxx:..." four 16-digit hex words.
  std::string state_string() const {
    char buf[80];
    std::snprintf(buf, sizeof buf, "%016llx:%016llx:%016llx:%016llx", (unsigned long long)s_[0],
                  (unsigned long long)s_[1], (unsigned long long)s_[2], (unsigned long long)s_[3]);
    return buf;
  }
  bool set_state_string(const std::string& s) {
    unsigned long long w[4];
    char tail;
    if (s.size() != 67 || std::sscanf(s.c_str(), "%16llx:%16llx:%16llx:%16llx%c", &w[0], &w[1], &w[2], &w[3], &tail) != 4)
      return false;
    for (int i = 0; i < 4; ++i) s_[i] = w[i];
    return (s_[0] | s_[1] | s_[2] | s_[3]) != 0;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_{};
};

}  // namespace openrnn::app
