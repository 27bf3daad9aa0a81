// CUDA backend, STANDARD algorithm, checked on its own (the shared harness adds the full case table):
//   * float64 forward against the float64 reference of test_cuda_ref.h (<= 1e-12), inference and training equal;
//   * float64 backward_data + backward_weights against central finite differences of the GPU's own float64
//     forward (<= 1e-6 relative), SET and ADD;
//   * float32 (<= 1e-5), TF32 (<= 3e-3; gradients 2e-2), float16 (<= 1e-2) and bfloat16 (<= 5e-2) against float64
//     on the GPU; y and dx over each sequence's steps (seq_err), their padded steps equal to the reference's;
//   * GPU float32 against the CPU backend float32 (<= 1e-5) once the CPU backend runs the problem.
// Cases cover every cell, bias mode, projection, clipping, dropout, layers, directions, ragged lengths, both layouts,
// null optional states and odd sizes. Padding steps of x and dy hold NaN: reading them would fail the checks.
#include "test_cuda_util.h"  // first: defines OPENRNN_TEST_CUDA from the build's switch

#ifdef OPENRNN_TEST_CUDA

#include <algorithm>
#include <cstdio>
#include <random>

#include "test_cuda_ref.h"
#include "test_cuda_util.h"

namespace cudatest {
namespace {

struct Case {
  std::string name;
  Problem pr;
  openrnn_device device = OPENRNN_DEVICE_CUDA;
};

Problem make(openrnn_cell cell, int I, int H, int L, bool bidir, int T, int B) {
  Problem p;
  p.cfg = base_config(cell, I, H, L, bidir);
  p.T = T;
  p.B = B;
  return p;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  {
    Problem p = make(OPENRNN_CELL_LSTM, 5, 7, 2, true, 6, 4);
    p.lengths = {6, 3, 1, 5};
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    p.cfg.dropout = 0.3;
    p.cfg.dropout_seed = 1234;
    p.dropout_offset = 7;
    v.push_back({"lstm_bidir_2layer_ragged_batchmajor_dropout", p});
  }
  {
    Problem p = make(OPENRNN_CELL_LSTM, 4, 6, 2, true, 5, 3);
    p.cfg.proj_size = 3;
    p.cfg.cell_clip = 0.9;
    p.lengths = {2, 5, 4};
    v.push_back({"lstm_proj_clip_bidir_ragged", p});
  }
  {
    Problem p = make(OPENRNN_CELL_LSTM, 3, 1, 1, false, 4, 2);
    p.cfg.bias_mode = OPENRNN_BIAS_SINGLE_RECURRENT;
    p.use_hx = false;
    p.want_cy = false;
    p.use_dcy = false;
    v.push_back({"lstm_H1_single_recurrent_bias_null_states", p});
  }
  {
    Problem p = make(OPENRNN_CELL_GRU, 5, 6, 2, true, 5, 3);
    p.cfg.bias_mode = OPENRNN_BIAS_SINGLE_INPUT;
    p.lengths = {3, 5, 1};
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    v.push_back({"gru_bidir_2layer_single_input_bias_ragged", p});
  }
  {
    Problem p = make(OPENRNN_CELL_GRU_RESET_BEFORE, 4, 5, 2, true, 4, 3);
    p.lengths = {4, 2, 3};
    p.cfg.dropout = 0.5;
    p.cfg.dropout_seed = 99;
    v.push_back({"gru_reset_before_bidir_ragged_dropout", p});
  }
  {
    Problem p = make(OPENRNN_CELL_RNN_TANH, 3, 4, 3, false, 5, 2);
    p.cfg.bias_mode = OPENRNN_BIAS_NONE;
    p.use_hx = false;
    p.use_dhy = false;
    v.push_back({"rnn_tanh_3layer_no_bias", p});
  }
  {
    Problem p = make(OPENRNN_CELL_RNN_RELU, 3, 5, 1, true, 4, 3);
    p.lengths = {1, 4, 2};
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    v.push_back({"rnn_relu_bidir_ragged", p});
  }
  {
    Problem p = make(OPENRNN_CELL_GRU, 17, 17, 1, false, 3, 5);
    p.want_hy = false;
    v.push_back({"gru_H17_no_hy", p});
  }
  // B = 20: past the fused step kernel's batch limit for float16/bfloat16 (standard_fused.cuh), so these run the
  // cuBLAS step: the M-doubled split-state GEMM, and with ALLOW_REDUCED_STATE the in-place (LSTM, RNN; batch-major
  // rows: a strided gx) and gh (GRU) products.
  {
    Problem p = make(OPENRNN_CELL_LSTM, 6, 8, 1, true, 4, 20);
    p.lengths.resize(20);
    for (int b = 0; b < 20; ++b) p.lengths[b] = 1 + (b * 7) % 4;
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    v.push_back({"lstm_B20_bidir_ragged_batchmajor", p});
  }
  {
    Problem p = make(OPENRNN_CELL_GRU, 5, 9, 2, false, 4, 20);
    v.push_back({"gru_B20_2layer", p});
  }
  {
    Problem p = make(OPENRNN_CELL_RNN_TANH, 4, 6, 1, false, 5, 20);
    v.push_back({"rnn_tanh_B20", p});
  }
  // B = 40 / 48: float32 runs the CUDA-core fused step here by its rule (B <= 64 with H <= 256, standard_fused.cuh),
  // 16-bit types the cuBLAS step.
  {
    Problem p = make(OPENRNN_CELL_LSTM, 6, 8, 1, false, 5, 40);
    p.lengths.resize(40);
    for (int b = 0; b < 40; ++b) p.lengths[b] = 1 + (b * 3) % 5;
    v.push_back({"lstm_B40_ragged", p});
  }
  {
    Problem p = make(OPENRNN_CELL_GRU, 5, 7, 2, true, 4, 48);
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    v.push_back({"gru_B48_bidir_2layer_batchmajor", p});
  }
  // H >= 256 at B >= 2: float32 runs the wide fused step by its rule (standard_fused.cuh; 16 sequences per block):
  // a partial sequence tile (B = 12 / 18), 4-gate, 3-gate and 1-gate reductions, and H = 258 (Hout % 4 != 0: scalar
  // weight loads and scalar h staging, k padded to 260).
  {
    Problem p = make(OPENRNN_CELL_LSTM, 6, 256, 1, false, 3, 12);
    p.lengths.resize(12);
    for (int b = 0; b < 12; ++b) p.lengths[b] = 1 + b % 3;
    v.push_back({"lstm_H256_B12_ragged", p});
  }
  {
    Problem p = make(OPENRNN_CELL_GRU, 5, 258, 1, true, 3, 18);
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    v.push_back({"gru_H258_B18_bidir_batchmajor", p});
  }
  {
    Problem p = make(OPENRNN_CELL_RNN_TANH, 4, 256, 2, false, 3, 9);
    v.push_back({"rnn_tanh_H256_B9_2layer", p});
  }
  // H = 1024 at B = 32: two sequence tiles and 16 warps per block (wide_warps() on a GPU of 100+ SMs).
  {
    Problem p = make(OPENRNN_CELL_LSTM, 3, 1024, 1, false, 2, 32);
    p.lengths.resize(32);
    for (int b = 0; b < 32; ++b) p.lengths[b] = 1 + b % 2;
    p.finite_differences = false;
    v.push_back({"lstm_H1024_B32_ragged", p});
  }
  // One-direction stacks run the layer wavefront (standard_forward.cu): L = 4 is a group of three layers and one
  // of one; chunks of the default rule (T = 9, 3 lanes: 2 steps) end inside the sequences and past the short ones;
  // batch-major x makes layer 0's chunk GEMM strided-batched; dropout is applied chunk by chunk.
  {
    Problem p = make(OPENRNN_CELL_LSTM, 5, 6, 4, false, 9, 3);
    p.lengths = {9, 4, 1};
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    p.cfg.dropout = 0.25;
    p.cfg.dropout_seed = 77;
    p.dropout_offset = 3;
    v.push_back({"lstm_4layer_wavefront_ragged_batchmajor_dropout", p});
  }
  {
    Problem p = make(OPENRNN_CELL_LSTM, 4, 7, 3, false, 8, 20);
    p.cfg.proj_size = 5;
    p.lengths.resize(20);
    for (int b = 0; b < 20; ++b) p.lengths[b] = 1 + (b * 5) % 8;
    v.push_back({"lstm_proj_3layer_wavefront_B20_ragged", p});
  }
  {
    Problem p = make(OPENRNN_CELL_GRU_RESET_BEFORE, 6, 5, 2, false, 7, 20);
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    v.push_back({"gru_reset_before_2layer_wavefront_B20_batchmajor", p});
  }
  // float32 past B = 64 at small H: the fused forward and backward steps by their rules since session 62
  // (fused_fwd_rule / fused_bwd_rule, standard_fused.cuh): several sequence tiles, the last one partial (B = 130).
  // GRU at H = 40 B = 100 runs the fused forward and backward; RNN at H = 300 B = 100 the wide forward step with
  // 16 sequences per block.
  {
    Problem p = make(OPENRNN_CELL_LSTM, 5, 32, 1, false, 3, 96);
    p.lengths.resize(96);
    for (int b = 0; b < 96; ++b) p.lengths[b] = 1 + (b * 5) % 3;
    p.finite_differences = false;
    v.push_back({"lstm_H32_B96_ragged", p});
  }
  {
    Problem p = make(OPENRNN_CELL_GRU, 6, 40, 1, true, 3, 100);
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    p.finite_differences = false;
    v.push_back({"gru_H40_B100_bidir_batchmajor", p});
  }
  {
    Problem p = make(OPENRNN_CELL_RNN_TANH, 4, 24, 2, false, 3, 130);
    p.finite_differences = false;
    v.push_back({"rnn_tanh_H24_B130_2layer", p});
  }
  {
    Problem p = make(OPENRNN_CELL_RNN_RELU, 3, 300, 1, false, 2, 100);
    p.finite_differences = false;
    v.push_back({"rnn_relu_H300_B100", p});
  }
  // The same checks on the CPU backend validate this file's reference and gradient checks without a GPU.
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) {
    Case c = v[i];
    c.name += "_cpu";
    c.device = OPENRNN_DEVICE_CPU;
    v.push_back(c);
  }
  return v;
}

class CudaStandard : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (GetParam().device == OPENRNN_DEVICE_CUDA && !has_device()) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(openrnn_create_handle(&h_, GetParam().device, 0), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  }
  void TearDown() override { openrnn_destroy_handle(h_); }
  openrnn_handle_t h_ = nullptr;
};

TEST_P(CudaStandard, Float64ForwardMatchesReference) {
  const Problem pr = GetParam().pr;
  const Inputs in = random_inputs(pr, 11);
  for (openrnn_fwd_mode mode : {OPENRNN_FWD_INFERENCE, OPENRNN_FWD_TRAINING}) {
    const Outputs o = run_api(h_, pr, in, mode, false);
    const RefOut r = reference_forward(pr, in, mode == OPENRNN_FWD_TRAINING);
    EXPECT_LE(seq_err(pr, o.y, r.y), 1e-12) << "y, mode " << mode;
    if (pr.want_hy) {
      EXPECT_LE(rel_err(o.hy, r.hy), 1e-12) << "hy, mode " << mode;
    }
    if (pr.lstm() && pr.want_cy) {
      EXPECT_LE(rel_err(o.cy, r.cy), 1e-12) << "cy, mode " << mode;
    }
  }
  // Inference and training (without dropout) run the same arithmetic: bitwise equal outputs.
  if (pr.cfg.dropout == 0) {
    const Outputs a = run_api(h_, pr, in, OPENRNN_FWD_INFERENCE, false);
    const Outputs b = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, false);
    EXPECT_TRUE(bitwise_equal(a.y, b.y));
  }
}

// loss = sum(y * dy) over non-padding steps + sum(hy * dhy) + sum(cy * dcy), from the GPU's float64 training forward.
double loss_of(openrnn_handle_t h, const Problem& pr, const Inputs& in) {
  Problem q = pr;
  q.want_hy = true;
  q.want_cy = true;
  const Outputs o = run_api(h, q, in, OPENRNN_FWD_TRAINING, false);
  const int W = pr.D() * pr.Hout();
  double s = 0;
  for (int t = 0; t < pr.T; ++t)
    for (int b = 0; b < pr.B; ++b)
      if (t < pr.len(b))
        for (int j = 0; j < W; ++j) s += o.y[pr.vec(t, b, W) + j] * in.dy[pr.vec(t, b, W) + j];
  if (pr.use_dhy)
    for (size_t i = 0; i < o.hy.size(); ++i) s += o.hy[i] * in.dhy[i];
  if (pr.lstm() && pr.use_dcy)
    for (size_t i = 0; i < o.cy.size(); ++i) s += o.cy[i] * in.dcy[i];
  return s;
}

TEST_P(CudaStandard, Float64BackwardMatchesFiniteDifferences) {
  const Problem pr = GetParam().pr;
  if (!pr.finite_differences) GTEST_SKIP() << "large float32-path case; float64 gradients covered by the small cases";
  const Inputs in = random_inputs(pr, 23);
  const Outputs g = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, true);
  // Padding steps of dx hold the fill value.
  for (int b = 0; b < pr.B; ++b)
    for (int t = pr.len(b); t < pr.T; ++t)
      for (int i = 0; i < pr.cfg.input_size; ++i)
        ASSERT_EQ(g.dx[pr.vec(t, b, pr.cfg.input_size) + i], pr.fill) << "dx padding t=" << t << " b=" << b;

  std::mt19937 rng(5);
  const double eps = 1e-5;
  auto check = [&](const char* what, std::vector<double> Inputs::*field, const std::vector<double>& analytic,
                   std::vector<size_t> idx) {
    std::shuffle(idx.begin(), idx.end(), rng);
    if (idx.size() > 40) idx.resize(40);
    std::vector<double> num, ana;
    for (size_t i : idx) {
      Inputs p = in;
      (p.*field)[i] += eps;
      const double up = loss_of(h_, pr, p);
      (p.*field)[i] -= 2 * eps;
      const double dn = loss_of(h_, pr, p);
      num.push_back((up - dn) / (2 * eps));
      ana.push_back(analytic[i]);
    }
    EXPECT_LE(rel_err(ana, num), 1e-6) << what;
  };
  std::vector<size_t> xi;
  for (int b = 0; b < pr.B; ++b)
    for (int t = 0; t < pr.len(b); ++t)
      for (int i = 0; i < pr.cfg.input_size; ++i) xi.push_back(pr.vec(t, b, pr.cfg.input_size) + i);
  check("dx", &Inputs::x, g.dx, xi);
  std::vector<size_t> wi(in.w.size());
  for (size_t i = 0; i < wi.size(); ++i) wi[i] = i;
  check("dw", &Inputs::w, g.dw, wi);
  if (pr.use_hx) {
    std::vector<size_t> hi(in.hx.size());
    for (size_t i = 0; i < hi.size(); ++i) hi[i] = i;
    check("dhx", &Inputs::hx, g.dhx, hi);
  } else {
    // hx = zeros: dhx is still the gradient at zero state; compare against a run with explicit zeros.
    Problem q = pr;
    q.use_hx = true;
    Inputs z = in;
    std::fill(z.hx.begin(), z.hx.end(), 0.0);
    const Outputs gz = run_api(h_, q, z, OPENRNN_FWD_TRAINING, true);
    EXPECT_LE(rel_err(g.dhx, gz.dhx), 1e-14);
  }
  if (pr.lstm() && pr.use_cx) {
    std::vector<size_t> ci(in.cx.size());
    for (size_t i = 0; i < ci.size(); ++i) ci[i] = i;
    check("dcx", &Inputs::cx, g.dcx, ci);
  }
  // ADD accumulates onto the existing dweights.
  const Outputs ga = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, true, OPENRNN_WGRAD_ADD);
  std::vector<double> expect(in.dw0.size());
  for (size_t i = 0; i < expect.size(); ++i) expect[i] = in.dw0[i] + g.dw[i];
  EXPECT_LE(rel_err(ga.dw, expect), 1e-14);
}

TEST_P(CudaStandard, ReducedPrecisionMatchesFloat64) {
  const Problem pr64 = GetParam().pr;
  const Inputs in = random_inputs(pr64, 31);
  const Outputs ref = run_api(h_, pr64, in, OPENRNN_FWD_TRAINING, true);
  struct V {
    openrnn_data_type dt;
    openrnn_math_mode mm;
    double fwd_tol, bwd_tol;
    const char* name;
  };
  const V variants[] = {{OPENRNN_DATA_FLOAT, OPENRNN_MATH_DEFAULT, 1e-5, 1e-5, "float32"},
                        // Gradients 2e-2: these weights (+-0.5) saturate the cells at H >= 256, and TF32 on the
                        // cuBLAS steps (forced: OPENRNN_STD_FUSED=0 OPENRNN_STD_MMA=0 OPENRNN_STD_WGMMA=0; the
                        // default rules run this table's float32 on CUDA cores) measured 6.8e-3
                        // (rnn_tanh_H256_B9_2layer) and 1.3e-2 (rnn_relu_H300_B100) in session 72;
                        // CudaStandardTf32 bounds TF32 at PyTorch's weight scale.
                        {OPENRNN_DATA_FLOAT, OPENRNN_MATH_ALLOW_TF32, 3e-3, 2e-2, "tf32"},
                        {OPENRNN_DATA_HALF, OPENRNN_MATH_DEFAULT, 1e-2, 2e-2, "float16"},
                        {OPENRNN_DATA_BFLOAT16, OPENRNN_MATH_DEFAULT, 5e-2, 1e-1, "bfloat16"},
                        // cuDNN's numerics (h rounded before the recurrent product): the same fixed bounds.
                        {OPENRNN_DATA_HALF, OPENRNN_MATH_ALLOW_REDUCED_STATE, 1e-2, 2e-2, "float16 reduced state"},
                        {OPENRNN_DATA_BFLOAT16, OPENRNN_MATH_ALLOW_REDUCED_STATE, 5e-2, 1e-1,
                         "bfloat16 reduced state"}};
  for (const V& v : variants) {
    Problem pr = pr64;
    pr.cfg.data_type = v.dt;
    pr.cfg.math_mode = v.mm;
    const Outputs o = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, true);
    EXPECT_LE(seq_err(pr, o.y, ref.y), v.fwd_tol) << v.name << " y";
    if (pr.want_hy) {
      EXPECT_LE(rel_err(o.hy, ref.hy), v.fwd_tol) << v.name << " hy";
    }
    EXPECT_LE(seq_err(pr, o.dx, ref.dx), v.bwd_tol) << v.name << " dx";
    EXPECT_LE(rel_err(o.dhx, ref.dhx), v.bwd_tol) << v.name << " dhx";
    EXPECT_LE(rel_err(o.dw, ref.dw), v.bwd_tol) << v.name << " dw";
  }
}

TEST_P(CudaStandard, Float32MatchesCpuBackend) {
  if (GetParam().device != OPENRNN_DEVICE_CUDA) GTEST_SKIP() << "compares the GPU with the CPU";
  Problem pr = GetParam().pr;
  pr.cfg.data_type = OPENRNN_DATA_FLOAT;
  const Inputs in = random_inputs(pr, 41);
  openrnn_handle_t cpu = nullptr;
  ASSERT_EQ(openrnn_create_handle(&cpu, OPENRNN_DEVICE_CPU, 0), OPENRNN_STATUS_SUCCESS);
  {
    // Probe: skip while the CPU backend cannot run this problem (it reports NOT_SUPPORTED, not a wrong answer).
    openrnn_rnn_desc_t rnn = nullptr;
    openrnn_create_rnn_desc(&rnn, &pr.cfg);
    std::vector<float> x(pr.nx(), 0.5f), y(pr.ny()), w(in.w.size(), 0.1f);
    openrnn_seq_desc_t xd = nullptr;
    openrnn_create_seq_desc(&xd, OPENRNN_DATA_FLOAT, pr.layout, pr.T, pr.B, pr.cfg.input_size, nullptr, 0.0);
    size_t wsb = 0, rsb = 0;
    openrnn_get_temp_space_sizes(cpu, rnn, OPENRNN_FWD_TRAINING, xd, &wsb, &rsb);
    std::vector<unsigned char> ws(wsb + 1), rs(rsb + 1);
    const openrnn_status st = openrnn_forward(cpu, rnn, OPENRNN_FWD_TRAINING, xd, x.data(), y.data(), nullptr,
                                              nullptr, nullptr, nullptr, w.data(), w.size() * 4, ws.data(), wsb,
                                              rs.data(), rsb);
    const std::string msg = openrnn_last_error();
    openrnn_destroy_seq_desc(xd);
    openrnn_destroy_rnn_desc(rnn);
    if (st == OPENRNN_STATUS_NOT_SUPPORTED) {
      openrnn_destroy_handle(cpu);
      GTEST_SKIP() << "CPU backend: " << msg;
    }
  }
  const Outputs c = run_api(cpu, pr, in, OPENRNN_FWD_TRAINING, true);
  const Outputs g = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, true);
  openrnn_destroy_handle(cpu);
  EXPECT_LE(seq_err(pr, g.y, c.y), 1e-5) << "y";
  if (pr.want_hy) {
    EXPECT_LE(rel_err(g.hy, c.hy), 1e-5) << "hy";
  }
  if (pr.lstm() && pr.want_cy) {
    EXPECT_LE(rel_err(g.cy, c.cy), 1e-5) << "cy";
  }
  EXPECT_LE(seq_err(pr, g.dx, c.dx), 1e-5) << "dx";
  EXPECT_LE(rel_err(g.dhx, c.dhx), 1e-5) << "dhx";
  EXPECT_LE(rel_err(g.dw, c.dw), 1e-5) << "dw";
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaStandard, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// float16 / bfloat16 at sizes for the tensor-core step kernel (standard_mma.cuh), one case per block shape it picks,
// with partial row, unit and k tiles. Its rule runs it by default on the cases with B * H <= 32768 (blocks of 32
// rows); the 64- and 128-row cases run it under OPENRNN_STD_MMA=1 (a pass of tools/gpu-suite.sh) and the cuBLAS step
// otherwise, so both paths meet the same bound. The inputs are rounded to the 16-bit type first, so
// the float64 run on the GPU computes exactly the problem the 16-bit run sees; then DESIGN.md's bound applies as
// written: the 16-bit error is at most twice the error of rounding the float64 result to that type. That bound
// holds only with the state carried in float32 (hi and lo rows both multiplied); the reduced-state math gets the
// fixed bounds of ReducedPrecisionMatchesFloat64 and its error is printed beside the default's. Inference and
// training give bitwise equal forwards; backward against float64 with the fixed bounds.
struct MmaCase {
  std::string name;
  Problem pr;
};

std::vector<MmaCase> mma_cases() {
  std::vector<MmaCase> v;
  auto ragged = [](Problem& p) {
    p.lengths.resize(static_cast<size_t>(p.B));
    for (int b = 0; b < p.B; ++b) p.lengths[static_cast<size_t>(b)] = 1 + (b * 7) % p.T;
  };
  {  // M = 140 rows (2B): blocks of 32 rows and 8 units (odd n8 count); K = 40 = one full and one partial k slice
    Problem p = make(OPENRNN_CELL_LSTM, 24, 40, 1, false, 5, 70);
    ragged(p);
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    v.push_back({"lstm_H40_B70_small_tile_ragged_batchmajor", p});
  }
  {  // M = 400: 64-row blocks (7 x 15 = 105 blocks); 232 units = 14.5 tiles of 16
    Problem p = make(OPENRNN_CELL_GRU, 16, 232, 1, false, 3, 200);
    ragged(p);
    v.push_back({"gru_H232_B200_mid_tile_ragged", p});
  }
  {  // M = 64: blocks of 32 rows and 16 units (2 x 50 = 100 blocks) for the mma.sync step (OPENRNN_STD_MMA=1); the
     // Hopper step's 64-row shape by the rule since session 78 (cuBLAS + pointwise before; session 80's line for
     // H % 64 != 0 holds only from B = 65); in inference at the padded pitch 832 since session 81 (StdDims::wpad)
    Problem p = make(OPENRNN_CELL_GRU, 8, 800, 1, false, 3, 32);
    ragged(p);
    v.push_back({"gru_H800_B32_tile32x16_ragged", p});
  }
  {  // M = 400: 128-row blocks (4 x 26 = 104 blocks; the last has 16 rows); 808 units = 25.25 tiles of 32 (the Hopper
     // step's 128 x 128 tile under OPENRNN_STD_WGMMA=1). By the rule since session 81 the Hopper step in inference, at
     // the padded pitch 832 (StdDims::wpad), and cuBLAS + pointwise in training (session 80's line at H % 64 != 0)
    Problem p = make(OPENRNN_CELL_LSTM, 8, 808, 1, false, 3, 200);
    p.cfg.cell_clip = 0.8;
    v.push_back({"lstm_H808_B200_big_tile_clip", p});
  }
  {  // M = 400: the Hopper step kernel's 128-row blocks with GRU's N = 96 (4 x 32 = 128 blocks; the last has 16 rows);
     // 1000 units = 31.25 tiles of 32, K = 1000 = 15 k blocks of 64 and a partial one (under OPENRNN_STD_WGMMA=1:
     // tools/gpu-suite.sh --also-env OPENRNN_STD_WGMMA=1; by the rule since session 81 the Hopper step in inference,
     // the state and W_hh at the padded pitch 1024, and cuBLAS + pointwise in training)
    Problem p = make(OPENRNN_CELL_GRU, 8, 1000, 1, false, 3, 200);
    ragged(p);
    v.push_back({"gru_H1000_B200_big_tile_ragged", p});
  }
  {  // The Hopper step kernel's tall tile (128 rows, the small shape's N = 48 for GRU), where the small shape's grid
     // would have 7 x 32 = 224 CTAs (more than an H100's or H200's 132 SMs): M = 400 = 3 full blocks and one of 16
     // rows, 32 blocks of 16 units (by wg::tall_rule; under OPENRNN_STD_WGMMA_TALL=0 the small shape)
    Problem p = make(OPENRNN_CELL_GRU, 6, 512, 1, false, 3, 200);
    ragged(p);
    v.push_back({"gru_H512_B200_tall_tile_ragged", p});
  }
  {  // the same for LSTM (N = 64) with partial unit and k tiles: 392 units = 24.5 blocks of 16, K = 392 = 6 k blocks
     // of 64 and one of 8; M = 360 = 2 full blocks and one of 104 rows (small shape: 6 x 25 = 150 CTAs); B % 8 != 0,
     // so the rows are not folded: the padded pitch 448 (session 81) through the generic cell (FwdStep::hsp)
    Problem p = make(OPENRNN_CELL_LSTM, 6, 392, 1, false, 3, 180);
    p.cfg.cell_clip = 0.8;
    v.push_back({"lstm_H392_B180_tall_tile_clip", p});
  }
  {  // the 128-row shape below 100 CTAs, where the tall tile would run two CTAs per SM (wg::big_rule: the tall grid,
     // 3 x 48 = 144 CTAs, exceeds an H100's or H200's 132 SMs): M = 384 = three 128-row blocks, 768 units = 24 blocks
     // of 32, 72 CTAs. Under OPENRNN_STD_WGMMA_BIG=0 (tools/gpu-suite.sh --also-env) the lean tall tile (wg::lean_rule)
    Problem p = make(OPENRNN_CELL_LSTM, 6, 768, 1, false, 3, 192);
    ragged(p);
    v.push_back({"lstm_H768_B192_big_tile_over_lean_ragged", p});
  }
  {  // The Hopper step's folded state rows (B % 8 == 0: each sequence's hi and lo products summed in the MMA's
     // registers; encode_fold_map) in its 64-row shape (M = 256: 4 x 32 = 128 CTAs, by the rule at H = 384-512 from
     // B = 96), both directions at once, ragged. (The tall and 72-CTA cases above with B = 200 / 192 fold too; those
     // with B = 180 and 70 keep the rows apart.)
    Problem p = make(OPENRNN_CELL_LSTM, 8, 512, 1, true, 5, 128);
    ragged(p);
    v.push_back({"lstm_H512_B128_bidir_fold_ragged", p});
  }
  {  // The register cell (RegCell: the folded tiles but the lean one run the cell on the product's accumulators) on
     // the tall tile (128 rows, N = 64: small shape 8 x 32 = 256 CTAs, tall 4 x 32 = 128, one per SM), ragged, so
     // that carried sequences take its inactive path; the 128 x 128 / 96 tiles: lstm_H1024_B256 and gru_H1024_B256
     // below (lstm_H808_B200 and gru_H1000_B200 under OPENRNN_STD_WGMMA=1)
    Problem p = make(OPENRNN_CELL_LSTM, 6, 512, 1, false, 3, 256);
    ragged(p);
    v.push_back({"lstm_H512_B256_tall_tile_reg_cell_ragged", p});
  }
  {  // The register cell on GRU's 128 x 96 tile by the default rule (4 x 32 = 128 CTAs; gru_H1000_B200 runs it only
     // under OPENRNN_STD_WGMMA=1; the permuted W box in inference, wg::perm_rule, the plain one in training), both
     // directions at once, ragged. T = 5: at T = 9 the reduced-state math's backward
     // exceeded its fixed bounds (float16 dx 0.056 against 0.02, bfloat16 0.37 against 0.1; session 77, run 1) while
     // the float32 state kept y within 1.001-1.012 times the rounding error.
    Problem p = make(OPENRNN_CELL_GRU, 8, 1024, 1, true, 5, 256);
    ragged(p);
    v.push_back({"gru_H1024_B256_bidir_reg_cell_ragged", p});
  }
  {  // The register cell on LSTM's 128 x 128 tile with the permuted W box (Maps::perm: each thread's units
     // consecutive, vector loads and stores), which wg::perm_rule takes there in inference (training keeps the plain
     // box: both run); ragged, so that carried sequences take its inactive path
    Problem p = make(OPENRNN_CELL_LSTM, 8, 1024, 1, false, 4, 256);
    ragged(p);
    v.push_back({"lstm_H1024_B256_reg_cell_perm_ragged", p});
  }
  {  // H in (1536, 2048] at B = 128 with H % 64 != 0: the Hopper step (128 x 96 tiles, 2 x 49 CTAs; 1544 units =
     // 48.25 tiles of 32, K = 1544 = 24 k blocks of 64 and one of 8) by h2048_rule in inference since session 81, at
     // the padded pitch 1600 (the register cell's PAD form); cuBLAS + pointwise in training (session 80's line for
     // H % 64 != 0, from B = 65); ragged. (gru_H1544_B128_h2048_rule_ragged in session 79.)
    Problem p = make(OPENRNN_CELL_GRU, 8, 1544, 1, false, 3, 128);
    ragged(p);
    v.push_back({"gru_H1544_B128_partial_k_ragged", p});
  }
  {  // GRU at H in (1536, 2048], B = 96: the Hopper step by h2048_rule in both modes (session 80), 2B = 192 rows, so
     // the second row of 128-row CTAs (128 x 96, 2 x 50 CTAs) takes the box shifted to end at B (rows 64-191; its
     // first 32 sequences are the first row's); ragged
    Problem p = make(OPENRNN_CELL_GRU, 8, 1600, 1, false, 3, 96);
    ragged(p);
    v.push_back({"gru_H1600_B96_shifted_box_ragged", p});
  }
  {  // LSTM at H in (768, 1024], B = 80: the Hopper step in inference (shifted box: rows 32-159 in the second row of
     // CTAs; the tall 128 x 64 tile, 60 blocks of 16 units), cuBLAS + pointwise in training (session 80's rule);
     // K = 15 k blocks of 64
    Problem p = make(OPENRNN_CELL_LSTM, 8, 960, 1, false, 3, 80);
    ragged(p);
    v.push_back({"lstm_H960_B80_shifted_box_ragged", p});
  }
  {  // H = 1024, B = 16: LSTM and GRU run the cuBLAS step by the rule (cublas_step_over_mma), in both modes
    Problem p = make(OPENRNN_CELL_LSTM, 8, 1024, 1, false, 3, 16);
    ragged(p);
    v.push_back({"lstm_H1024_B16_cublas_step_ragged", p});
  }
  {
    Problem p = make(OPENRNN_CELL_RNN_TANH, 8, 64, 1, false, 4, 40);
    p.use_hx = false;
    v.push_back({"rnn_tanh_H64_B40_no_hx", p});
  }
  {
    // One layer: a second layer's input would be the first's output rounded to 16 bits, which the float64 run
    // does not round.
    Problem p = make(OPENRNN_CELL_LSTM, 8, 48, 1, true, 5, 24);
    ragged(p);
    v.push_back({"lstm_H48_B24_bidir_ragged", p});
  }
  {  // The backward step's 16-unit tile with K split over a cluster of 2 (its rule: B <= 16, 512 < H <= 1024):
     // K = 4000 = two slices of 2000; 1000 units = 62.5 tiles of 16
    Problem p = make(OPENRNN_CELL_LSTM, 8, 1000, 1, false, 3, 12);
    ragged(p);
    v.push_back({"lstm_H1000_B12_bwd_cluster_tile_ragged", p});
  }
  {  // the same tile with uneven k slices: K = 1848 = 928 + 920
    Problem p = make(OPENRNN_CELL_GRU, 8, 616, 1, false, 4, 5);
    v.push_back({"gru_H616_B5_bwd_cluster_tile", p});
  }
  {  // The cuBLAS step's product on cuBLASLt's 128 x 16 tile (std_step_lt_tile: B = 9-16, H = 2048): M = 2B = 24
     // rows (one full and one partial tile of 16), N = 8192, K = 2048
    Problem p = make(OPENRNN_CELL_LSTM, 8, 2048, 1, false, 3, 12);
    v.push_back({"lstm_H2048_B12_step_lt_tile", p});
  }
  {  // the same for GRU (N = 6144), ragged
    Problem p = make(OPENRNN_CELL_GRU, 8, 2048, 1, false, 3, 16);
    ragged(p);
    v.push_back({"gru_H2048_B16_step_lt_tile_ragged", p});
  }
  return v;
}

// The inputs rounded to the 16-bit type dt, so that a float64 run computes exactly the problem the 16-bit run sees
// (NaN padding of x and dy survives the rounding).
Inputs rounded_inputs(const Inputs& raw, openrnn_data_type dt) {
  auto round16 = [dt](const std::vector<double>& a) { return decode(encode(a, dt), dt); };
  Inputs in = raw;
  for (std::vector<double>* v : {&in.x, &in.hx, &in.cx, &in.w, &in.dy, &in.dhy, &in.dcy, &in.dw0}) *v = round16(*v);
  return in;
}

// One parameter's elements of a whole weight (or weight-gradient) buffer.
std::vector<double> param_slice(const std::vector<double>& w, const openrnn_weight_param& wp) {
  const size_t len = static_cast<size_t>(wp.rows) * wp.cols;
  return std::vector<double>(w.begin() + static_cast<long>(wp.offset), w.begin() + static_cast<long>(wp.offset + len));
}

class CudaStandardMma : public ::testing::TestWithParam<MmaCase> {
 protected:
  void SetUp() override {
    CUDATEST_SKIP_IF_NO_GPU();
    ASSERT_EQ(openrnn_create_handle(&h_, OPENRNN_DEVICE_CUDA, 0), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  }
  void TearDown() override { openrnn_destroy_handle(h_); }
  openrnn_handle_t h_ = nullptr;
};

TEST_P(CudaStandardMma, SixteenBitWithinTwiceTheRoundingError) {
  const Problem base = GetParam().pr;
  const Inputs raw = random_inputs(base, 53);
  for (const openrnn_data_type dt : {OPENRNN_DATA_HALF, OPENRNN_DATA_BFLOAT16}) {
    const char* tname = dt == OPENRNN_DATA_HALF ? "float16" : "bfloat16";
    auto round16 = [dt](const std::vector<double>& a) { return decode(encode(a, dt), dt); };
    const Inputs in = rounded_inputs(raw, dt);
    Problem pr64 = base;
    pr64.cfg.data_type = OPENRNN_DATA_DOUBLE;
    const Outputs ref = run_api(h_, pr64, in, OPENRNN_FWD_TRAINING, true);
    const double floor_y = seq_err(base, round16(ref.y), ref.y);
    const double floor_h = base.want_hy ? rel_err(round16(ref.hy), ref.hy) : 0.0;
    const double floor_c = base.lstm() && base.want_cy ? rel_err(round16(ref.cy), ref.cy) : 0.0;
    const double fixed_fwd = dt == OPENRNN_DATA_HALF ? 1e-2 : 5e-2, fixed_bwd = dt == OPENRNN_DATA_HALF ? 2e-2 : 1e-1;

    Problem pr = base;
    pr.cfg.data_type = dt;
    const Outputs o = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, true);
    const Outputs inf = run_api(h_, pr, in, OPENRNN_FWD_INFERENCE, false);
    const double ey = seq_err(pr, o.y, ref.y);
    EXPECT_LE(ey, 2 * floor_y) << tname << " y (rounding error of the float64 result " << floor_y << ")";
    if (base.want_hy) {
      EXPECT_LE(rel_err(o.hy, ref.hy), 2 * floor_h) << tname << " hy (rounding " << floor_h << ")";
    }
    if (base.lstm() && base.want_cy) {
      EXPECT_LE(rel_err(o.cy, ref.cy), 2 * floor_c) << tname << " cy (rounding " << floor_c << ")";
    }
    EXPECT_TRUE(bitwise_equal(inf.y, o.y)) << tname << ": inference and training forwards differ";
    EXPECT_LE(seq_err(pr, o.dx, ref.dx), fixed_bwd) << tname << " dx";
    EXPECT_LE(rel_err(o.dhx, ref.dhx), fixed_bwd) << tname << " dhx";
    EXPECT_LE(rel_err(o.dw, ref.dw), fixed_bwd) << tname << " dw";

    pr.cfg.math_mode = OPENRNN_MATH_ALLOW_REDUCED_STATE;
    const Outputs r = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, true);
    const double ry = seq_err(pr, r.y, ref.y);
    EXPECT_LE(ry, fixed_fwd) << tname << " reduced state y";
    EXPECT_LE(seq_err(pr, r.dx, ref.dx), fixed_bwd) << tname << " reduced state dx";
    EXPECT_LE(rel_err(r.dw, ref.dw), fixed_bwd) << tname << " reduced state dw";
    std::printf("[ info ] %s %s: y error / rounding error: float32 state %.3f, reduced state %.3f\n",
                GetParam().name.c_str(), tname, ey / floor_y, ry / floor_y);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaStandardMma, ::testing::ValuesIn(mma_cases()),
                         [](const ::testing::TestParamInfo<MmaCase>& i) { return i.param.name; });

// The 16-bit weight gradients (standard_wgrad.cu), each parameter on its own (so a wrong bias cannot hide behind a
// large matrix), against the float64 run on the GPU with rounded inputs, with the fixed bounds of CudaStandardMma;
// ADD against SET plus the old value. The shapes take every path: cuBLASLt's split K (K = T*B in [4096, 8192], small
// outputs; operands aligned to 256 bytes and to less), cuBLAS's default, the bias column-sum kernel (K <= 512) and
// cuBLAS's dG^T 1 above it, with the LSTM b_hh copied from b_ih in SET mode; two layers and directions, GRU's
// separate dGh, ragged lengths, both layouts. PERSISTENT shares this code (its backward_weights is STANDARD's).
TEST(CudaStandardWgrad16, MatchesFloat64PerParameterSetAndAdd) {
  CUDATEST_SKIP_IF_NO_GPU();
  openrnn_handle_t h = nullptr;
  ASSERT_EQ(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  struct C {
    const char* name;
    Problem pr;
  };
  std::vector<C> cases;
  {  // K = 640: cuBLAS's default and dG^T 1 (GRU: b_hh from dGh); two layers, two directions, ragged
    Problem p = make(OPENRNN_CELL_GRU, 64, 64, 2, true, 40, 16);
    p.lengths.resize(16);
    for (int b = 0; b < 16; ++b) p.lengths[static_cast<size_t>(b)] = 1 + (b * 11) % 40;
    cases.push_back({"gru_2layer_bidir_ragged_K640", p});
  }
  {  // K = 4096, dW 256 x 64: cuBLASLt's split K; LSTM's b_hh a copy of b_ih in SET mode
    Problem p = make(OPENRNN_CELL_LSTM, 64, 64, 1, false, 64, 64);
    cases.push_back({"lstm_splitk_K4096", p});
  }
  {  // K = 4500, two directions, ragged: split K per direction on its own lane; direction 1's H_in rows start
     // 45 * 96 * 2 = 8640 bytes into their region (64-byte alignment: cuBLASLt is told, not left to assume 256)
    Problem p = make(OPENRNN_CELL_GRU, 32, 48, 1, true, 100, 45);
    p.lengths.resize(45);
    for (int b = 0; b < 45; ++b) p.lengths[static_cast<size_t>(b)] = 1 + (b * 13) % 100;
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    cases.push_back({"gru_bidir_ragged_batchmajor_splitk_K4500_align64", p});
  }
  {  // K = 400: the column-sum kernel
    Problem p = make(OPENRNN_CELL_LSTM, 48, 40, 1, false, 20, 20);
    cases.push_back({"lstm_K400", p});
  }
  {  // K = 21
    Problem p = make(OPENRNN_CELL_GRU, 16, 256, 1, false, 7, 3);
    cases.push_back({"gru_H256_K21", p});
  }
  for (const C& c : cases) {
    const Inputs raw = random_inputs(c.pr, 71);
    for (const openrnn_data_type dt : {OPENRNN_DATA_HALF, OPENRNN_DATA_BFLOAT16}) {
      const char* tname = dt == OPENRNN_DATA_HALF ? "float16" : "bfloat16";
      const Inputs in = rounded_inputs(raw, dt);
      Problem pr64 = c.pr;
      pr64.cfg.data_type = OPENRNN_DATA_DOUBLE;
      const Outputs ref = run_api(h, pr64, in, OPENRNN_FWD_TRAINING, true);
      Problem pr = c.pr;
      pr.cfg.data_type = dt;
      const Outputs o = run_api(h, pr, in, OPENRNN_FWD_TRAINING, true);
      const Outputs oa = run_api(h, pr, in, OPENRNN_FWD_TRAINING, true, OPENRNN_WGRAD_ADD);
      const double tol = dt == OPENRNN_DATA_HALF ? 2e-2 : 1e-1, ulp = dt == OPENRNN_DATA_HALF ? 1.0 / 1024 : 1.0 / 128;
      openrnn_rnn_desc_t d = nullptr;
      ASSERT_EQ(openrnn_create_rnn_desc(&d, &pr.cfg), OPENRNN_STATUS_SUCCESS);
      int n = 0;
      openrnn_get_weight_param_count(d, &n);
      ASSERT_GT(n, 0);
      for (int i = 0; i < n; ++i) {
        openrnn_weight_param wp;
        openrnn_get_weight_param(d, i, &wp);
        const size_t len = static_cast<size_t>(wp.rows) * wp.cols;
        auto slice = [&](const std::vector<double>& v) { return param_slice(v, wp); };
        const std::vector<double> got = slice(o.dw), want = slice(ref.dw);
        EXPECT_LE(rel_err(got, want), tol) << c.name << " " << tname << " parameter " << i;
        // ADD: the old value plus this gradient, rounded once (at most one 16-bit rounding of the larger term away)
        const std::vector<double> old = slice(in.dw0), add = slice(oa.dw);
        double worst = 0;
        for (size_t k = 0; k < len; ++k) {
          const double e = old[k] + got[k];
          worst = std::max(worst, std::fabs(add[k] - e) / (std::max(std::fabs(old[k]), std::fabs(got[k])) + 1e-30));
        }
        EXPECT_LE(worst, 2 * ulp) << c.name << " " << tname << " parameter " << i << " ADD";
      }
      openrnn_destroy_rnn_desc(d);
    }
  }
  openrnn_destroy_handle(h);
}

// GRU's bias gradients above 512 rows in float32 against the CPU backend, parameter by parameter, SET and ADD: a
// wrong offset or length in b_hh would show in b_hh alone, which a whole-vector error hides. Linear-before-reset
// (float32 sums dGh's 3H columns; 16-bit types copy b_ih's r and z parts and sum only the n columns, which
// CudaStandardWgrad16 checks against the float64 run, whose sums are full) and reset-before (b_hh is a copy).
TEST(CudaStandardWgrad, GruBiasesAbove512RowsMatchCpuPerParameter) {
  CUDATEST_SKIP_IF_NO_GPU();
  openrnn_handle_t h = nullptr, cpu = nullptr;
  ASSERT_EQ(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  ASSERT_EQ(openrnn_create_handle(&cpu, OPENRNN_DEVICE_CPU, 0), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  for (const openrnn_cell cell : {OPENRNN_CELL_GRU, OPENRNN_CELL_GRU_RESET_BEFORE}) {
    // K = T * B = 30 * 24 = 720 rows; two layers and directions; ragged, batch-major
    Problem p = make(cell, 12, 40, 2, true, 30, 24);
    p.lengths.resize(24);
    for (int b = 0; b < 24; ++b) p.lengths[static_cast<size_t>(b)] = 1 + (b * 7) % 30;
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    p.cfg.data_type = OPENRNN_DATA_FLOAT;
    const Inputs in = random_inputs(p, 29);
    openrnn_rnn_desc_t d = nullptr;
    ASSERT_EQ(openrnn_create_rnn_desc(&d, &p.cfg), OPENRNN_STATUS_SUCCESS);
    int n = 0;
    openrnn_get_weight_param_count(d, &n);
    ASSERT_GT(n, 0);
    for (const openrnn_wgrad_mode mode : {OPENRNN_WGRAD_SET, OPENRNN_WGRAD_ADD}) {
      const Outputs c = run_api(cpu, p, in, OPENRNN_FWD_TRAINING, true, mode);
      const Outputs g = run_api(h, p, in, OPENRNN_FWD_TRAINING, true, mode);
      for (int i = 0; i < n; ++i) {
        openrnn_weight_param wp;
        openrnn_get_weight_param(d, i, &wp);
        EXPECT_LE(rel_err(param_slice(g.dw, wp), param_slice(c.dw, wp)), 1e-5)
            << (cell == OPENRNN_CELL_GRU ? "GRU" : "GRU reset-before") << (mode == OPENRNN_WGRAD_SET ? " SET" : " ADD")
            << " " << wp.name;
      }
    }
    openrnn_destroy_rnn_desc(d);
  }
  openrnn_destroy_handle(cpu);
  openrnn_destroy_handle(h);
}

// TF32 (OPENRNN_MATH_ALLOW_TF32) where float32's rules run cuBLAS, on TF32 tensor cores: the table's cases are small
// enough that float32 runs the CUDA-core fused steps there, whose arithmetic TF32 does not change. B = 160 at H = 512
// is past every float32 fused rule (standard_fused.cuh), so the input projection, the forward and backward steps and
// the weight gradients are all TF32 GEMMs; GRU at B = 32 H = 1024 runs the wide fused forward and the cuBLAS backward.
// Weights at PyTorch's scale (uniform in +-1/sqrt(H)). Bounds (docs/numerics.md): forward 3e-3 (DESIGN.md); gradients
// 3e-3, and 5e-2 for ReLU, whose derivative jumps at 0: a pre-activation that TF32 moves across 0 switches its whole
// gradient path, so the gradient's error grows as the square root of the forward's (session 72, run 5: 1.5e-2 for
// ReLU against 1.05e-4 to 4.15e-4 for the other cells). Each error is printed, so a run shows the margin.
constexpr double kTf32GradTol = 3e-3, kTf32ReluGradTol = 5e-2;
TEST(CudaStandardTf32, CublasPathsWithinTf32Bounds) {
  CUDATEST_SKIP_IF_NO_GPU();
  openrnn_handle_t h = nullptr;
  ASSERT_EQ(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  struct C {
    std::string name;
    Problem pr;
  };
  std::vector<C> cases;
  const std::pair<openrnn_cell, const char*> cells[] = {{OPENRNN_CELL_LSTM, "lstm"},
                                                        {OPENRNN_CELL_GRU, "gru"},
                                                        {OPENRNN_CELL_GRU_RESET_BEFORE, "gru_reset_before"},
                                                        {OPENRNN_CELL_RNN_TANH, "rnn_tanh"},
                                                        {OPENRNN_CELL_RNN_RELU, "rnn_relu"}};
  for (const auto& c : cells)
    cases.push_back({std::string(c.second) + "_H512_B160", make(c.first, 128, 512, 1, false, 12, 160)});
  {
    Problem p = make(OPENRNN_CELL_LSTM, 64, 512, 2, true, 8, 160);
    p.lengths.resize(160);
    for (int b = 0; b < 160; ++b) p.lengths[static_cast<size_t>(b)] = 1 + (b * 5) % 8;
    p.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    cases.push_back({"lstm_H512_B160_2layer_bidir_ragged_batchmajor", p});
  }
  {
    Problem p = make(OPENRNN_CELL_LSTM, 96, 512, 1, false, 10, 160);
    p.cfg.proj_size = 128;
    cases.push_back({"lstm_H512_P128_B160", p});
  }
  cases.push_back({"gru_H1024_B32", make(OPENRNN_CELL_GRU, 64, 1024, 1, false, 10, 32)});
  for (const C& c : cases) {
    const Inputs in = random_inputs(c.pr, 43, 1.0 / std::sqrt(static_cast<double>(c.pr.cfg.hidden_size)));
    const Outputs ref = run_api(h, c.pr, in, OPENRNN_FWD_TRAINING, true);
    Problem pr = c.pr;
    pr.cfg.data_type = OPENRNN_DATA_FLOAT;
    pr.cfg.math_mode = OPENRNN_MATH_ALLOW_TF32;
    const Outputs o = run_api(h, pr, in, OPENRNN_FWD_TRAINING, true);
    const double ey = seq_err(pr, o.y, ref.y), eh = rel_err(o.hy, ref.hy), ex = seq_err(pr, o.dx, ref.dx),
                 edh = rel_err(o.dhx, ref.dhx), ew = rel_err(o.dw, ref.dw);
    std::printf("[ tf32     ] %-48s y %.2e hy %.2e dx %.2e dhx %.2e dw %.2e\n", c.name.c_str(), ey, eh, ex, edh, ew);
    const double gtol = c.pr.cfg.cell == OPENRNN_CELL_RNN_RELU ? kTf32ReluGradTol : kTf32GradTol;
    EXPECT_LE(ey, 3e-3) << c.name << " y";
    EXPECT_LE(eh, 3e-3) << c.name << " hy";
    EXPECT_LE(ex, gtol) << c.name << " dx";
    EXPECT_LE(edh, gtol) << c.name << " dhx";
    EXPECT_LE(ew, gtol) << c.name << " dw";
    if (c.pr.lstm()) {
      EXPECT_LE(rel_err(o.cy, ref.cy), 3e-3) << c.name << " cy";
      EXPECT_LE(rel_err(o.dcx, ref.dcx), gtol) << c.name << " dcx";
    }
  }
  openrnn_destroy_handle(h);
}

}  // namespace
}  // namespace cudatest

#endif  // OPENRNN_TEST_CUDA
