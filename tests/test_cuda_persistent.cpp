// PERSISTENT at the hidden sizes its kernels are compiled for (the shared case table has H <= 255, so it only reaches
// the H = 256 configurations): forward training + backward_data + backward_weights forced to PERSISTENT, checked
// against STANDARD in float64 on the GPU (the oracle) with DESIGN.md's fixed bounds per storage type, and two runs
// bitwise equal. The cases pick each backward kernel configuration (persistent_bwd_kernels.cuh: one-column and wide
// chunks, shared-memory weight slices at H = 512 float32 and RNN H = 1024, a padded H = 300, the grid kernel at
// H = 1000 / 1024, the reset-before GRU's two-exchange steps, v6's two-column tiles, the reduce-scatter cluster
// kernel with each tile size) and each forward kernel (v4, v6, v7, v9, v10) with ragged lengths, both directions, two
// layers with dropout, and the batch-major layout; and the LSTM projection (its forward on the float32 kernels,
// persistent_algo.cu).
#include "test_cuda_util.h"  // first: defines OPENRNN_TEST_CUDA from the build's switch

#ifdef OPENRNN_TEST_CUDA

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "test_cuda_util.h"

namespace cudatest {
namespace {

struct PCase {
  std::string name;
  Problem pr;
  // Only some kernels take the problem (e.g. both directions at H = 1024 in 16 bits: v10 alone): an environment
  // whose forward PERSISTENT refuses is skipped, but at least one must run.
  bool refusable = false;
};

// Whether PERSISTENT takes the problem (training) in the current environment (the developer switches).
bool persistent_takes(openrnn_handle_t h, const Problem& pr, openrnn_data_type dt, std::string* why) {
  openrnn_rnn_desc_t rnn = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  openrnn_rnn_config cfg = pr.cfg;
  cfg.data_type = dt;
  int supported = 0;
  char reason[512] = {0};
  if (openrnn_create_rnn_desc(&rnn, &cfg) == OPENRNN_STATUS_SUCCESS &&
      openrnn_create_seq_desc(&xd, dt, pr.layout, pr.T, pr.B, cfg.input_size,
                              pr.lengths.empty() ? nullptr : pr.lengths.data(), pr.fill) == OPENRNN_STATUS_SUCCESS)
    openrnn_query_algo(h, rnn, OPENRNN_FWD_TRAINING, xd, OPENRNN_ALGO_PERSISTENT, &supported, nullptr, reason,
                       sizeof(reason));
  if (xd) openrnn_destroy_seq_desc(xd);
  if (rnn) openrnn_destroy_rnn_desc(rnn);
  *why = reason;
  return supported != 0;
}

PCase make(const char* name, openrnn_cell cell, int I, int H, int L, bool bidir, int T, int B, bool ragged) {
  PCase c;
  c.name = name;
  c.pr.cfg = base_config(cell, I, H, L, bidir);
  c.pr.T = T;
  c.pr.B = B;
  if (ragged) {
    c.pr.lengths.resize(static_cast<size_t>(B));
    for (int b = 0; b < B; ++b) c.pr.lengths[static_cast<size_t>(b)] = 1 + (b * 5 + 3) % T;
    c.pr.lengths[0] = T;
  }
  return c;
}

std::vector<PCase> cases() {
  std::vector<PCase> v;
  v.push_back(make("lstm_H256_B3_bidir_ragged", OPENRNN_CELL_LSTM, 24, 256, 1, true, 7, 3, true));
  v.push_back(make("lstm_H256_B9_ragged", OPENRNN_CELL_LSTM, 16, 256, 1, false, 6, 9, true));
  v.push_back(make("lstm_H512_B5_bidir", OPENRNN_CELL_LSTM, 20, 512, 1, true, 5, 5, false));
  v.push_back(make("lstm_H300_B3_ragged", OPENRNN_CELL_LSTM, 12, 300, 1, false, 6, 3, true));
  v.push_back(make("gru_H256_B6_bidir_ragged", OPENRNN_CELL_GRU, 24, 256, 1, true, 6, 6, true));
  v.push_back(make("gru_H512_B3", OPENRNN_CELL_GRU, 8, 512, 1, false, 5, 3, false));
  // More columns than clusters per direction: v4 runs the forward (v6 takes one column per cluster).
  v.push_back(make("gru_H256_B22_bidir_ragged", OPENRNN_CELL_GRU, 12, 256, 1, true, 5, 22, true));
  v.push_back(make("lstm_H512_B13_bidir_ragged", OPENRNN_CELL_LSTM, 12, 512, 1, true, 4, 13, true));
  // The tensor-core v7 (16-bit LSTM / GRU): H = 1024 (two 32-row groups of 128 blocks), more sequences than one
  // 128-row group at H = 512, both directions at a hidden size that is not a multiple of the 16-unit block.
  v.push_back(make("lstm_H1024_B20_ragged", OPENRNN_CELL_LSTM, 16, 1024, 1, false, 4, 20, true));
  v.push_back(make("gru_H512_B70_ragged", OPENRNN_CELL_GRU, 8, 512, 1, false, 4, 70, true));
  v.push_back(make("lstm_H264_B36_bidir", OPENRNN_CELL_LSTM, 8, 264, 1, true, 4, 36, false));
  v.push_back(make("rnn_tanh_H1024_B5_ragged", OPENRNN_CELL_RNN_TANH, 16, 1024, 1, false, 5, 5, true));
  // The grid-mode backward (persistent_bwd_grid.cuh, LSTM / GRU H = 1024, B <= 16): a few sequences, and the full
  // 16 at a padded hidden size (1000 runs on the compiled 1024) with ragged lengths.
  v.push_back(make("lstm_H1024_B3_ragged", OPENRNN_CELL_LSTM, 12, 1024, 1, false, 6, 3, true));
  v.push_back(make("gru_H1000_B16_ragged", OPENRNN_CELL_GRU, 8, 1000, 1, false, 5, 16, true));
  // The tensor-core v10 at H = 1024 (16-bit LSTM / GRU, B <= 16 per group): a full LSTM tile of 16, GRU over two
  // groups (B = 30: tiles of 15) and both directions of each cell (one group of 64 CTAs each).
  v.push_back(make("lstm_H1024_B16_ragged", OPENRNN_CELL_LSTM, 8, 1024, 1, false, 5, 16, true));
  v.push_back(make("gru_H1024_B30_ragged", OPENRNN_CELL_GRU, 8, 1024, 1, false, 4, 30, true));
  // More sequences than v10's groups take at once at H = 1024 (session 24): three launches in float32 (16 + 16 + 8),
  // two in 16 bits (32 + 8), forward and backward (float32).
  v.push_back(make("gru_H1000_B40_ragged", OPENRNN_CELL_GRU, 8, 1000, 1, false, 4, 40, true));
  // ... and at Hr == H, where 16 bits exchange swizzled dense rows (one bulk copy per CTA; session 25): two launches
  // in 16 bits (two groups of 16, then one of 2), three in float32 (16, 16, 2).
  v.push_back(make("lstm_H1024_B34_ragged", OPENRNN_CELL_LSTM, 8, 1024, 1, false, 4, 34, true));
  // 16-bit LSTM's tile of 32 (session 55): one launch of two full tiles at a padded hidden size (a bulk copy per
  // state row), and both directions with 17-32 sequences each (one group per direction, one launch).
  v.push_back(make("lstm_H1000_B64_ragged", OPENRNN_CELL_LSTM, 8, 1000, 1, false, 4, 64, true));
  v.push_back(make("lstm_H1024_B24_bidir_ragged", OPENRNN_CELL_LSTM, 8, 1024, 1, true, 5, 24, true));
  v.back().refusable = true;
  // GRU's tile of 32, whose partial sums hold 16 sequences at a time: two full tiles at Hr == H (swizzled rows).
  v.push_back(make("gru_H1024_B64_ragged", OPENRNN_CELL_GRU, 8, 1024, 1, false, 4, 64, true));
  v.push_back(make("gru_H1024_B5_bidir_ragged", OPENRNN_CELL_GRU, 8, 1024, 1, true, 5, 5, true));
  v.back().refusable = true;
  v.push_back(make("lstm_H1024_B4_bidir", OPENRNN_CELL_LSTM, 8, 1024, 1, true, 4, 4, false));
  v.back().refusable = true;
  // v10's float32 FFMA product (session 15; 128 CTAs of 8 units, tiles of 1, 4, 8, 16): a tile of one, and GRU in a
  // tile of 8 with ragged lengths (the float32 rows of the cases above take tiles of 4 and 16, H = 1000 included).
  v.push_back(make("lstm_H1024_B1", OPENRNN_CELL_LSTM, 8, 1024, 1, false, 6, 1, false));
  v.push_back(make("gru_H1024_B7_ragged", OPENRNN_CELL_GRU, 8, 1024, 1, false, 5, 7, true));
  // One sequence: v10's tagged-word exchange by default (OPENRNN_PERSIST_V10_LL), its counter and bulk copy with tiles
  // of 8 or 16 forced.
  v.push_back(make("gru_H1024_B1", OPENRNN_CELL_GRU, 8, 1024, 1, false, 6, 1, false));
  // ... and at H = 512 (64 CTAs per group, by default from B = 8): two groups of 20 (tiles of 32), and one group per
  // direction.
  v.push_back(make("lstm_H512_B40_ragged", OPENRNN_CELL_LSTM, 8, 512, 1, false, 4, 40, true));
  v.push_back(make("gru_H512_B11_bidir_ragged", OPENRNN_CELL_GRU, 8, 512, 1, true, 5, 11, true));
  // More sequences than one wave of the float32 reduce-scatter backward holds (clusters of 16, tiles of at most 8;
  // session 25): with OPENRNN_PERSIST_BWD_WAVES=1 it runs in two waves of tiles of 5-6.
  v.push_back(make("gru_H512_B72_ragged", OPENRNN_CELL_GRU, 8, 512, 1, false, 4, 72, true));
  // v10's float32 tile of one at H = 512 (tagged words; one group of 64 CTAs per sequence and direction; by default
  // where B * D <= 2): one sequence, two ragged sequences in two groups, one sequence in both directions.
  v.push_back(make("lstm_H512_B1", OPENRNN_CELL_LSTM, 8, 512, 1, false, 6, 1, false));
  v.push_back(make("gru_H512_B2_ragged", OPENRNN_CELL_GRU, 8, 512, 1, false, 6, 2, true));
  v.push_back(make("lstm_H512_B1_bidir", OPENRNN_CELL_LSTM, 8, 512, 1, true, 5, 1, false));
  // ... with its input projection inside the launch (session 38: producer CTAs beside the 64 consumers, chunks of 8
  // steps): several chunks, an input width that is not a multiple of 4, a padded H = 500 with I = 600 (the producers'
  // columns end inside a gate), and two layers (the second reads the first's output).
  v.push_back(make("lstm_H512_I37_B1_T21", OPENRNN_CELL_LSTM, 37, 512, 1, false, 21, 1, false));
  v.push_back(make("gru_H500_I600_B1_T19", OPENRNN_CELL_GRU, 600, 500, 1, false, 19, 1, false));
  v.push_back(make("lstm_H512_2layer_B1_T17", OPENRNN_CELL_LSTM, 24, 512, 2, false, 17, 1, false));
  // ... and in v6's one-column tile at H = 256 (session 39: producer CTAs beside the cluster of 8, one sequence in
  // one direction): several chunks with an odd input width, and a padded H = 200 with I = 300.
  v.push_back(make("lstm_H256_I37_B1_T21", OPENRNN_CELL_LSTM, 37, 256, 1, false, 21, 1, false));
  v.push_back(make("gru_H200_I300_B1_T19", OPENRNN_CELL_GRU, 300, 200, 1, false, 19, 1, false));
  // ... and its 16-unit tile of one (session 17; 32 CTAs per group; by default where B * D = 3-4): four ragged
  // sequences, two in both directions, and a padded H = 500 (the last CTA holds 4 real units of its 16).
  v.push_back(make("lstm_H512_B4_ragged", OPENRNN_CELL_LSTM, 8, 512, 1, false, 6, 4, true));
  v.push_back(make("gru_H512_B2_bidir_ragged", OPENRNN_CELL_GRU, 8, 512, 1, true, 5, 2, true));
  v.push_back(make("lstm_H500_B3", OPENRNN_CELL_LSTM, 12, 500, 1, false, 5, 3, false));
  // More sequences than clusters of one column (session 11): v6's two-column tiles (H = 512: 16-bit only).
  v.push_back(make("lstm_H256_B18_ragged", OPENRNN_CELL_LSTM, 8, 256, 1, false, 5, 18, true));
  v.push_back(make("gru_H512_B12_ragged", OPENRNN_CELL_GRU, 8, 512, 1, false, 4, 12, true));
  v.push_back(make("gru_H256_B40_ragged", OPENRNN_CELL_GRU, 8, 256, 1, false, 4, 40, true));  // 16-bit: clusters of 4
  // Four-column tiles (session 12, 16-bit): H = 256 in clusters of 8 (B = 49-60), GRU H = 512 in clusters of 16
  // (B = 15-28).
  v.push_back(make("lstm_H256_B50_ragged", OPENRNN_CELL_LSTM, 8, 256, 1, false, 4, 50, true));
  v.push_back(make("gru_H512_B22_ragged", OPENRNN_CELL_GRU, 8, 512, 1, false, 4, 22, true));
  v.push_back(make("rnn_relu_H512_B3_bidir_ragged", OPENRNN_CELL_RNN_RELU, 8, 512, 1, true, 6, 3, true));
  // An input wider than H into two layers of both directions (I = 600, then 2H = 1024; session 36, written for an
  // input-projection kernel that was not kept: dev/lab/xproj_small_gemm.diff).
  v.push_back(make("lstm_H512_I600_2layer_bidir", OPENRNN_CELL_LSTM, 600, 512, 2, true, 3, 2, false));
  // GRU reset-before (v4 cluster mode, two exchanges per step): one-column chunks with both directions, a padded
  // H = 300, and wide chunks with several chunks per cluster (B = 40 over the clusters of both directions at H = 512).
  v.push_back(make("grurb_H256_B3_bidir_ragged", OPENRNN_CELL_GRU_RESET_BEFORE, 12, 256, 1, true, 6, 3, true));
  v.push_back(make("grurb_H300_B5_ragged", OPENRNN_CELL_GRU_RESET_BEFORE, 8, 300, 1, false, 5, 5, true));
  v.push_back(make("grurb_H512_B40_bidir_ragged", OPENRNN_CELL_GRU_RESET_BEFORE, 8, 512, 1, true, 4, 40, true));
  {
    PCase c = make("lstm_H256_2layer_dropout_batchmajor", OPENRNN_CELL_LSTM, 10, 256, 2, true, 5, 4, true);
    c.pr.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    c.pr.cfg.dropout = 0.25;
    c.pr.cfg.dropout_seed = 77;
    c.pr.dropout_offset = 3;
    v.push_back(c);
  }
  // LSTM projection (the recurrence through W_eff = W_hh W_hr on the float32 kernels in every storage type, forward and
  // backward data): v6 tiles of one sequence and the cluster backward with both directions, v10 float32 at H = 512
  // (B >= 15; STANDARD's backward loop at B > 16) and at H = 1024 (a tile of one; the grid backward), and two layers
  // with dropout, a padded H and the batch-major layout.
  auto lstmp = [](const char* name, int I, int H, int P, int L, bool bidir, int T, int B, bool ragged) {
    PCase c = make(name, OPENRNN_CELL_LSTM, I, H, L, bidir, T, B, ragged);
    c.pr.cfg.proj_size = P;
    return c;
  };
  v.push_back(lstmp("lstmp_H256_P64_B3_bidir_ragged", 12, 256, 64, 1, true, 6, 3, true));
  v.push_back(lstmp("lstmp_H512_P200_B17_ragged", 8, 512, 200, 1, false, 5, 17, true));
  v.push_back(lstmp("lstmp_H1024_P256_B1", 8, 1024, 256, 1, false, 5, 1, false));
  {
    PCase c = lstmp("lstmp_H300_P37_2layer_dropout_batchmajor", 10, 300, 37, 2, true, 5, 4, true);
    c.pr.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
    c.pr.cfg.dropout = 0.25;
    c.pr.cfg.dropout_seed = 78;
    c.pr.dropout_offset = 5;
    v.push_back(c);
  }
  // float32 rows (T * B) that take the input projection's split over two lanes on a 132-SM GPU (session 44,
  // persistent_algo.cu xproj_split_for: whole waves of 2 * 132 cuBLAS 256 x 64 tiles on one lane, the rest on
  // another; K = I >= 512). LSTM H = 256: 4 tiles per 64-row block, 66 blocks a wave, M = 67 blocks (a rest of one
  // block). GRU H = 512: 6 tiles per block, 44 blocks a wave, M = 66 blocks (a rest of 22 x 6 = 132 tiles).
  v.push_back(make("lstm_H256_I512_B64_T67_ragged", OPENRNN_CELL_LSTM, 512, 256, 1, false, 67, 64, true));
  v.push_back(make("gru_H512_I512_B64_T66_ragged", OPENRNN_CELL_GRU, 512, 512, 1, false, 66, 64, true));
  {
    PCase c = make("lstm_H256_B2_clip_no_dhy", OPENRNN_CELL_LSTM, 6, 256, 1, false, 6, 2, false);
    c.pr.cfg.cell_clip = 0.4;
    c.pr.use_dhy = false;
    v.push_back(c);
  }
  return v;
}

class CudaPersistent : public ::testing::TestWithParam<PCase> {
 protected:
  void SetUp() override {
    CUDATEST_SKIP_IF_NO_GPU();
    ASSERT_EQ(openrnn_create_handle(&h_, OPENRNN_DEVICE_CUDA, 0), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  }
  void TearDown() override {
    if (h_) openrnn_destroy_handle(h_);
  }
  openrnn_handle_t h_ = nullptr;
};

TEST_P(CudaPersistent, TrainingMatchesFloat64AndIsBitwiseRepeatable) {
  const Problem pr64 = GetParam().pr;
  const Inputs in = random_inputs(pr64, 5, 1.0 / std::sqrt(static_cast<double>(pr64.cfg.hidden_size)));
  const Outputs ref = run_api(h_, pr64, in, OPENRNN_FWD_TRAINING, true);
  struct V {
    openrnn_data_type dt;
    double fwd_tol, bwd_tol;
    const char* name;
  };
  // DESIGN.md's bounds (docs/numerics.md): float32 1e-5; float16 / bfloat16 the fixed bounds of the STANDARD tests,
  // or, where STANDARD itself in the same storage type is further from float64 (ReLU at H = 512 in float16: units
  // whose pre-activation rounds across 0 flip the ReLU mask, measured 2.3e-2 on dw against the 2e-2 bound), 1.5x
  // STANDARD's error: PERSISTENT must be as accurate as STANDARD, not more.
  const V variants[] = {{OPENRNN_DATA_FLOAT, 1e-5, 1e-5, "float32"},
                        {OPENRNN_DATA_HALF, 1e-2, 2e-2, "float16"},
                        {OPENRNN_DATA_BFLOAT16, 5e-2, 1e-1, "bfloat16"}};
  for (const V& v : variants) {
    Problem pr = pr64;
    pr.cfg.data_type = v.dt;
    Outputs s;  // STANDARD in the same storage type (16-bit only)
    if (v.dt != OPENRNN_DATA_FLOAT) s = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, true);
    // es: STANDARD's error on the same output (unused for float32, where s is empty).
    auto bound = [&](double es, double tol) { return v.dt == OPENRNN_DATA_FLOAT ? tol : std::max(tol, 1.5 * es); };
    pr.cfg.algo = OPENRNN_ALGO_PERSISTENT;
    // The forward's kernel (developer switches read at every call; persistent_algo.cu): v6 (small-batch tiles) where
    // it takes the problem, v4 with OPENRNN_PERSIST_V6=0, and for 16-bit LSTM / GRU the tensor-core v7 forced, in
    // each of its block shapes (a shape whose blocks cannot all be co-resident falls back to v4/v6), and each v6
    // shape (clusters x columns; one that does not take the problem in one wave falls back to v4 / v7), and the
    // 16-bit tensor-core cluster kernel v9 by the default rule, forced, and forced to each tile size (a tile that does
    // not take the problem in one wave falls back to the others), and the same for the H = 1024 kernel v10 (off where
    // v4 / v7 must run; forced only at H > 512; float32 too, tiles of 1 by the default rule only).
    // The backward (LSTM / GRU): the session-18 kernels by default (H <= 512: the reduce-scatter cluster kernel, each
    // of its tile sizes also forced, a tile that does not take the problem in one wave falling back to the gather
    // kernel; H = 1024, 16-bit: the grid kernel's tensor-core share, also forced to 8 and to 16 units per CTA), and
    // off (the gather kernel, the FFMA share).
    struct Env {
      const char *v6, *v7, *shape, *v6shape, *v9, *v9nbs, *v10, *v10nbs, *brs = "", *brsnbs = "", *bgu = "";
    };
    const Env envs[] = {{"1", "0", "", "", "0", "", "0", ""},       {"0", "0", "", "", "0", "", "0", ""},
                        {"1", "1", "", "", "0", "", "", ""},        {"1", "1", "64x8", "", "0", "", "", ""},
                        {"1", "1", "128x8", "", "0", "", "", ""},   {"1", "1", "128x16", "", "0", "", "", ""},
                        {"1", "0", "", "8x2", "", "", "", ""},      {"1", "0", "", "16x2", "", "", "", ""},
                        {"1", "0", "", "4x2", "", "", "", ""},      {"1", "0", "", "8x4", "", "", "", ""},
                        {"1", "0", "", "16x4", "", "", "", ""},     {"1", "0", "", "", "", "", "", ""},
                        {"1", "0", "", "", "1", "4", "", ""},       {"1", "0", "", "", "1", "8", "", ""},
                        {"1", "0", "", "", "1", "16", "", ""},      {"1", "0", "", "", "", "", "1", ""},
                        {"1", "0", "", "", "", "", "1", "4"},       {"1", "0", "", "", "", "", "1", "8"},
                        {"1", "0", "", "", "", "", "1", "16"},      {"1", "0", "", "", "", "", "1", "32"},
                        {"1", "0", "", "", "", "", "", "", "0", ""},
                        {"1", "0", "", "", "", "", "", "", "", "8"},
                        {"1", "0", "", "", "", "", "", "", "", "16"},
                        {"1", "0", "", "", "", "", "", "", "", "", "8"},
                        {"1", "0", "", "", "", "", "", "", "", "", "16"}};
    int ran = 0;
    // The LSTM projection runs the float32 kernels in every storage type.
    const bool f32k = v.dt == OPENRNN_DATA_FLOAT || pr.cfg.proj_size > 0;
    for (const Env& env : envs) {
      if (f32k && (std::string(env.v7) == "1" || std::string(env.v9) == "1")) continue;
      // v10: H = 1024, and float32 at H = 512 (so H = 300 too, padded)
      if (std::string(env.v10) == "1" && pr.cfg.hidden_size <= (f32k ? 256 : 512)) continue;
      // The backward environments: LSTM / GRU only (their kernels); float32 at H = 1024 has one backward kernel.
      const bool rs_cell = pr.cfg.cell == OPENRNN_CELL_LSTM || pr.cfg.cell == OPENRNN_CELL_GRU;
      if ((std::string(env.brs) == "0" || *env.brsnbs) && (!rs_cell || (f32k && pr.cfg.hidden_size > 512))) continue;
      if (*env.brsnbs && pr.cfg.hidden_size > 512) continue;  // H = 1024: the grid kernel, one tile of B <= 16
      // The grid kernel's tensor-core share with 8 or 16 units per CTA: 16-bit LSTM / GRU at H > 512
      if (*env.bgu && (!rs_cell || f32k || pr.cfg.hidden_size <= 512)) continue;
      const std::string v6s = env.v6shape;
      if (f32k && (v6s == "16x2" || v6s == "4x2" || v6s == "8x4" || v6s == "16x4")) continue;  // 16-bit only
      SCOPED_TRACE(std::string("OPENRNN_PERSIST_V6=") + env.v6 + " V7=" + env.v7 + " V7_SHAPE=" + env.shape +
                   " V6_SHAPE=" + env.v6shape + " V9=" + env.v9 + " V9_NBS=" + env.v9nbs + " V10=" + env.v10 +
                   " V10_NBS=" + env.v10nbs + " BWD_RS=" + env.brs + " BWD_RS_NBS=" + env.brsnbs +
                   " BWD_GRID_U=" + env.bgu);
      setenv("OPENRNN_PERSIST_V6", env.v6, 1);
      setenv("OPENRNN_PERSIST_V7", env.v7, 1);
      setenv("OPENRNN_PERSIST_V7_SHAPE", env.shape, 1);
      setenv("OPENRNN_PERSIST_V6_SHAPE", env.v6shape, 1);
      setenv("OPENRNN_PERSIST_V9", env.v9, 1);
      setenv("OPENRNN_PERSIST_V9_NBS", env.v9nbs, 1);
      setenv("OPENRNN_PERSIST_V10", env.v10, 1);
      setenv("OPENRNN_PERSIST_V10_NBS", env.v10nbs, 1);
      setenv("OPENRNN_PERSIST_BWD_RS", env.brs, 1);
      setenv("OPENRNN_PERSIST_BWD_RS_NBS", env.brsnbs, 1);
      setenv("OPENRNN_PERSIST_BWD_GRID_U", env.bgu, 1);
      if (GetParam().refusable) {
        std::string why;
        if (!persistent_takes(h_, pr, v.dt, &why)) {
          std::printf("  %s: PERSISTENT refuses in this environment (%s)\n", v.name, why.c_str());
          continue;
        }
        ++ran;
      }
      const Outputs o = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, true);
      EXPECT_LE(seq_err(pr, o.y, ref.y), bound(seq_err(pr, s.y, ref.y), v.fwd_tol)) << v.name << " y";
      EXPECT_LE(rel_err(o.hy, ref.hy), bound(rel_err(s.hy, ref.hy), v.fwd_tol)) << v.name << " hy";
      EXPECT_LE(seq_err(pr, o.dx, ref.dx), bound(seq_err(pr, s.dx, ref.dx), v.bwd_tol)) << v.name << " dx";
      EXPECT_LE(rel_err(o.dhx, ref.dhx), bound(rel_err(s.dhx, ref.dhx), v.bwd_tol)) << v.name << " dhx";
      if (pr.lstm()) {
        EXPECT_LE(rel_err(o.dcx, ref.dcx), bound(rel_err(s.dcx, ref.dcx), v.bwd_tol)) << v.name << " dcx";
      }
      EXPECT_LE(rel_err(o.dw, ref.dw), bound(rel_err(s.dw, ref.dw), v.bwd_tol)) << v.name << " dw";
      if (v.dt != OPENRNN_DATA_FLOAT)
        std::printf("  %s dw vs float64: PERSISTENT %.3g, STANDARD %.3g\n", v.name, rel_err(o.dw, ref.dw),
                    rel_err(s.dw, ref.dw));
      const Outputs o2 = run_api(h_, pr, in, OPENRNN_FWD_TRAINING, true);
      // Inference runs the other instantiation of the same kernel (no reserve writes): the same numbers, bit for bit
      // (without dropout, which only training applies between layers).
      if (pr.cfg.dropout == 0.0) {
        const Outputs oi = run_api(h_, pr, in, OPENRNN_FWD_INFERENCE, false);
        EXPECT_TRUE(bitwise_equal(o.y, oi.y) && bitwise_equal(o.hy, oi.hy) && bitwise_equal(o.cy, oi.cy))
            << v.name << ": inference differs from training's forward";
      }
      EXPECT_TRUE(bitwise_equal(o.y, o2.y) && bitwise_equal(o.hy, o2.hy) && bitwise_equal(o.dx, o2.dx) &&
                  bitwise_equal(o.dhx, o2.dhx) && bitwise_equal(o.dw, o2.dw))
          << v.name << ": two runs differ";
    }
    if (GetParam().refusable && v.dt != OPENRNN_DATA_FLOAT) {
      EXPECT_GT(ran, 0) << v.name << ": no kernel took the case";
    }
    unsetenv("OPENRNN_PERSIST_V6");
    unsetenv("OPENRNN_PERSIST_V7");
    unsetenv("OPENRNN_PERSIST_V7_SHAPE");
    unsetenv("OPENRNN_PERSIST_V6_SHAPE");
    unsetenv("OPENRNN_PERSIST_V9");
    unsetenv("OPENRNN_PERSIST_V9_NBS");
    unsetenv("OPENRNN_PERSIST_V10");
    unsetenv("OPENRNN_PERSIST_V10_NBS");
    unsetenv("OPENRNN_PERSIST_BWD_RS");
    unsetenv("OPENRNN_PERSIST_BWD_RS_NBS");
    unsetenv("OPENRNN_PERSIST_BWD_GRID_U");
  }
}

// float32 at B = 1, one direction, H <= 256: v6's tile of one with the input projection's producers inside the launch
// (persistent_kernels_v6.cuh, xprod_plan). Their shared memory grows with the input width I, and the kernel's
// shared-memory limit is one per function for the whole process: calls with I = 72, then 9, then 72 again must all
// launch (before session 48, the third failed with cudaErrorInvalidValue: the second call had lowered the limit below
// the first call's cached plan). Each call is checked against float64, and the widths are ones no other test uses,
// so the plans are new in any order of the tests.
TEST(CudaPersistentPlans, InputWidthsThatShareOneKernel) {
  CUDATEST_SKIP_IF_NO_GPU();
  openrnn_handle_t h = nullptr;
  ASSERT_EQ(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0), OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  for (const openrnn_cell cell : {OPENRNN_CELL_LSTM, OPENRNN_CELL_GRU}) {
    for (const int I : {72, 9, 72}) {
      SCOPED_TRACE((cell == OPENRNN_CELL_LSTM ? std::string("LSTM") : std::string("GRU")) + " I=" + std::to_string(I));
      Problem pr = make("xprod", cell, I, 256, 1, false, 9, 1, false).pr;
      const Inputs in = random_inputs(pr, 11, 1.0 / 16);
      const Outputs ref = run_api(h, pr, in, OPENRNN_FWD_TRAINING, true);
      pr.cfg.data_type = OPENRNN_DATA_FLOAT;
      pr.cfg.algo = OPENRNN_ALGO_PERSISTENT;
      const Outputs o = run_api(h, pr, in, OPENRNN_FWD_TRAINING, true);
      const Outputs oi = run_api(h, pr, in, OPENRNN_FWD_INFERENCE, false);
      EXPECT_LE(seq_err(pr, o.y, ref.y), 1e-5);
      EXPECT_LE(rel_err(o.hy, ref.hy), 1e-5);
      EXPECT_LE(seq_err(pr, o.dx, ref.dx), 1e-5);
      EXPECT_LE(rel_err(o.dw, ref.dw), 1e-5);
      EXPECT_TRUE(bitwise_equal(o.y, oi.y) && bitwise_equal(o.hy, oi.hy)) << "inference differs from training's forward";
    }
  }
  openrnn_destroy_handle(h);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaPersistent, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PCase>& i) { return i.param.name; });

}  // namespace
}  // namespace cudatest

#endif  // OPENRNN_TEST_CUDA
