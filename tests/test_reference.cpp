// Self-checks of the independent reference: Philox known answers, storage-type rounding, hand-computed cells,
// structural properties (reverse direction = forward on reversed input, ragged batch = separate runs) and its
// reverse-mode gradients against its own central finite differences, element by element, in float64.
#include <gtest/gtest.h>

#include <cmath>

#include "harness.h"
#include "numeric_types.h"
#include "reference.h"

namespace ort {
namespace {

TEST(Reference, PhiloxKnownAnswers) {
  // Random123's published kat_vectors for Philox4x32-10 (counter words, key words -> output).
  struct Kat {
    uint32_t c[4], k[2], out[4];
  } kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const auto& k : kats) {
    uint32_t out[4];
    ref_philox(k.c, k.k, out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], k.out[i]) << "word " << i;
  }
}

TEST(Reference, DropoutMaskStatistics) {
  EXPECT_EQ(ref_dropout_threshold(0.0), 0u);
  EXPECT_EQ(ref_dropout_threshold(0.5), 1u << 23);
  for (double p : {0.1, 0.5, 0.9}) {
    const uint32_t thr = ref_dropout_threshold(p);
    int kept = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) kept += ref_dropout_keep(42, 7, 1, static_cast<uint64_t>(i), thr);
    EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - p, 0.01) << "p = " << p;
  }
  // Layer, offset and seed each select a different stream.
  const uint32_t thr = ref_dropout_threshold(0.5);
  int same_layer = 0, same_offset = 0, same_seed = 0;
  for (uint64_t i = 0; i < 4096; ++i) {
    const bool k = ref_dropout_keep(1, 0, 1, i, thr);
    same_layer += k == ref_dropout_keep(1, 0, 2, i, thr);
    same_offset += k == ref_dropout_keep(1, 1, 1, i, thr);
    same_seed += k == ref_dropout_keep(2, 0, 1, i, thr);
  }
  for (int s : {same_layer, same_offset, same_seed}) EXPECT_NEAR(s / 4096.0, 0.5, 0.05);
}

TEST(Reference, StorageTypes) {
  uint16_t h;
  encode(OPENRNN_DATA_HALF, 1.0, &h, 0);
  EXPECT_EQ(h, 0x3c00);
  encode(OPENRNN_DATA_HALF, 65504.0, &h, 0);
  EXPECT_EQ(h, 0x7bff);
  encode(OPENRNN_DATA_HALF, std::ldexp(1.0, -24), &h, 0);
  EXPECT_EQ(h, 0x0001);
  encode(OPENRNN_DATA_HALF, -2.5, &h, 0);
  EXPECT_EQ(h, 0xc100);
  encode(OPENRNN_DATA_HALF, 1.0 + std::ldexp(1.0, -11), &h, 0);  // a tie: to even (1.0)
  EXPECT_EQ(h, 0x3c00);
  encode(OPENRNN_DATA_HALF, 1.0 + 3 * std::ldexp(1.0, -11), &h, 0);  // a tie: to even (1 + 2^-9)
  EXPECT_EQ(h, 0x3c02);
  encode(OPENRNN_DATA_BFLOAT16, 1.0, &h, 0);
  EXPECT_EQ(h, 0x3f80);
  encode(OPENRNN_DATA_BFLOAT16, -2.5, &h, 0);
  EXPECT_EQ(h, 0xc020);
  encode(OPENRNN_DATA_BFLOAT16, 1.0 + std::ldexp(1.0, -8), &h, 0);  // a tie: to even
  EXPECT_EQ(h, 0x3f80);
  Rng r(3);
  for (auto t : {OPENRNN_DATA_DOUBLE, OPENRNN_DATA_FLOAT, OPENRNN_DATA_HALF, OPENRNN_DATA_BFLOAT16}) {
    for (int i = 0; i < 10000; ++i) {
      const double v = r.uniform(-100, 100) * std::ldexp(1.0, r.below(20) - 12);
      unsigned char buf[8];
      encode(t, v, buf, 0);
      const double d = decode(t, buf, 0);
      EXPECT_EQ(d, round_to(t, v)) << type_tag(t) << " " << v;
      const double ulp_rel = t == OPENRNN_DATA_HALF ? 0x1.0p-11 : t == OPENRNN_DATA_BFLOAT16 ? 0x1.0p-8
                             : t == OPENRNN_DATA_FLOAT ? 0x1.0p-24 : 0.0;
      if (std::fabs(v) > 1e-4) {
        EXPECT_LE(std::fabs(d - v), ulp_rel * std::fabs(v)) << type_tag(t) << " " << v;
      }
    }
    unsigned char buf[8];
    encode(t, NAN, buf, 0);
    EXPECT_TRUE(std::isnan(decode(t, buf, 0)));
  }
}

double sig(double v) { return 1 / (1 + std::exp(-v)); }

// One LSTM step with I = H = 1, computed by hand from the equations in openrnn.h.
TEST(Reference, HandComputedLstmAndGruStep) {
  RefProblem p;
  p.cfg.cell = OPENRNN_CELL_LSTM;
  p.T = 1;
  p.B = 1;
  p.len = {1};
  // weight_ih [4,1] (i f g o), weight_hh [4,1], bias_ih [4], bias_hh [4]
  std::vector<double> w = {0.1, -0.2, 0.3, 0.4, 0.5, 0.6, -0.7, 0.8, 0.01, 0.02, 0.03, 0.04, -0.05, 0.06, 0.07, 0.08};
  const double x = 0.9, h0 = -0.3, c0 = 0.25;
  auto pre = [&](int g) { return w[g] * x + w[4 + g] * h0 + w[8 + g] + w[12 + g]; };
  const double i = sig(pre(0)), f = sig(pre(1)), g = std::tanh(pre(2)), o = sig(pre(3));
  const double c1 = f * c0 + i * g, h1 = o * std::tanh(c1);
  const RefForward r = ref_forward(p, w, &x, &h0, &c0);
  EXPECT_NEAR(r.y[0], h1, 1e-15);
  EXPECT_NEAR(r.hy[0], h1, 1e-15);
  EXPECT_NEAR(r.cy[0], c1, 1e-15);

  // GRU, both variants, I = H = 1: weight_ih [3,1] (r z n), weight_hh [3,1], bias_ih [3], bias_hh [3].
  std::vector<double> wg = {0.3, -0.4, 0.5, 0.6, 0.7, -0.8, 0.05, -0.06, 0.07, 0.08, 0.09, -0.1};
  const double rr = sig(wg[0] * x + wg[6] + wg[3] * h0 + wg[9]);
  const double zz = sig(wg[1] * x + wg[7] + wg[4] * h0 + wg[10]);
  const double n_lbr = std::tanh(wg[2] * x + wg[8] + rr * (wg[5] * h0 + wg[11]));
  const double n_rb = std::tanh(wg[2] * x + wg[8] + wg[5] * (rr * h0) + wg[11]);
  p.cfg.cell = OPENRNN_CELL_GRU;
  EXPECT_NEAR(ref_forward(p, wg, &x, &h0, nullptr).y[0], (1 - zz) * n_lbr + zz * h0, 1e-15);
  p.cfg.cell = OPENRNN_CELL_GRU_RESET_BEFORE;
  EXPECT_NEAR(ref_forward(p, wg, &x, &h0, nullptr).y[0], (1 - zz) * n_rb + zz * h0, 1e-15);
  // RNN(relu), I = H = 1: weight_ih, weight_hh, bias_ih, bias_hh.
  p.cfg.cell = OPENRNN_CELL_RNN_RELU;
  std::vector<double> wr = {-0.5, 0.2, 0.1, 0.3};  // ih, hh, b_ih, b_hh
  EXPECT_NEAR(ref_forward(p, wr, &x, &h0, nullptr).y[0], std::fmax(0.0, -0.5 * x + 0.2 * h0 + 0.4), 1e-15);
}

// The reverse direction of a bidirectional layer is the forward direction run on each sequence reversed within
// its own length; a ragged batch is the same as each sequence run alone with T = its length.
TEST(Reference, DirectionAndRaggedProperties) {
  for (auto cell : {OPENRNN_CELL_LSTM, OPENRNN_CELL_GRU, OPENRNN_CELL_GRU_RESET_BEFORE, OPENRNN_CELL_RNN_TANH}) {
    RefProblem p;
    p.cfg.cell = cell;
    p.cfg.I = 3;
    p.cfg.H = 4;
    p.cfg.D = 2;
    p.T = 5;
    p.B = 3;
    p.len = {2, 5, 4};
    Rng r(11);
    const auto w = random_vector(r, ref_weight_count(p.cfg), 0.6);
    const auto x = random_vector(r, static_cast<size_t>(p.T) * p.B * p.cfg.I, 1.0);
    const auto hx = random_vector(r, static_cast<size_t>(2) * p.B * p.cfg.H, 1.0);
    const auto cx = random_vector(r, static_cast<size_t>(2) * p.B * p.cfg.H, 1.0);
    const RefForward full = ref_forward(p, w, x.data(), hx.data(), cx.data());
    // Unidirectional problems with the forward / reverse halves of the weights.
    RefProblem u = p;
    u.cfg.D = 1;
    u.B = 1;
    const size_t half = w.size() / 2;
    const std::vector<double> wf(w.begin(), w.begin() + half), wr(w.begin() + half, w.end());
    const int H = p.cfg.H;
    for (int b = 0; b < p.B; ++b) {
      const int len = p.len[b];
      u.T = len;
      u.len = {len};
      std::vector<double> xf, xr;
      for (int t = 0; t < len; ++t)
        for (int i = 0; i < 3; ++i) xf.push_back(x[(static_cast<size_t>(t) * p.B + b) * 3 + i]);
      for (int t = len - 1; t >= 0; --t)
        for (int i = 0; i < 3; ++i) xr.push_back(x[(static_cast<size_t>(t) * p.B + b) * 3 + i]);
      const double* h0f = &hx[static_cast<size_t>(b) * H];
      const double* h0r = &hx[static_cast<size_t>(p.B + b) * H];
      const double* c0f = &cx[static_cast<size_t>(b) * H];
      const double* c0r = &cx[static_cast<size_t>(p.B + b) * H];
      const RefForward ff = ref_forward(u, wf, xf.data(), h0f, c0f);
      const RefForward fr = ref_forward(u, wr, xr.data(), h0r, c0r);
      for (int t = 0; t < len; ++t)
        for (int k = 0; k < H; ++k) {
          EXPECT_NEAR(full.y[(static_cast<size_t>(t) * p.B + b) * 2 * H + k], ff.y[static_cast<size_t>(t) * H + k],
                      1e-14);
          EXPECT_NEAR(full.y[(static_cast<size_t>(t) * p.B + b) * 2 * H + H + k],
                      fr.y[static_cast<size_t>(len - 1 - t) * H + k], 1e-14);
        }
      for (int k = 0; k < H; ++k) {
        EXPECT_NEAR(full.hy[static_cast<size_t>(b) * H + k], ff.hy[static_cast<size_t>(k)], 1e-14);
        EXPECT_NEAR(full.hy[static_cast<size_t>(p.B + b) * H + k], fr.hy[static_cast<size_t>(k)], 1e-14);
        if (cell == OPENRNN_CELL_LSTM) {
          EXPECT_NEAR(full.cy[static_cast<size_t>(p.B + b) * H + k], fr.cy[static_cast<size_t>(k)], 1e-14);
        }
      }
    }
  }
}

// Reverse-mode gradients of the reference against its own central differences, every coordinate of x, hx, cx and
// the weights, for configurations covering each feature.
struct GradConfig {
  const char* name;
  RefConfig cfg;
  int T, B;
  std::vector<int> len;
};

std::vector<GradConfig> grad_configs() {
  std::vector<GradConfig> v;
  const openrnn_cell cells[] = {OPENRNN_CELL_LSTM, OPENRNN_CELL_GRU, OPENRNN_CELL_GRU_RESET_BEFORE,
                                OPENRNN_CELL_RNN_TANH, OPENRNN_CELL_RNN_RELU};
  const openrnn_bias_mode biases[] = {OPENRNN_BIAS_DOUBLE, OPENRNN_BIAS_SINGLE_INPUT,
                                      OPENRNN_BIAS_SINGLE_RECURRENT, OPENRNN_BIAS_NONE};
  int n = 0;
  for (auto cell : cells)
    for (auto bias : biases) {
      GradConfig g{"", {}, 4, 3, {3, 4, 1}};
      g.cfg.cell = cell;
      g.cfg.bias = bias;
      g.cfg.I = 3;
      g.cfg.H = 4;
      g.cfg.L = 2;
      g.cfg.D = 2;
      g.cfg.training = true;
      g.cfg.P = (cell == OPENRNN_CELL_LSTM && n % 2) ? 2 : 0;
      g.cfg.dropout = n % 3 == 0 ? 0.4 : 0.0;
      g.cfg.seed = 99 + n;
      v.push_back(g);
      ++n;
    }
  GradConfig clip{"", {}, 5, 2, {5, 3}};
  clip.cfg.cell = OPENRNN_CELL_LSTM;
  clip.cfg.I = 2;
  clip.cfg.H = 5;
  clip.cfg.clip = 0.35;  // active on a good share of the elements
  clip.cfg.L = 2;
  v.push_back(clip);
  return v;
}

TEST(Reference, GradientsMatchFiniteDifferences) {
  int index = 0;
  for (const auto& g : grad_configs()) {
    SCOPED_TRACE("config " + std::to_string(index++) + " cell " + std::to_string(g.cfg.cell) + " bias " +
                 std::to_string(g.cfg.bias) + " P " + std::to_string(g.cfg.P) + " dropout " +
                 std::to_string(g.cfg.dropout) + " clip " + std::to_string(g.cfg.clip));
    RefProblem p;
    p.cfg = g.cfg;
    p.T = g.T;
    p.B = g.B;
    p.len = g.len;
    const RefConfig& c = p.cfg;
    const bool lstm = c.cell == OPENRNN_CELL_LSTM;
    Rng r(1000 + index);
    auto w = random_vector(r, ref_weight_count(c), 0.7);
    auto x = random_vector(r, static_cast<size_t>(p.T) * p.B * c.I, 1.0);
    auto hx = random_vector(r, static_cast<size_t>(c.L) * c.D * p.B * c.Hout(), 1.0);
    auto cx = random_vector(r, static_cast<size_t>(c.L) * c.D * p.B * c.H, 1.0);
    const auto dy = random_vector(r, static_cast<size_t>(p.T) * p.B * c.D * c.Hout(), 1.0);
    const auto dhy = random_vector(r, hx.size(), 1.0);
    const auto dcy = random_vector(r, cx.size(), 1.0);
    auto S = [&] {
      const RefForward f = ref_forward(p, w, x.data(), hx.data(), lstm ? cx.data() : nullptr);
      return ref_functional(p, f, dy.data(), dhy.data(), lstm ? dcy.data() : nullptr);
    };
    const RefForward f = ref_forward(p, w, x.data(), hx.data(), lstm ? cx.data() : nullptr);
    const RefGrads gr = ref_backward(p, w, f, dy.data(), dhy.data(), lstm ? dcy.data() : nullptr);
    auto fd = [&](std::vector<double>& v, const std::vector<double>& analytic, const char* what,
                  const std::vector<char>& mask) {
      std::vector<double> num(v.size(), 0.0);
      for (size_t i = 0; i < v.size(); ++i) {
        if (!mask.empty() && !mask[i]) continue;
        const double keep = v[i], h = 1e-6;
        v[i] = keep + h;
        const double sp = S();
        v[i] = keep - h;
        const double sm = S();
        v[i] = keep;
        num[i] = (sp - sm) / (2 * h);
      }
      std::vector<double> an = analytic;
      if (!mask.empty())
        for (size_t i = 0; i < an.size(); ++i)
          if (!mask[i]) an[i] = 0;
      expect_close(what, an, num, 1e-7);
    };
    std::vector<char> xmask(x.size(), 0);
    for (int t = 0; t < p.T; ++t)
      for (int b = 0; b < p.B; ++b)
        if (t < p.len[b])
          for (int i = 0; i < c.I; ++i) xmask[(static_cast<size_t>(t) * p.B + b) * c.I + i] = 1;
    fd(w, gr.dw, "dw", {});
    fd(x, gr.dx, "dx", xmask);
    fd(hx, gr.dhx, "dhx", {});
    if (lstm) fd(cx, gr.dcx, "dcx", {});
  }
}

}  // namespace
}  // namespace ort
