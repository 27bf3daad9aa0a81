// Unit tests of the training stack on the CPU ops: gradients of Linear, Embedding and softmax cross-entropy against
// central finite differences (in double, on the float layers' own arithmetic), optimiser updates against hand
// computations of PyTorch's formulas, clipping, learning-rate decay, dropout masks, and the run RNG.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn.h"
#include "ops.h"
#include "optim.h"
#include "philox.h"
#include "rng.h"

using namespace openrnn::app;

namespace {

std::vector<float> host(const DevArray<float>& a) {
  std::vector<float> v(a.size());
  a.download(v.data());
  return v;
}

// Loss L = sum_n softmax_xent(logits_n, t_n) * w; returns L (double) and, through dlogits, dL/dlogits.
double xent(Ops& ops, const std::vector<float>& logits, const std::vector<int32_t>& t, int N, int V,
            std::vector<float>* dlogits) {
  std::vector<float> rows(static_cast<size_t>(N));
  std::vector<float> d(logits.size());
  ops.softmax_xent(logits.data(), t.data(), N, V, 1.0f, dlogits ? d.data() : nullptr, rows.data(), nullptr);
  if (dlogits) *dlogits = d;
  double s = 0;
  for (float r : rows) s += r;
  return s;
}

}  // namespace

TEST(Rng, DeterministicAndStateRoundTrip) {
  Rng a(7), b(7), c(8);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(a.next(), c.next());
  const std::string s = a.state_string();
  Rng d(0);
  ASSERT_TRUE(d.set_state_string(s));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), d.next());
  EXPECT_FALSE(d.set_state_string("nonsense"));
  EXPECT_FALSE(d.set_state_string("0000000000000000:0000000000000000:0000000000000000:0000000000000000"));
  // below(n) covers [0, n) and shuffle is a permutation.
  std::vector<int> hist(5, 0);
  for (int i = 0; i < 5000; ++i) ++hist[a.below(5)];
  for (int h : hist) EXPECT_GT(h, 800);
  std::vector<int> p(50);
  for (int i = 0; i < 50; ++i) p[i] = i;
  a.shuffle(p.data(), p.size());
  std::vector<int> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
}

TEST(Init, PyTorchBounds) {
  auto ops = make_cpu_ops();
  Rng rng(3);
  Linear lin(*ops, "head", 50, 7, rng);
  const std::vector<float> w = host(lin.param().value);
  const float bound = 1.0f / std::sqrt(50.0f);
  float mx = 0;
  for (float v : w) mx = std::max(mx, std::fabs(v));
  EXPECT_LE(mx, bound);
  EXPECT_GT(mx, 0.9f * bound);  // 357 draws: the extremes come close to the bound
  EXPECT_EQ(lin.param().views[0].name, "head.weight");
  EXPECT_EQ(lin.param().views[1].shape, (std::vector<int64_t>{7}));
}

TEST(Gradients, LinearMatchesFiniteDifferences) {
  auto ops = make_cpu_ops();
  Rng rng(11);
  const int N = 3, In = 5, Out = 4;
  Linear lin(*ops, "l", In, Out, rng);
  std::vector<float> x(N * In);
  for (float& v : x) v = static_cast<float>(rng.uniform(-1, 1));
  const std::vector<int32_t> t = {0, 3, 2};
  auto loss_at = [&](const std::vector<float>& xx) {
    std::vector<float> y(N * Out);
    lin.forward(xx.data(), N, y.data());
    return xent(*ops, y, t, N, Out, nullptr);
  };
  // Analytic.
  std::vector<float> y(N * Out), dy, dx(N * In);
  lin.forward(x.data(), N, y.data());
  xent(*ops, y, t, N, Out, &dy);
  lin.param().grad.zero();
  lin.backward(x.data(), dy.data(), N, dx.data());
  const std::vector<float> g = host(lin.param().grad);
  // Numeric, w.r.t. every weight, bias and input. float32 forward: step 1e-2, tolerance 2e-3 relative.
  const double h = 1e-2;
  std::vector<float> w = host(lin.param().value);
  for (size_t i = 0; i < w.size(); ++i) {
    const float keep = w[i];
    w[i] = keep + h;
    lin.param().value.upload(w.data());
    const double lp = loss_at(x);
    w[i] = keep - h;
    lin.param().value.upload(w.data());
    const double lm = loss_at(x);
    w[i] = keep;
    lin.param().value.upload(w.data());
    EXPECT_NEAR(g[i], (lp - lm) / (2 * h), 2e-3 * std::max(1.0, std::fabs(double(g[i])))) << "param " << i;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<float> xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    EXPECT_NEAR(dx[i], (loss_at(xp) - loss_at(xm)) / (2 * h), 2e-3) << "x " << i;
  }
}

TEST(Gradients, EmbeddingAccumulatesRepeatedIds) {
  auto ops = make_cpu_ops();
  Rng rng(5);
  const int V = 4, C = 3;
  Embedding emb(*ops, "e", V, C, rng);
  const std::vector<int32_t> ids = {2, 0, 2, 2};
  std::vector<float> out(ids.size() * C);
  emb.forward(ids.data(), 4, out.data());
  const std::vector<float> E = host(emb.param().value);
  for (int n = 0; n < 4; ++n)
    for (int c = 0; c < C; ++c) EXPECT_EQ(out[n * C + c], E[ids[n] * C + c]);
  std::vector<float> dout(out.size());
  for (size_t i = 0; i < dout.size(); ++i) dout[i] = 0.5f + static_cast<float>(i);
  emb.param().grad.zero();
  emb.backward(ids.data(), 4, dout.data());
  const std::vector<float> g = host(emb.param().grad);
  for (int c = 0; c < C; ++c) {
    EXPECT_FLOAT_EQ(g[0 * C + c], dout[1 * C + c]);
    EXPECT_FLOAT_EQ(g[2 * C + c], dout[0 * C + c] + dout[2 * C + c] + dout[3 * C + c]);
    EXPECT_EQ(g[1 * C + c], 0.0f);
    EXPECT_EQ(g[3 * C + c], 0.0f);
  }
}

TEST(Gradients, SoftmaxXentValueAndGradient) {
  auto ops = make_cpu_ops();
  const int N = 2, V = 5;
  std::vector<float> z = {0.3f, -1.2f, 2.0f, 0.0f, 0.7f, 10.f, 10.f, -5.f, 3.f, 9.5f};
  const std::vector<int32_t> t = {2, 4};
  std::vector<float> d;
  const double L = xent(*ops, z, t, N, V, &d);
  // Hand value, row 0: logsumexp - z[2].
  double s0 = 0, s1 = 0;
  for (int v = 0; v < V; ++v) s0 += std::exp(double(z[v]));
  for (int v = 0; v < V; ++v) s1 += std::exp(double(z[V + v]));
  EXPECT_NEAR(L, (std::log(s0) - z[2]) + (std::log(s1) - z[V + 4]), 1e-5);
  const double h = 1e-2;
  for (size_t i = 0; i < z.size(); ++i) {
    std::vector<float> zp = z, zm = z;
    zp[i] += h;
    zm[i] -= h;
    EXPECT_NEAR(d[i], (xent(*ops, zp, t, N, V, nullptr) - xent(*ops, zm, t, N, V, nullptr)) / (2 * h), 1e-3) << i;
  }
  // argmax ties go to the lowest index.
  std::vector<float> rows(2);
  std::vector<int32_t> am(2);
  ops->softmax_xent(z.data(), t.data(), N, V, 1.f, nullptr, rows.data(), am.data());
  EXPECT_EQ(am[0], 2);
  EXPECT_EQ(am[1], 0);
}

TEST(Dropout, MatchesPhiloxMaskAndScales) {
  auto ops = make_cpu_ops();
  const size_t rows = 64;
  const int W = 33;
  std::vector<float> x(rows * W, 2.0f);
  ops->dropout(x.data(), rows, W, 1234, 7, 3, 0.25);
  const uint32_t thr = openrnn::dropout_threshold(0.25);
  size_t kept = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool k = openrnn::dropout_keep(1234, 7, 3, i, thr);
    EXPECT_FLOAT_EQ(x[i], k ? 2.0f / 0.75f : 0.0f);
    kept += k;
  }
  EXPECT_NEAR(static_cast<double>(kept) / x.size(), 0.75, 0.04);
  // Another offset gives another mask.
  std::vector<float> y(rows * W, 2.0f);
  ops->dropout(y.data(), rows, W, 1234, 8, 3, 0.25);
  EXPECT_NE(x, y);
}

namespace {
struct OneParam {
  explicit OneParam(Ops& ops, std::vector<float> w) : p(ops, w.size()) {
    p.views.push_back({"w", 0, {static_cast<int64_t>(w.size())}});
    p.value.upload(w.data());
  }
  void set_grad(const std::vector<float>& g) { p.grad.upload(g.data()); }
  Param p;
};
}  // namespace

TEST(Optim, AdamMatchesHandComputation) {
  auto ops = make_cpu_ops();
  OneParam w(*ops, {1.0f, -2.0f});
  OptimConfig cfg;
  cfg.kind = OptimKind::Adam;
  cfg.lr = 0.1;
  Optimizer opt(*ops, cfg, {&w.p});
  const std::vector<std::vector<float>> grads = {{0.5f, -1.0f}, {0.25f, 2.0f}};
  double m[2] = {0, 0}, v[2] = {0, 0}, p[2] = {1.0, -2.0};
  for (size_t s = 0; s < grads.size(); ++s) {
    w.set_grad(grads[s]);
    opt.step();
    const double t = static_cast<double>(s + 1);
    for (int i = 0; i < 2; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * grads[s][i];
      v[i] = 0.999 * v[i] + 0.001 * grads[s][i] * grads[s][i];
      const double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.999, t));
      p[i] -= 0.1 * mh / (std::sqrt(vh) + 1e-8);
    }
  }
  const std::vector<float> got = host(w.p.value);
  EXPECT_NEAR(got[0], p[0], 1e-6);
  EXPECT_NEAR(got[1], p[1], 1e-6);
  EXPECT_EQ(opt.steps(), 2);
}

TEST(Optim, SgdMomentumAndRmsprop) {
  auto ops = make_cpu_ops();
  {
    OneParam w(*ops, {1.0f});
    OptimConfig cfg;
    cfg.kind = OptimKind::Sgd;
    cfg.lr = 0.5;
    cfg.momentum = 0.9;
    Optimizer opt(*ops, cfg, {&w.p});
    w.set_grad({1.0f});
    opt.step();  // buf = 1, p = 1 - 0.5 = 0.5
    w.set_grad({2.0f});
    opt.step();  // buf = 0.9 + 2 = 2.9, p = 0.5 - 1.45 = -0.95
    EXPECT_NEAR(host(w.p.value)[0], -0.95, 1e-6);
  }
  {
    OneParam w(*ops, {1.0f});
    OptimConfig cfg;
    cfg.kind = OptimKind::RmsProp;
    cfg.lr = 0.01;
    Optimizer opt(*ops, cfg, {&w.p});
    w.set_grad({3.0f});
    opt.step();  // sq = 0.01 * 9 = 0.09, p = 1 - 0.01 * 3 / (0.3 + 1e-8)
    EXPECT_NEAR(host(w.p.value)[0], 1.0 - 0.01 * 3.0 / (0.3 + 1e-8), 1e-6);
  }
}

TEST(Optim, ClippingAndDecay) {
  auto ops = make_cpu_ops();
  OneParam a(*ops, {0.0f, 0.0f}), b(*ops, {0.0f});
  OptimConfig cfg;
  cfg.kind = OptimKind::Sgd;
  cfg.momentum = 0;
  cfg.lr = 1.0;
  cfg.clip = 1.0;
  cfg.decay = 0.5;
  cfg.decay_every = 2;
  Optimizer opt(*ops, cfg, {&a.p, &b.p});
  a.set_grad({3.0f, 0.0f});
  b.set_grad({4.0f});
  EXPECT_NEAR(opt.step(), 5.0, 1e-9);  // global norm over both parameters
  // Scaled by 1 / (5 + 1e-6): p = -g * 0.2
  EXPECT_NEAR(host(a.p.value)[0], -0.6, 1e-6);
  EXPECT_NEAR(host(b.p.value)[0], -0.8, 1e-6);
  EXPECT_DOUBLE_EQ(opt.lr(), 1.0);  // 1 step done
  a.set_grad({0.1f, 0.0f});
  b.set_grad({0.0f});
  opt.step();  // norm 0.1 < clip: unscaled
  EXPECT_NEAR(host(a.p.value)[0], -0.7, 1e-6);
  EXPECT_DOUBLE_EQ(opt.lr(), 0.5);  // after 2 steps
}
