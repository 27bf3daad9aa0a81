// Bitwise reproducibility: two runs of forward + backward_data + backward_weights on fresh buffers give identical
// bits (no order-dependent atomics; fixed reduction orders; cuBLAS with atomics off), for sizes that use several
// blocks per kernel, both directions in parallel streams, the layer wavefront of one-direction stacks (three layers on
// three streams), every storage type, and the large problems whose cuBLAS handles get 32 MiB of workspace.
#include "test_cuda_util.h"  // first: defines OPENRNN_TEST_CUDA from the build's switch

#ifdef OPENRNN_TEST_CUDA

#include "test_cuda_util.h"

namespace cudatest {
namespace {

struct DetCase {
  openrnn_cell cell;
  openrnn_data_type dt;
  const char* name;
  bool bidir = true;
  int L = 2;
  int I = 96, H = 160, B = 48, T = 12;
};

class CudaDeterminism : public ::testing::TestWithParam<DetCase> {};

TEST_P(CudaDeterminism, TwoRunsAreBitwiseIdentical) {
  CUDATEST_SKIP_IF_NO_GPU();
  Problem pr;
  const DetCase& c = GetParam();
  pr.cfg = base_config(c.cell, c.I, c.H, c.L, c.bidir, c.dt);
  pr.cfg.dropout = 0.1;
  pr.T = c.T;
  pr.B = c.B;
  pr.lengths.resize(static_cast<size_t>(pr.B));
  for (int b = 0; b < pr.B; ++b) pr.lengths[static_cast<size_t>(b)] = 1 + (b * 7) % pr.T;
  const Inputs in = random_inputs(pr, 8, 0.1);
  openrnn_handle_t h = nullptr;
  CUDATEST_OK(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0));
  const Outputs a = run_api(h, pr, in, OPENRNN_FWD_TRAINING, true);
  const Outputs b = run_api(h, pr, in, OPENRNN_FWD_TRAINING, true);
  openrnn_destroy_handle(h);
  EXPECT_TRUE(bitwise_equal(a.y, b.y));
  EXPECT_TRUE(bitwise_equal(a.hy, b.hy));
  EXPECT_TRUE(bitwise_equal(a.cy, b.cy));
  EXPECT_TRUE(bitwise_equal(a.dx, b.dx));
  EXPECT_TRUE(bitwise_equal(a.dhx, b.dhx));
  EXPECT_TRUE(bitwise_equal(a.dcx, b.dcx));
  EXPECT_TRUE(bitwise_equal(a.dw, b.dw));
  // Not trivially equal: the outputs are finite and not all zero.
  double s = 0;
  for (double v : a.dw) s += std::fabs(v);
  EXPECT_TRUE(std::isfinite(s) && s > 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaDeterminism,
                         ::testing::Values(DetCase{OPENRNN_CELL_LSTM, OPENRNN_DATA_FLOAT, "lstm_float32"},
                                           DetCase{OPENRNN_CELL_GRU, OPENRNN_DATA_FLOAT, "gru_float32"},
                                           DetCase{OPENRNN_CELL_LSTM, OPENRNN_DATA_HALF, "lstm_float16"},
                                           DetCase{OPENRNN_CELL_GRU_RESET_BEFORE, OPENRNN_DATA_BFLOAT16,
                                                   "gru_reset_before_bfloat16"},
                                           DetCase{OPENRNN_CELL_LSTM, OPENRNN_DATA_FLOAT, "lstm_float32_3layer_wavefront",
                                                   false, 3},
                                           DetCase{OPENRNN_CELL_GRU, OPENRNN_DATA_FLOAT, "gru_float32_4layer_wavefront",
                                                   false, 4},
                                           // 32 MiB cuBLAS workspaces (B * H >= 65536, H > 1024: cuBLAS's split-K
                                           // kernels): the K-split forward, then the one-GEMM forward
                                           DetCase{OPENRNN_CELL_LSTM, OPENRNN_DATA_FLOAT, "lstm_float32_H1024_B64",
                                                   false, 1, 256, 1024, 64, 4},
                                           DetCase{OPENRNN_CELL_GRU, OPENRNN_DATA_FLOAT, "gru_float32_H2048_B64",
                                                   false, 1, 256, 2048, 64, 4},
                                           // the 16-bit cuBLAS step on cuBLASLt's 128 x 16 tile (std_step_lt_tile)
                                           DetCase{OPENRNN_CELL_LSTM, OPENRNN_DATA_HALF, "lstm_float16_H2048_B16",
                                                   false, 1, 64, 2048, 16, 6}),
                         [](const ::testing::TestParamInfo<DetCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace cudatest

#endif  // OPENRNN_TEST_CUDA
