// Feature cases beyond the tables: every null / non-null combination of the optional states, dropout with several
// layers, cell clipping, TRAINING vs INFERENCE agreement, WGRAD ADD vs SET, run-to-run determinism, the weight
// layout queries, and how many table cases the forced algorithm refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "case_table.h"
#include "checks.h"
#include "numeric_types.h"

namespace ort {
namespace {

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name(); }

Case base(openrnn_cell cell, openrnn_data_type t) {
  Case c;
  c.cell = cell;
  c.dtype = t;
  c.I = 4;
  c.H = 5;
  c.B = 3;
  c.T = 4;
  c.L = 2;
  c.D = 2;
  c.ragged = true;
  c.fill = 1.5;
  return c;
}

// ---- optional states ------------------------------------------------------------------------------------------------
std::vector<Case> state_forward_cases() {
  std::vector<Case> v;
  for (unsigned m = 0; m < 16; ++m) {  // hx, cx, hy, cy
    Case c = base(OPENRNN_CELL_LSTM, OPENRNN_DATA_DOUBLE);
    c.P = m % 3 == 0 ? 3 : 0;
    c.states = (m & 1 ? kHx : 0) | (m & 2 ? kCx : 0) | (m & 4 ? kHy : 0) | (m & 8 ? kCy : 0);
    c.mode = m % 2 ? OPENRNN_FWD_TRAINING : OPENRNN_FWD_INFERENCE;
    c.tag = "states";
    v.push_back(c);
  }
  for (auto cell : {OPENRNN_CELL_GRU, OPENRNN_CELL_GRU_RESET_BEFORE, OPENRNN_CELL_RNN_RELU})
    for (unsigned m = 0; m < 4; ++m) {  // hx, hy
      Case c = base(cell, OPENRNN_DATA_FLOAT);
      c.states = (m & 1 ? kHx : 0) | (m & 2 ? kHy : 0);
      c.tag = "states";
      v.push_back(c);
    }
  return on_every_backend(v);
}

std::vector<Case> state_backward_cases() {
  std::vector<Case> v;
  for (unsigned m = 0; m < 16; ++m) {  // dhy, dcy, dhx, dcx
    Case c = base(OPENRNN_CELL_LSTM, OPENRNN_DATA_DOUBLE);
    c.mode = OPENRNN_FWD_TRAINING;
    c.P = m % 4 == 1 ? 2 : 0;
    c.states = kHx | kCx | kHy | kCy | (m & 1 ? kDhy : 0) | (m & 2 ? kDcy : 0) | (m & 4 ? kDhx : 0) |
               (m & 8 ? kDcx : 0);
    c.tag = "bstates";
    v.push_back(c);
  }
  // No initial states at all (zeros), all gradients wanted.
  for (auto cell : {OPENRNN_CELL_LSTM, OPENRNN_CELL_GRU}) {
    Case c = base(cell, OPENRNN_DATA_DOUBLE);
    c.mode = OPENRNN_FWD_TRAINING;
    c.states = kAllStates & ~(kHx | kCx);
    c.tag = "bstates";
    v.push_back(c);
  }
  for (unsigned m = 0; m < 4; ++m) {  // GRU: dhy, dhx
    Case c = base(OPENRNN_CELL_GRU_RESET_BEFORE, OPENRNN_DATA_DOUBLE);
    c.mode = OPENRNN_FWD_TRAINING;
    c.states = kHx | kHy | (m & 1 ? kDhy : 0) | (m & 2 ? kDhx : 0);
    c.tag = "bstates";
    v.push_back(c);
  }
  return on_every_backend(v);
}

class StatesForward : public ::testing::TestWithParam<Case> {};
class StatesBackward : public ::testing::TestWithParam<Case> {};
TEST_P(StatesForward, MatchesReference) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  std::string why;
  if (!check_forward_case(GetParam(), &why)) GTEST_SKIP() << why;
}
TEST_P(StatesBackward, MatchesReference) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  std::string why;
  if (!check_backward_case(GetParam(), &why)) GTEST_SKIP() << why;
}
INSTANTIATE_TEST_SUITE_P(Feature, StatesForward, ::testing::ValuesIn(state_forward_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Feature, StatesBackward, ::testing::ValuesIn(state_backward_cases()), case_name);

// ---- dropout and clipping -------------------------------------------------------------------------------------------
std::vector<Case> dropout_clip_cases() {
  std::vector<Case> v;
  int n = 0;
  for (auto cell : {OPENRNN_CELL_LSTM, OPENRNN_CELL_GRU, OPENRNN_CELL_GRU_RESET_BEFORE, OPENRNN_CELL_RNN_TANH,
                    OPENRNN_CELL_RNN_RELU})
    for (auto t : {OPENRNN_DATA_DOUBLE, OPENRNN_DATA_FLOAT, OPENRNN_DATA_HALF})
      for (int D = 1; D <= 2; ++D) {
        Case c = base(cell, t);
        c.L = 3;
        c.D = D;
        c.mode = OPENRNN_FWD_TRAINING;
        c.dropout = n % 2 ? 0.35 : 0.7;
        // Seeds and offsets past 32 bits exercise the high counter / key words.
        c.dropout_seed = n % 3 ? 0x1234567890abcdefull : 7;
        c.dropout_offset = n % 4 == 1 ? 0x500000003ull : static_cast<uint64_t>(n);
        c.tag = "d" + std::to_string(n++);
        v.push_back(c);
      }
  // TF32 (float32 only): on the CPU ALLOW_TF32 is ignored, so the strict bounds hold there.
  for (auto cell : {OPENRNN_CELL_LSTM, OPENRNN_CELL_GRU, OPENRNN_CELL_RNN_TANH}) {
    Case c = base(cell, OPENRNN_DATA_FLOAT);
    c.math = OPENRNN_MATH_ALLOW_TF32;
    c.H = 40;
    c.I = 33;
    c.mode = OPENRNN_FWD_TRAINING;
    v.push_back(c);
  }
  for (auto t : {OPENRNN_DATA_DOUBLE, OPENRNN_DATA_FLOAT})
    for (int P : {0, 2}) {
      Case c = base(OPENRNN_CELL_LSTM, t);
      c.clip = 0.3;  // small enough that many cells clip
      c.P = P;
      c.mode = OPENRNN_FWD_TRAINING;
      v.push_back(c);
      c.clip = 0.3;
      c.dropout = 0.25;
      c.L = 3;
      v.push_back(c);
    }
  return on_every_backend(v);
}

class DropoutClip : public ::testing::TestWithParam<Case> {};
TEST_P(DropoutClip, ForwardTrainingAndInference) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  std::string why;
  if (!check_forward_case(GetParam(), &why)) GTEST_SKIP() << why;
  Case inf = GetParam();
  inf.mode = OPENRNN_FWD_INFERENCE;  // dropout must be off: the reference without dropout
  check_forward_case(inf, &why);
}
TEST_P(DropoutClip, Backward) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  std::string why;
  if (!check_backward_case(GetParam(), &why)) GTEST_SKIP() << why;
}
INSTANTIATE_TEST_SUITE_P(Feature, DropoutClip, ::testing::ValuesIn(dropout_clip_cases()), case_name);

// ---- agreement between calls --------------------------------------------------------------------------------------
std::vector<Case> agreement_cases() {
  std::vector<Case> v;
  for (auto cell : {OPENRNN_CELL_LSTM, OPENRNN_CELL_GRU, OPENRNN_CELL_GRU_RESET_BEFORE, OPENRNN_CELL_RNN_TANH,
                    OPENRNN_CELL_RNN_RELU})
    for (auto t : {OPENRNN_DATA_DOUBLE, OPENRNN_DATA_FLOAT, OPENRNN_DATA_BFLOAT16}) {
      Case c = base(cell, t);
      c.H = 37;  // wide enough that threads split the units and the batch
      c.I = 11;
      c.B = 6;
      c.P = cell == OPENRNN_CELL_LSTM ? 9 : 0;
      c.layout = t == OPENRNN_DATA_FLOAT ? OPENRNN_LAYOUT_BATCH_MAJOR : OPENRNN_LAYOUT_SEQ_MAJOR;
      v.push_back(c);
    }
  return on_every_backend(v);
}

class Agreement : public ::testing::TestWithParam<Case> {};

// Without dropout, TRAINING and INFERENCE compute the same function: results agree to the dtype's tolerance.
TEST_P(Agreement, TrainingMatchesInference) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  Runner r(GetParam());
  std::string why;
  if (!r.supports(OPENRNN_FWD_INFERENCE, &why) || !r.supports(OPENRNN_FWD_TRAINING, &why)) GTEST_SKIP() << why;
  const FwdOut a = r.forward(OPENRNN_FWD_INFERENCE);
  const FwdOut b = r.forward(OPENRNN_FWD_TRAINING);
  if (a.y.empty() || b.y.empty()) return;
  // The two modes may take different code paths (e.g. fused vs stored activations): each is within the forward
  // tolerance of the reference, so they agree to about that.
  const double tol = GetParam().dtype == OPENRNN_DATA_DOUBLE  ? 1e-12
                     : GetParam().dtype == OPENRNN_DATA_FLOAT ? 1e-5
                                                              : 1e-2;
  const auto mask = r.valid_mask(GetParam().D * r.prob.cfg.Hout());
  expect_close("y training vs inference", b.y, a.y, tol, mask);
  expect_close("hy training vs inference", b.hy, a.hy, tol);
  if (!a.cy.empty()) expect_close("cy training vs inference", b.cy, a.cy, tol);
}

// The same call twice gives bitwise the same results (DESIGN.md: deterministic unless the caller opts out).
TEST_P(Agreement, Deterministic) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  Runner r(GetParam());
  std::string why;
  if (!r.supports(OPENRNN_FWD_TRAINING, &why)) GTEST_SKIP() << why;
  const FwdOut a = r.forward(OPENRNN_FWD_TRAINING);
  const BwdOut ga = r.backward();
  const FwdOut b = r.forward(OPENRNN_FWD_TRAINING);
  const BwdOut gb = r.backward();
  auto same = [](const std::vector<double>& p, const std::vector<double>& q) {
    if (p.size() != q.size()) return false;
    for (size_t i = 0; i < p.size(); ++i)
      if (!(p[i] == q[i]) && !(std::isnan(p[i]) && std::isnan(q[i]))) return false;
    return true;
  };
  EXPECT_TRUE(same(a.y, b.y) && same(a.hy, b.hy) && same(a.cy, b.cy)) << "forward differs between two runs";
  EXPECT_TRUE(same(ga.dx, gb.dx) && same(ga.dhx, gb.dhx) && same(ga.dcx, gb.dcx)) << "backward_data differs";
  EXPECT_TRUE(same(ga.dw, gb.dw)) << "backward_weights differs between two runs";
}

// WGRAD_ADD accumulates onto what dweights held; WGRAD_SET overwrites it.
TEST_P(Agreement, WgradAddAccumulatesWhatSetWrites) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  Runner r(GetParam());
  std::string why;
  if (!r.supports(OPENRNN_FWD_TRAINING, &why)) GTEST_SKIP() << why;
  if (r.forward(OPENRNN_FWD_TRAINING).y.empty()) return;
  const BwdOut g = r.backward();
  if (g.dw.empty()) return;
  Rng rng(GetParam().seed() ^ 0xadd);
  auto init = random_vector(rng, g.dw.size(), 2.0);
  for (auto& e : init) e = round_to(GetParam().dtype, e);
  const auto sum = r.backward_weights_add(init);
  std::vector<double> want(init.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = init[i] + g.dw[i];
  const double tol = GetParam().dtype == OPENRNN_DATA_DOUBLE  ? 1e-14
                     : GetParam().dtype == OPENRNN_DATA_FLOAT ? 1e-6
                                                              : 1e-2;
  expect_close("dweights after ADD vs initial + SET", sum, want, tol);
  // ADD onto zeros is SET.
  const auto from_zero = r.backward_weights_add(std::vector<double>(init.size(), 0.0));
  expect_close("dweights ADD onto zeros vs SET", from_zero, g.dw, tol);
}
// CPU: the thread count changes how work is split, not the results (beyond float reassociation).
TEST_P(Agreement, CpuThreadCountsAgree) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  if (GetParam().backend != Backend::CPU) GTEST_SKIP() << "thread counts apply to CPU handles only";
  Runner r(GetParam());
  std::string why;
  if (!r.supports(OPENRNN_FWD_TRAINING, &why)) GTEST_SKIP() << why;
  ASSERT_EQ(openrnn_set_num_threads(r.handle, 1), OPENRNN_STATUS_SUCCESS);
  const FwdOut a = r.forward(OPENRNN_FWD_TRAINING);
  const BwdOut ga = r.backward();
  ASSERT_EQ(openrnn_set_num_threads(r.handle, 3), OPENRNN_STATUS_SUCCESS);
  const FwdOut b = r.forward(OPENRNN_FWD_TRAINING);
  const BwdOut gb = r.backward();
  const double tol = GetParam().dtype == OPENRNN_DATA_DOUBLE  ? 1e-13
                     : GetParam().dtype == OPENRNN_DATA_FLOAT ? 1e-6
                                                              : 1e-2;
  const auto mask = r.valid_mask(GetParam().D * r.prob.cfg.Hout());
  expect_close("y, 3 threads vs 1", b.y, a.y, tol, mask);
  expect_close("hy, 3 threads vs 1", b.hy, a.hy, tol);
  expect_close("dx, 3 threads vs 1", gb.dx, ga.dx, tol, r.valid_mask(GetParam().I));
  expect_close("dweights, 3 threads vs 1", gb.dw, ga.dw, tol);
}

INSTANTIATE_TEST_SUITE_P(Feature, Agreement, ::testing::ValuesIn(agreement_cases()), case_name);

// ---- the weight layout queries against the documented layout ----------------------------------------------------------
TEST(WeightLayout, QueriesMatchTheDocumentedOrder) {
  openrnn_handle_t h = nullptr;
  ASSERT_EQ(openrnn_create_handle(&h, OPENRNN_DEVICE_CPU, 0), OPENRNN_STATUS_SUCCESS);
  int checked = 0;
  for (const auto& c0 : forward_cases()) {
    if (c0.backend != Backend::CPU) continue;
    const RefConfig rc = c0.ref_problem(false).cfg;
    openrnn_rnn_config cfg;
    openrnn_rnn_config_init(&cfg);
    cfg.cell = rc.cell;
    cfg.input_size = rc.I;
    cfg.hidden_size = rc.H;
    cfg.proj_size = rc.P;
    cfg.num_layers = rc.L;
    cfg.bidirectional = rc.D == 2;
    cfg.bias_mode = rc.bias;
    cfg.data_type = c0.dtype;
    openrnn_rnn_desc_t d = nullptr;
    ASSERT_EQ(openrnn_create_rnn_desc(&d, &cfg), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
    const auto want = ref_weight_layout(rc);
    int count = 0;
    ASSERT_EQ(openrnn_get_weight_param_count(d, &count), OPENRNN_STATUS_SUCCESS);
    ASSERT_EQ(static_cast<size_t>(count), want.size()) << c0.name();
    size_t bytes = 0;
    ASSERT_EQ(openrnn_get_weight_space_size(h, d, &bytes), OPENRNN_STATUS_SUCCESS);
    EXPECT_EQ(bytes, ref_weight_count(rc) * elem_size(c0.dtype)) << c0.name();
    for (int i = 0; i < count; ++i) {
      openrnn_weight_param p, q;
      ASSERT_EQ(openrnn_get_weight_param(d, i, &p), OPENRNN_STATUS_SUCCESS);
      const RefTensor& t = want[static_cast<size_t>(i)];
      EXPECT_EQ(p.offset, t.offset) << c0.name() << " " << t.name;
      EXPECT_EQ(p.offset_bytes, t.offset * elem_size(c0.dtype)) << t.name;
      EXPECT_EQ(p.rows, t.rows) << t.name;
      EXPECT_EQ(p.cols, t.cols) << t.name;
      EXPECT_EQ(p.layer, t.layer) << t.name;
      EXPECT_EQ(p.direction, t.dir) << t.name;
      EXPECT_EQ(p.kind, t.kind) << t.name;
      EXPECT_STREQ(p.name, t.name.c_str());
      ASSERT_EQ(openrnn_get_weight_params(d, t.layer, t.dir, t.kind, &q), OPENRNN_STATUS_SUCCESS);
      EXPECT_EQ(q.offset, t.offset) << t.name;
    }
    openrnn_destroy_rnn_desc(d);
    ++checked;
  }
  EXPECT_GT(checked, 100);
  openrnn_destroy_handle(h);
}

// ---- algorithm refusals --------------------------------------------------------------------------------------------
// Under OPENRNN_TEST_ALGO, cases the algorithm cannot run are skipped; this test counts them per backend so that the
// refusals are visible in one place. AUTO (and STANDARD) must refuse nothing.
TEST(AlgoCoverage, RefusedCasesAreCounted) {
  const openrnn_algo algo = forced_algo();
  auto cases = forward_cases();
  const auto bw = backward_cases();
  cases.insert(cases.end(), bw.begin(), bw.end());
  bool any = false;
  for (Backend be : compiled_backends()) {
    std::string why;
    if (!backend_available(be, &why)) {
      std::printf("[algo %s] %s: not available (%s)\n", algo_name(algo), backend_tag(be), why.c_str());
      continue;
    }
    any = true;
    int total = 0, refused = 0;
    std::string first;
    for (const auto& c : cases) {
      if (c.backend != be) continue;
      ++total;
      Runner r(c);
      if (!r.ready(&why)) {
        ++refused;
        if (first.empty()) first = c.name() + ": " + why;
      }
    }
    std::printf("[algo %s] %s: %d of %d table cases refused%s%s\n", algo_name(algo), backend_tag(be), refused, total,
                first.empty() ? "" : "; first: ", first.c_str());
    RecordProperty(std::string("refused_") + backend_tag(be), refused);
    if (algo != OPENRNN_ALGO_PERSISTENT) {
      EXPECT_EQ(refused, 0) << "algorithm " << algo_name(algo) << " refused table cases on " << backend_tag(be);
    }
  }
  EXPECT_TRUE(any);
}

}  // namespace
}  // namespace ort
