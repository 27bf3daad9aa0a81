// The CUDA Ops against the CPU Ops on the same random inputs (skipped when the CLI was built without CUDA or no GPU
// is present). Dropout masks must match bit for bit; arithmetic within float32 rounding (relative 1e-5).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "ops.h"

using namespace openrnn::app;

namespace {

struct Pair {
  std::unique_ptr<Ops> cpu = make_cpu_ops();
  std::unique_ptr<Ops> gpu;
  Pair() {
    try {
      gpu = make_cuda_ops(0);
    } catch (const std::exception&) {
    }
  }
};

std::vector<float> randv(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(g);
  return v;
}

// Copies v onto ops' device.
template <typename T>
DevArray<T> up(Ops& ops, const std::vector<T>& v) {
  DevArray<T> a(ops, v.size());
  a.upload(v.data());
  return a;
}
template <typename T>
std::vector<T> down(const DevArray<T>& a) {
  std::vector<T> v(a.size());
  a.download(v.data());
  return v;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double rel, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(a[i]) * a[i];
  }
  EXPECT_LE(std::sqrt(num / std::max(den, 1e-30)), rel) << what;
}

}  // namespace

TEST(OpsDevices, CudaMatchesCpu) {
  Pair p;
  if (!p.gpu) GTEST_SKIP() << "no CUDA device (or built without CUDA)";
  Ops& c = *p.cpu;
  Ops& g = *p.gpu;
  // GEMM, every transpose combination, with odd sizes and a non-zero beta.
  const int M = 37, N = 19, K = 53;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const std::vector<float> A = randv(size_t(M) * K, 1), B = randv(size_t(K) * N, 2), C0 = randv(size_t(M) * N, 3);
      const int lda = ta ? M : K, ldb = tb ? K : N;
      std::vector<float> Cc = C0;
      c.gemm(ta, tb, M, N, K, 0.7f, A.data(), lda, B.data(), ldb, 0.3f, Cc.data(), N);
      DevArray<float> Ag = up(g, A), Bg = up(g, B), Cg = up(g, C0);
      g.gemm(ta, tb, M, N, K, 0.7f, Ag.get(), lda, Bg.get(), ldb, 0.3f, Cg.get(), N);
      expect_close(Cc, down(Cg), 1e-5, "gemm");
    }
  // Bias add and column sums.
  {
    std::vector<float> Y = randv(size_t(M) * N, 4), b = randv(size_t(N), 5), db(size_t(N), 0.5f);
    DevArray<float> Yg = up(g, Y), bg = up(g, b), dbg = up(g, db);
    c.add_row_vector(Y.data(), b.data(), M, N);
    g.add_row_vector(Yg.get(), bg.get(), M, N);
    expect_close(Y, down(Yg), 1e-6, "add_row_vector");
    c.col_sums_add(Y.data(), M, N, db.data());
    g.col_sums_add(Yg.get(), M, N, dbg.get());
    expect_close(db, down(dbg), 1e-6, "col_sums_add");
  }
  // Embedding forward / backward with repeated ids.
  {
    const int V = 11, C = 9, Nn = 40;
    std::vector<int32_t> ids(Nn);
    for (int i = 0; i < Nn; ++i) ids[size_t(i)] = (i * 7) % V;
    std::vector<float> E = randv(size_t(V) * C, 6), out(size_t(Nn) * C), dE(size_t(V) * C, 0.f);
    DevArray<int32_t> idg = up(g, ids);
    DevArray<float> Eg = up(g, E), outg(g, out.size()), dEg(g, dE.size());
    c.embedding_forward(ids.data(), Nn, E.data(), C, out.data());
    g.embedding_forward(idg.get(), Nn, Eg.get(), C, outg.get());
    EXPECT_EQ(out, down(outg));
    c.embedding_backward(ids.data(), Nn, out.data(), V, C, dE.data());
    g.embedding_backward(idg.get(), Nn, outg.get(), V, C, dEg.get());
    expect_close(dE, down(dEg), 1e-6, "embedding_backward");
  }
  // Softmax cross-entropy: losses, arg max and gradient.
  {
    const int Nn = 33, V = 300;
    std::vector<float> z = randv(size_t(Nn) * V, 7);
    for (float& v : z) v *= 5;
    std::vector<int32_t> t(Nn);
    for (int i = 0; i < Nn; ++i) t[size_t(i)] = (i * 31) % V;
    std::vector<float> d(z.size()), lc(Nn), lg(Nn);
    std::vector<int32_t> ac(Nn), ag(Nn);
    DevArray<float> zg = up(g, z), dg(g, z.size());
    DevArray<int32_t> tg = up(g, t);
    c.softmax_xent(z.data(), t.data(), Nn, V, 0.25f, d.data(), lc.data(), ac.data());
    g.softmax_xent(zg.get(), tg.get(), Nn, V, 0.25f, dg.get(), lg.data(), ag.data());
    expect_close(lc, lg, 1e-6, "row loss");
    EXPECT_EQ(ac, ag);
    expect_close(d, down(dg), 1e-5, "dlogits");
  }
  // Dropout: the same Philox bits on both devices.
  {
    std::vector<float> x = randv(size_t(1000) * 17, 8);
    DevArray<float> xg = up(g, x);
    c.dropout(x.data(), 1000, 17, 99, 5, 2, 0.3);
    g.dropout(xg.get(), 1000, 17, 99, 5, 2, 0.3);
    EXPECT_EQ(x, down(xg));
  }
  // Sum of squares and the optimiser updates.
  {
    const std::vector<float> x = randv(100003, 9);
    DevArray<float> xg = up(g, x);
    EXPECT_NEAR(c.sum_squares(x.data(), x.size()), g.sum_squares(xg.get(), x.size()), 1e-9 * x.size());
    std::vector<float> pc = randv(1000, 10), gr = randv(1000, 11), m(1000, 0.f), v(1000, 0.f);
    DevArray<float> pg = up(g, pc), grg = up(g, gr), mg = up(g, m), vg = up(g, v);
    for (int s = 1; s <= 3; ++s) {
      const double bc1 = 1 - std::pow(0.9, s), bc2 = 1 - std::pow(0.999, s);
      c.adam_step(pc.data(), gr.data(), m.data(), v.data(), 1000, 1e-2f, 0.9, 0.999, 1e-8f, bc1, bc2);
      g.adam_step(pg.get(), grg.get(), mg.get(), vg.get(), 1000, 1e-2f, 0.9, 0.999, 1e-8f, bc1, bc2);
    }
    expect_close(pc, down(pg), 1e-6, "adam");
    c.rmsprop_step(pc.data(), gr.data(), m.data(), 1000, 1e-2f, 0.99, 1e-8f);
    g.rmsprop_step(pg.get(), grg.get(), mg.get(), 1000, 1e-2f, 0.99, 1e-8f);
    expect_close(pc, down(pg), 1e-6, "rmsprop");
    c.sgd_step(pc.data(), gr.data(), v.data(), 1000, 0.1f, 0.9f, false);
    g.sgd_step(pg.get(), grg.get(), vg.get(), 1000, 0.1f, 0.9f, false);
    expect_close(pc, down(pg), 1e-6, "sgd");
  }
}
