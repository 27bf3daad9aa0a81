// A float64 forward reference for the CUDA tests, written from the equations (docs/numerics.md, openrnn.h) with plain
// loops and its own Philox4x32-10: it shares no code with src/. The shared harness (tests/) has the project's main
// reference; this one lets the GPU-only tests stand on their own.
#pragma once

#ifdef OPENRNN_TEST_CUDA

#include <cmath>
#include <cstdint>
#include <vector>

#include "openrnn/openrnn.h"
#include "test_cuda_util.h"

namespace cudatest {

// Philox4x32-10 (Salmon et al. 2011): 10 rounds, multipliers 0xD2511F53 / 0xCD9E8D57, Weyl key increments.
inline void ref_philox(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c[2];
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0;
    const uint32_t n1 = static_cast<uint32_t>(p1);
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    const uint32_t n3 = static_cast<uint32_t>(p0);
    c[0] = n0;
    c[1] = n1;
    c[2] = n2;
    c[3] = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

// The documented mask: element `index` of layer `layer`'s input is kept iff (word >> 8) >= round(p * 2^24), with
// word = Philox(counter = (q, q >> 32, offset, offset >> 32 ^ layer << 16), key = seed)[index % 4], q = index / 4.
inline bool ref_keep(uint64_t seed, uint64_t offset, int layer, uint64_t index, double p) {
  const uint64_t q = index / 4;
  uint32_t c[4] = {static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32), static_cast<uint32_t>(offset),
                   static_cast<uint32_t>(offset >> 32) ^ (static_cast<uint32_t>(layer) << 16)};
  ref_philox(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const uint32_t thr = static_cast<uint32_t>(std::floor(p * 16777216.0 + 0.5));
  return (c[index % 4] >> 8) >= thr;
}

struct RefOut {
  std::vector<double> y, hy, cy;
};

inline RefOut reference_forward(const Problem& pr, const Inputs& in, bool training) {
  const auto& c = pr.cfg;
  const int T = pr.T, B = pr.B, H = c.hidden_size, Hout = pr.Hout(), P = c.proj_size, L = c.num_layers, D = pr.D();
  const int W = D * Hout;
  openrnn_rnn_desc_t desc = nullptr;
  openrnn_create_rnn_desc(&desc, &c);
  auto param = [&](int l, int d, openrnn_weight_kind k) -> const double* {
    openrnn_weight_param p;
    if (openrnn_get_weight_params(desc, l, d, k, &p) != OPENRNN_STATUS_SUCCESS) return nullptr;
    return in.w.data() + p.offset;
  };
  auto dot = [](const double* a, const double* b, int n) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
  };
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  auto bias = [](const double* b, int j) { return b ? b[j] : 0.0; };

  RefOut o;
  o.hy.assign(pr.nh(), 0);
  o.cy.assign(pr.nc(), 0);
  // X: this layer's input, sequence-major [T, B, I_l].
  std::vector<double> X(static_cast<size_t>(T) * B * c.input_size);
  for (int t = 0; t < T; ++t)
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < c.input_size; ++i)
        X[(static_cast<size_t>(t) * B + b) * c.input_size + i] =
            t < pr.len(b) ? in.x[pr.vec(t, b, c.input_size) + i] : 0.0;
  std::vector<double> Y;
  for (int l = 0; l < L; ++l) {
    const int I = l == 0 ? c.input_size : W;
    if (l > 0) {
      X = Y;
      if (training && c.dropout > 0)
        for (size_t i = 0; i < X.size(); ++i)
          X[i] = ref_keep(c.dropout_seed, pr.dropout_offset, l, i, c.dropout) ? X[i] / (1.0 - c.dropout) : 0.0;
    }
    Y.assign(static_cast<size_t>(T) * B * W, 0.0);
    for (int d = 0; d < D; ++d) {
      const double *Wih = param(l, d, OPENRNN_WEIGHT_IH), *Whh = param(l, d, OPENRNN_WEIGHT_HH);
      const double *bih = param(l, d, OPENRNN_BIAS_IH), *bhh = param(l, d, OPENRNN_BIAS_HH);
      const double* Whr = param(l, d, OPENRNN_WEIGHT_HR);
      const size_t s = static_cast<size_t>(l) * D + d;
      std::vector<double> h(static_cast<size_t>(B) * Hout, 0.0), cs(static_cast<size_t>(B) * H, 0.0);
      if (pr.use_hx) std::copy(in.hx.begin() + s * B * Hout, in.hx.begin() + (s + 1) * B * Hout, h.begin());
      if (pr.lstm() && pr.use_cx) std::copy(in.cx.begin() + s * B * H, in.cx.begin() + (s + 1) * B * H, cs.begin());
      for (int k = 0; k < T; ++k) {
        const int t = d == 0 ? k : T - 1 - k;
        for (int b = 0; b < B; ++b) {
          if (t >= pr.len(b)) continue;
          const double* xv = &X[(static_cast<size_t>(t) * B + b) * I];
          double* hv = &h[static_cast<size_t>(b) * Hout];
          std::vector<double> hn(static_cast<size_t>(Hout)), ht(static_cast<size_t>(H));
          auto xi = [&](int j) { return dot(Wih + static_cast<size_t>(j) * I, xv, I) + bias(bih, j); };
          auto hh = [&](int j, const double* v) { return dot(Whh + static_cast<size_t>(j) * Hout, v, Hout) + bias(bhh, j); };
          switch (c.cell) {
            case OPENRNN_CELL_LSTM:
              for (int u = 0; u < H; ++u) {
                const double ig = sig(xi(u) + hh(u, hv)), fg = sig(xi(H + u) + hh(H + u, hv));
                const double gg = std::tanh(xi(2 * H + u) + hh(2 * H + u, hv)), og = sig(xi(3 * H + u) + hh(3 * H + u, hv));
                double& cc = cs[static_cast<size_t>(b) * H + u];
                cc = fg * cc + ig * gg;
                if (c.cell_clip > 0) cc = std::max(-c.cell_clip, std::min(c.cell_clip, cc));
                ht[static_cast<size_t>(u)] = og * std::tanh(cc);
              }
              if (P > 0)
                for (int q = 0; q < P; ++q) hn[static_cast<size_t>(q)] = dot(Whr + static_cast<size_t>(q) * H, ht.data(), H);
              else
                hn = ht;
              break;
            case OPENRNN_CELL_GRU:
              for (int u = 0; u < H; ++u) {
                const double r = sig(xi(u) + hh(u, hv)), z = sig(xi(H + u) + hh(H + u, hv));
                const double n = std::tanh(xi(2 * H + u) + r * hh(2 * H + u, hv));
                hn[static_cast<size_t>(u)] = (1 - z) * n + z * hv[u];
              }
              break;
            case OPENRNN_CELL_GRU_RESET_BEFORE: {
              std::vector<double> rh(static_cast<size_t>(H)), z(static_cast<size_t>(H));
              for (int u = 0; u < H; ++u) {
                rh[static_cast<size_t>(u)] = sig(xi(u) + hh(u, hv)) * hv[u];
                z[static_cast<size_t>(u)] = sig(xi(H + u) + hh(H + u, hv));
              }
              for (int u = 0; u < H; ++u) {
                const double n = std::tanh(xi(2 * H + u) + hh(2 * H + u, rh.data()));
                hn[static_cast<size_t>(u)] = (1 - z[static_cast<size_t>(u)]) * n + z[static_cast<size_t>(u)] * hv[u];
              }
              break;
            }
            case OPENRNN_CELL_RNN_TANH:
            case OPENRNN_CELL_RNN_RELU:
              for (int u = 0; u < H; ++u) {
                const double a = xi(u) + hh(u, hv);
                hn[static_cast<size_t>(u)] = c.cell == OPENRNN_CELL_RNN_TANH ? std::tanh(a) : (a > 0 ? a : 0.0);
              }
              break;
          }
          for (int u = 0; u < Hout; ++u) {
            hv[u] = hn[static_cast<size_t>(u)];
            Y[(static_cast<size_t>(t) * B + b) * W + d * Hout + u] = hv[u];
          }
        }
      }
      std::copy(h.begin(), h.end(), o.hy.begin() + s * B * Hout);
      if (pr.lstm()) std::copy(cs.begin(), cs.end(), o.cy.begin() + s * B * H);
    }
  }
  o.y.assign(pr.ny(), 0);
  for (int t = 0; t < T; ++t)
    for (int b = 0; b < B; ++b)
      for (int j = 0; j < W; ++j)
        o.y[pr.vec(t, b, W) + j] = t < pr.len(b) ? Y[(static_cast<size_t>(t) * B + b) * W + j] : pr.fill;
  openrnn_destroy_rnn_desc(desc);
  return o;
}

}  // namespace cudatest

#endif  // OPENRNN_TEST_CUDA
