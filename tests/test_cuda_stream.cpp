// Streams: the handle works on the stream it is given, calls return without waiting for the GPU (no host
// synchronisation), all of a call's work (aux streams included) is ordered after what the stream already holds, and
// the results equal those of the default stream.
#include "test_cuda_util.h"  // first: defines OPENRNN_TEST_CUDA from the build's switch

#ifdef OPENRNN_TEST_CUDA

#include <atomic>
#include <chrono>
#include <thread>

#include "test_cuda_util.h"

namespace cudatest {
namespace {

TEST(CudaStream, SetGetStream) {
  CUDATEST_SKIP_IF_NO_GPU();
  openrnn_handle_t h = nullptr;
  CUDATEST_OK(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0));
  void* s0 = reinterpret_cast<void*>(0x1);
  CUDATEST_OK(openrnn_get_stream(h, &s0));
  EXPECT_EQ(s0, nullptr);
  cudaStream_t s = nullptr;
  CUDATEST_CUDA(cudaStreamCreate(&s));
  CUDATEST_OK(openrnn_set_stream(h, s));
  void* got = nullptr;
  CUDATEST_OK(openrnn_get_stream(h, &got));
  EXPECT_EQ(got, static_cast<void*>(s));
  EXPECT_EQ(openrnn_set_num_threads(h, 2), OPENRNN_STATUS_BAD_PARAM);
  openrnn_destroy_handle(h);
  cudaStreamDestroy(s);
}

void CUDART_CB block_until(void* flag) {
  auto* f = static_cast<std::atomic<bool>*>(flag);
  const auto t0 = std::chrono::steady_clock::now();
  while (!f->load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(CudaStream, CallsAreOrderedOnTheUserStreamWithoutHostSync) {
  CUDATEST_SKIP_IF_NO_GPU();
  Problem pr;
  pr.cfg = base_config(OPENRNN_CELL_GRU, 16, 32, 2, true, OPENRNN_DATA_FLOAT);
  pr.T = 7;
  pr.B = 5;
  pr.lengths = {7, 3, 5, 1, 6};
  const Inputs in = random_inputs(pr, 9);
  openrnn_handle_t h = nullptr;
  CUDATEST_OK(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0));
  const Outputs ref = run_api(h, pr, in, OPENRNN_FWD_INFERENCE, false);  // default stream

  cudaStream_t s = nullptr, side = nullptr;
  CUDATEST_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDATEST_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CUDATEST_OK(openrnn_set_stream(h, s));
  openrnn_rnn_desc_t rnn = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  CUDATEST_OK(openrnn_create_rnn_desc(&rnn, &pr.cfg));
  CUDATEST_OK(openrnn_create_seq_desc(&xd, OPENRNN_DATA_FLOAT, pr.layout, pr.T, pr.B, pr.cfg.input_size,
                                      pr.lengths.data(), pr.fill));
  size_t wsb = 0;
  CUDATEST_OK(openrnn_get_temp_space_sizes(h, rnn, OPENRNN_FWD_INFERENCE, xd, &wsb, nullptr));
  DevBuf x = upload(in.x, OPENRNN_DATA_FLOAT), w = upload(in.w, OPENRNN_DATA_FLOAT),
         hx = upload(in.hx, OPENRNN_DATA_FLOAT);
  DevBuf y(pr.ny() * 4), hy(pr.nh() * 4), ws(wsb);
  y.poison();
  hy.poison();
  CUDATEST_CUDA(cudaDeviceSynchronize());

  std::atomic<bool> release{false};
  CUDATEST_CUDA(cudaLaunchHostFunc(s, block_until, &release));
  const auto t0 = std::chrono::steady_clock::now();
  const openrnn_status st = openrnn_forward(h, rnn, OPENRNN_FWD_INFERENCE, xd, x.p, y.p, hx.p, hy.p, nullptr, nullptr,
                                            w.p, in.w.size() * 4, ws.p, wsb, nullptr, 0);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(st, OPENRNN_STATUS_SUCCESS) << openrnn_last_error();
  EXPECT_LT(secs, 5.0) << "openrnn_forward waited for the stream";
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  // y is still untouched: nothing of the call ran ahead of the blocked stream (aux streams included).
  std::vector<unsigned char> early(y.bytes);
  ASSERT_EQ(cudaMemcpyAsync(early.data(), y.p, y.bytes, cudaMemcpyDeviceToHost, side), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
  const auto early_y = decode(early, OPENRNN_DATA_FLOAT);
  size_t nan = 0;
  for (double v : early_y) nan += std::isnan(v) ? 1 : 0;
  EXPECT_EQ(nan, early_y.size());
  release = true;
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(bitwise_equal(download(y, OPENRNN_DATA_FLOAT), ref.y));
  EXPECT_TRUE(bitwise_equal(download(hy, OPENRNN_DATA_FLOAT), ref.hy));

  openrnn_destroy_seq_desc(xd);
  openrnn_destroy_rnn_desc(rnn);
  openrnn_destroy_handle(h);
  cudaStreamDestroy(s);
  cudaStreamDestroy(side);
}

TEST(CudaStream, QueryAlgo) {
  CUDATEST_SKIP_IF_NO_GPU();
  openrnn_handle_t h = nullptr;
  CUDATEST_OK(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0));
  openrnn_rnn_config c = base_config(OPENRNN_CELL_LSTM, 8, 8, 1, false, OPENRNN_DATA_FLOAT);
  c.algo = OPENRNN_ALGO_AUTO;
  openrnn_rnn_desc_t rnn = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  CUDATEST_OK(openrnn_create_rnn_desc(&rnn, &c));
  CUDATEST_OK(openrnn_create_seq_desc(&xd, OPENRNN_DATA_FLOAT, OPENRNN_LAYOUT_SEQ_MAJOR, 4, 2, 8, nullptr, 0.0));
  int sup = 0;
  openrnn_algo chosen = OPENRNN_ALGO_AUTO;
  char reason[256];
  CUDATEST_OK(openrnn_query_algo(h, rnn, OPENRNN_FWD_INFERENCE, xd, OPENRNN_ALGO_STANDARD, &sup, &chosen, reason, 256));
  EXPECT_EQ(sup, 1);
  EXPECT_EQ(chosen, OPENRNN_ALGO_STANDARD);
  CUDATEST_OK(openrnn_query_algo(h, rnn, OPENRNN_FWD_INFERENCE, xd, OPENRNN_ALGO_AUTO, &sup, &chosen, reason, 256));
  EXPECT_EQ(sup, 1);
  EXPECT_TRUE(chosen == OPENRNN_ALGO_STANDARD || chosen == OPENRNN_ALGO_PERSISTENT);
  CUDATEST_OK(openrnn_query_algo(h, rnn, OPENRNN_FWD_INFERENCE, xd, OPENRNN_ALGO_PERSISTENT, &sup, &chosen, reason, 256));
  if (!sup) {
    EXPECT_GT(std::strlen(reason), 0u);
  }
  openrnn_destroy_seq_desc(xd);
  openrnn_destroy_rnn_desc(rnn);
  openrnn_destroy_handle(h);
}

// One shape for AUTO's rule (persistent_preferred) and what AUTO should choose where PERSISTENT supports it.
struct AutoShape {
  openrnn_cell cell;
  int H, B;
  bool bidir;
  openrnn_data_type dt;
  bool persistent;
  int layers = 1;
  int proj = 0;  // LSTM proj_size
};

// Checks AUTO's choice for one shape and mode: `persistent` where PERSISTENT supports the problem, STANDARD where it
// does not. Counts the shapes PERSISTENT supported in *checked.
void expect_auto_choice(openrnn_handle_t h, const AutoShape& sh, openrnn_fwd_mode mode, int* checked) {
  openrnn_rnn_config c = base_config(sh.cell, 16, sh.H, sh.layers, sh.bidir, sh.dt);
  c.algo = OPENRNN_ALGO_AUTO;
  c.proj_size = sh.proj;
  openrnn_rnn_desc_t rnn = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  CUDATEST_OK(openrnn_create_rnn_desc(&rnn, &c));
  CUDATEST_OK(openrnn_create_seq_desc(&xd, sh.dt, OPENRNN_LAYOUT_SEQ_MAJOR, 5, sh.B, 16, nullptr, 0.0));
  char reason[256];
  int psup = 0, sup = 0;
  openrnn_algo chosen = OPENRNN_ALGO_AUTO;
  EXPECT_EQ(openrnn_query_algo(h, rnn, mode, xd, OPENRNN_ALGO_PERSISTENT, &psup, &chosen, reason, 256),
            OPENRNN_STATUS_SUCCESS)
      << openrnn_last_error();
  EXPECT_EQ(openrnn_query_algo(h, rnn, mode, xd, OPENRNN_ALGO_AUTO, &sup, &chosen, reason, 256), OPENRNN_STATUS_SUCCESS)
      << openrnn_last_error();
  EXPECT_EQ(sup, 1);
  if (psup) ++*checked;
  EXPECT_EQ(chosen, psup && sh.persistent ? OPENRNN_ALGO_PERSISTENT : OPENRNN_ALGO_STANDARD)
      << "cell " << int(sh.cell) << " H " << sh.H << " B " << sh.B << " bidir " << sh.bidir << " layers " << sh.layers
      << " mode " << int(mode)
      << " PERSISTENT supports it: " << psup;
  openrnn_destroy_seq_desc(xd);
  openrnn_destroy_rnn_desc(rnn);
}

// AUTO's choice for every shape in both modes, on a handle of its own; PERSISTENT must support at least one shape.
template <size_t N>
void expect_auto_choices(const AutoShape (&shapes)[N]) {
  openrnn_handle_t h = nullptr;
  CUDATEST_OK(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0));
  int checked = 0;
  for (const AutoShape& sh : shapes)
    for (openrnn_fwd_mode mode : {OPENRNN_FWD_INFERENCE, OPENRNN_FWD_TRAINING})
      expect_auto_choice(h, sh, mode, &checked);
  EXPECT_GT(checked, 0) << "PERSISTENT took none of the shapes";
  openrnn_destroy_handle(h);
}

// The same for shapes checked in one mode each.
struct AutoModeShape {
  AutoShape shape;
  openrnn_fwd_mode mode;
};
template <size_t N>
void expect_auto_choices(const AutoModeShape (&shapes)[N]) {
  openrnn_handle_t h = nullptr;
  CUDATEST_OK(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0));
  int checked = 0;
  for (const AutoModeShape& c : shapes) expect_auto_choice(h, c.shape, c.mode, &checked);
  EXPECT_GT(checked, 0) << "PERSISTENT took none of the shapes";
  openrnn_destroy_handle(h);
}

// AUTO's rule for RNN cells (persistent_preferred): PERSISTENT at the timed sizes (H = 256 / 512 up to B = 64,
// H = 1024 up to B = 64 in float32 and B = 24 in 16 bits, either direction; 16 bits with any number of layers at
// H = 256 up to B = 192 with one direction and 128 with two, at H = 512 up to B = 56 / 60 (session 61)), STANDARD
// past them, both wherever PERSISTENT takes the problem at all. Padded sizes follow AutoPaddedRule.
TEST(CudaStream, AutoRnnRule) {
  CUDATEST_SKIP_IF_NO_GPU();
  const AutoShape shapes[] = {
      {OPENRNN_CELL_RNN_TANH, 256, 1, false, OPENRNN_DATA_FLOAT, true},
      {OPENRNN_CELL_RNN_RELU, 256, 64, false, OPENRNN_DATA_FLOAT, true},
      {OPENRNN_CELL_RNN_TANH, 256, 65, false, OPENRNN_DATA_FLOAT, false},
      {OPENRNN_CELL_RNN_TANH, 512, 64, false, OPENRNN_DATA_FLOAT, true},
      {OPENRNN_CELL_RNN_RELU, 256, 4, true, OPENRNN_DATA_FLOAT, true},
      {OPENRNN_CELL_RNN_TANH, 1024, 24, false, OPENRNN_DATA_BFLOAT16, true},
      {OPENRNN_CELL_RNN_RELU, 1024, 25, false, OPENRNN_DATA_HALF, false},
      {OPENRNN_CELL_RNN_TANH, 1024, 64, true, OPENRNN_DATA_FLOAT, true},
      {OPENRNN_CELL_RNN_TANH, 1024, 65, false, OPENRNN_DATA_FLOAT, false},
      {OPENRNN_CELL_RNN_RELU, 300, 4, false, OPENRNN_DATA_FLOAT, true},  // padded (AutoPaddedRule, session 62)
      // 16 bits at H = 256: PERSISTENT up to B = 192 with one direction (session 60; more layers since session 61),
      // up to B = 128 with two. At H = 512 up to B = 56 / 60 (one / two directions).
      {OPENRNN_CELL_RNN_TANH, 256, 192, false, OPENRNN_DATA_HALF, true},
      {OPENRNN_CELL_RNN_RELU, 256, 193, false, OPENRNN_DATA_BFLOAT16, false},
      {OPENRNN_CELL_RNN_TANH, 256, 192, false, OPENRNN_DATA_BFLOAT16, true, 2},
      {OPENRNN_CELL_RNN_TANH, 256, 193, false, OPENRNN_DATA_HALF, false, 2},
      {OPENRNN_CELL_RNN_TANH, 256, 128, true, OPENRNN_DATA_HALF, true},
      {OPENRNN_CELL_RNN_RELU, 256, 129, true, OPENRNN_DATA_HALF, false},
      {OPENRNN_CELL_RNN_TANH, 256, 192, false, OPENRNN_DATA_HALF, true, 3},
      {OPENRNN_CELL_RNN_TANH, 256, 193, false, OPENRNN_DATA_HALF, false, 3},
      {OPENRNN_CELL_RNN_TANH, 512, 56, false, OPENRNN_DATA_HALF, true},
      {OPENRNN_CELL_RNN_RELU, 512, 57, false, OPENRNN_DATA_BFLOAT16, false},
      {OPENRNN_CELL_RNN_TANH, 512, 56, false, OPENRNN_DATA_HALF, true, 2},
      {OPENRNN_CELL_RNN_TANH, 512, 60, true, OPENRNN_DATA_BFLOAT16, true},
      {OPENRNN_CELL_RNN_TANH, 512, 61, true, OPENRNN_DATA_HALF, false},
  };
  expect_auto_choices(shapes);
}

// AUTO at padded sizes (padded_preferred, sessions 61-62): LSTM / GRU / RNN cells at H = 32-255 and 257-1023, up to
// the batch timed per cell, dtype, size class and mode; two layers or two directions at H = 128-255; GRU reset-before
// and the LSTM projection at H = 64-255 and 384-511. STANDARD past those batches, below H = 32, with more layers or
// both two layers and two directions.
TEST(CudaStream, AutoPaddedRule) {
  CUDATEST_SKIP_IF_NO_GPU();
  constexpr auto lstm = OPENRNN_CELL_LSTM, gru = OPENRNN_CELL_GRU, rtanh = OPENRNN_CELL_RNN_TANH,
                 rrelu = OPENRNN_CELL_RNN_RELU, grb = OPENRNN_CELL_GRU_RESET_BEFORE;
  constexpr auto f16 = OPENRNN_DATA_HALF, bf16 = OPENRNN_DATA_BFLOAT16, f32 = OPENRNN_DATA_FLOAT;
  const AutoShape shapes[] = {
      // H = 64-255: 16-bit LSTM / GRU to B = 128 at H = 64 and 256 from H = 96; float32 to 96 / 128 / 256 (H = 96,
      // 128-159, 160-255; H = 64: below); 16-bit RNN to 16 / 64 (H = 64-95, 96-255); float32 RNN to 128 / 256
      // (H = 96-159, 160-255).
      {lstm, 64, 128, false, f16, true},
      {lstm, 64, 129, false, f16, false},
      {gru, 96, 256, false, bf16, true},
      {gru, 96, 257, false, f16, false},
      {lstm, 64, 16, false, f32, true},
      {lstm, 64, 97, false, f32, false},
      {gru, 64, 96, false, f32, true},
      {lstm, 96, 96, false, f32, true},
      {gru, 96, 97, false, f32, false},
      {gru, 128, 128, false, f32, true},
      {lstm, 128, 129, false, f32, false},
      {lstm, 160, 256, false, f32, true},
      {rtanh, 64, 16, false, f16, true},
      {rtanh, 64, 17, false, f16, false},
      {rrelu, 100, 64, false, bf16, true},
      {rrelu, 100, 65, false, f16, false},
      {rtanh, 100, 128, false, f32, true},
      {rtanh, 100, 129, false, f32, false},
      {rtanh, 200, 256, false, f32, true},
      {rtanh, 200, 257, false, f32, false},
      // H = 32-63.
      {lstm, 32, 128, false, f16, true},
      {gru, 48, 129, false, bf16, false},
      {rtanh, 32, 16, false, f16, true},
      {rrelu, 48, 64, false, f32, true},
      {rrelu, 48, 181, false, f32, false},
      // H = 257-383 and 384-511.
      {lstm, 300, 128, false, f16, true},
      {gru, 300, 129, false, f16, false},
      {lstm, 320, 64, false, f32, true},
      {lstm, 320, 65, false, f32, false},
      {rtanh, 300, 16, false, bf16, true},
      {rtanh, 300, 17, false, f16, false},
      {lstm, 384, 128, false, f16, true},
      {lstm, 384, 129, false, f16, false},
      {gru, 400, 64, false, f32, true},
      {gru, 400, 65, false, f32, false},
      {rtanh, 384, 16, false, f16, true},
      {rtanh, 384, 17, false, f16, false},
      {rrelu, 500, 128, false, f32, true},
      // H = 513-767 and 768-1023.
      {gru, 600, 64, false, f16, true},
      {lstm, 600, 65, false, bf16, false},
      {rtanh, 600, 16, false, f16, true},
      {rtanh, 600, 17, false, f16, false},
      {rtanh, 700, 16, false, f16, true},
      {lstm, 700, 16, false, f32, true},
      {lstm, 700, 17, false, f32, false},
      {lstm, 768, 64, false, bf16, true},
      {lstm, 768, 65, false, f16, false},
      {gru, 800, 16, false, f32, true},
      {gru, 800, 17, false, f32, false},
      {rtanh, 1000, 16, false, f16, true},
      // Two directions or two layers at H = 128-255.
      {lstm, 128, 128, true, f16, true},
      {lstm, 128, 129, true, f16, false},
      {gru, 192, 128, false, bf16, true, 2},
      {gru, 192, 129, false, f16, false, 2},
      {rtanh, 128, 16, true, f16, true},
      {rtanh, 128, 17, true, f16, false},
      {rtanh, 192, 64, true, f16, true},
      {rtanh, 192, 128, false, f16, true, 2},
      {rtanh, 128, 64, false, f16, true, 2},
      {rtanh, 128, 65, false, f16, false, 2},
      {lstm, 128, 16, true, f32, true},
      {gru, 128, 17, false, f32, false, 2},
      {rrelu, 192, 64, true, f32, true},
      {rrelu, 192, 65, false, f32, false, 2},
      // GRU reset-before and the LSTM projection.
      {grb, 128, 128, false, f16, true},
      {grb, 128, 129, false, f32, false},
      {grb, 384, 64, false, f32, true},
      {grb, 384, 65, false, f16, false},
      {lstm, 128, 128, false, f16, true, 1, 64},
      {lstm, 128, 129, false, f32, false, 1, 64},
      {lstm, 384, 64, false, f32, true, 1, 128},
      {lstm, 384, 65, false, f16, false, 1, 128},
      // Not timed: STANDARD.
      {lstm, 16, 1, false, f16, false},
      {gru, 96, 1, true, f16, false},
      {gru, 128, 16, false, f16, false, 3},
      {lstm, 128, 16, true, f16, false, 2},
      {grb, 128, 16, true, f16, false},
      {lstm, 128, 16, false, f16, false, 2, 64},
  };
  expect_auto_choices(shapes);
  // Where the choice depends on the mode (float32): LSTM at H = 32-95 up to B = 16 in inference and 64 / 96 in
  // training; RNN at H = 64-95 up to 96 / 128, at H = 32-63 up to 64 / 180 (16 bits: 16 / 96); 16-bit LSTM / GRU at
  // H = 641-767 up to 1 / 16.
  constexpr openrnn_fwd_mode inf = OPENRNN_FWD_INFERENCE, train = OPENRNN_FWD_TRAINING;
  const AutoModeShape by_mode[] = {
      {{lstm, 32, 16, false, f32, true}, inf},      {{lstm, 32, 17, false, f32, false}, inf},
      {{lstm, 32, 64, false, f32, true}, train},    {{lstm, 32, 65, false, f32, false}, train},
      {{lstm, 64, 17, false, f32, false}, inf},     {{lstm, 64, 96, false, f32, true}, train},
      {{rtanh, 64, 96, false, f32, true}, inf},     {{rtanh, 64, 97, false, f32, false}, inf},
      {{rtanh, 64, 128, false, f32, true}, train},  {{rtanh, 64, 129, false, f32, false}, train},
      {{rtanh, 32, 17, false, f16, false}, inf},    {{rtanh, 32, 96, false, f16, true}, train},
      {{rtanh, 48, 97, false, f16, false}, train},
      {{rtanh, 48, 65, false, f32, false}, inf},    {{rtanh, 48, 180, false, f32, true}, train},
      {{rtanh, 32, 181, false, f32, false}, train},
      {{lstm, 700, 1, false, f16, true}, inf},      {{lstm, 700, 2, false, f16, false}, inf},
      {{gru, 700, 16, false, bf16, true}, train},   {{gru, 700, 17, false, f16, false}, train},
  };
  expect_auto_choices(by_mode);
}

// AUTO where PERSISTENT's 16-bit kernels go from one launch to two (persistent_preferred, session 47): at H = 512
// STANDARD above B = 140 (v9's tiles of 20 in one wave up to there); at H = 1024 inference goes to STANDARD above
// B = 32, except one direction up to B = 64 (v10's tiles of 32: LSTM session 55, GRU session 56; training stays
// PERSISTENT's), and LSTM's two directions up to B = 64 (the wgmma tile of 32, session 57). At H = 256 above B = 256
// (sessions 51-52), one layer: training PERSISTENT up to B = 512; inference up to B = 480 for GRU (v9's tiles of 32
// in one wave) and B = 512 for LSTM.
TEST(CudaStream, AutoSixteenBitLaunchEdges) {
  CUDATEST_SKIP_IF_NO_GPU();
  constexpr openrnn_fwd_mode inf = OPENRNN_FWD_INFERENCE, train = OPENRNN_FWD_TRAINING;
  const AutoModeShape cases[] = {
      {{OPENRNN_CELL_GRU, 512, 113, false, OPENRNN_DATA_HALF, true}, inf},
      {{OPENRNN_CELL_GRU, 512, 140, false, OPENRNN_DATA_BFLOAT16, true}, inf},
      {{OPENRNN_CELL_GRU, 512, 141, false, OPENRNN_DATA_HALF, false}, inf},
      {{OPENRNN_CELL_LSTM, 512, 140, false, OPENRNN_DATA_HALF, true}, train},
      {{OPENRNN_CELL_LSTM, 512, 141, false, OPENRNN_DATA_BFLOAT16, false}, train},
      {{OPENRNN_CELL_GRU, 1024, 32, false, OPENRNN_DATA_HALF, true}, inf},
      {{OPENRNN_CELL_GRU, 1024, 33, false, OPENRNN_DATA_HALF, true}, inf},
      {{OPENRNN_CELL_GRU, 1024, 64, false, OPENRNN_DATA_BFLOAT16, true}, inf},
      {{OPENRNN_CELL_GRU, 1024, 64, false, OPENRNN_DATA_HALF, true}, inf},
      {{OPENRNN_CELL_GRU, 1024, 65, false, OPENRNN_DATA_HALF, false}, inf},
      {{OPENRNN_CELL_GRU, 1024, 48, true, OPENRNN_DATA_BFLOAT16, false}, inf},
      {{OPENRNN_CELL_LSTM, 1024, 33, false, OPENRNN_DATA_HALF, true}, inf},
      {{OPENRNN_CELL_LSTM, 1024, 48, false, OPENRNN_DATA_BFLOAT16, true}, inf},
      {{OPENRNN_CELL_LSTM, 1024, 64, false, OPENRNN_DATA_BFLOAT16, true}, inf},
      {{OPENRNN_CELL_LSTM, 1024, 64, false, OPENRNN_DATA_HALF, true}, inf},
      {{OPENRNN_CELL_LSTM, 1024, 48, true, OPENRNN_DATA_HALF, true}, inf},
      {{OPENRNN_CELL_LSTM, 1024, 65, true, OPENRNN_DATA_BFLOAT16, false}, inf},
      {{OPENRNN_CELL_GRU, 1024, 48, false, OPENRNN_DATA_HALF, true}, train},
      {{OPENRNN_CELL_GRU, 256, 300, false, OPENRNN_DATA_HALF, true}, inf},
      {{OPENRNN_CELL_GRU, 256, 480, false, OPENRNN_DATA_BFLOAT16, true}, inf},
      {{OPENRNN_CELL_GRU, 256, 481, false, OPENRNN_DATA_HALF, false}, inf},
      {{OPENRNN_CELL_LSTM, 256, 512, false, OPENRNN_DATA_BFLOAT16, true}, inf},
      {{OPENRNN_CELL_LSTM, 256, 513, false, OPENRNN_DATA_HALF, false}, inf},
      {{OPENRNN_CELL_GRU, 256, 512, false, OPENRNN_DATA_HALF, true}, train},
      {{OPENRNN_CELL_LSTM, 256, 513, false, OPENRNN_DATA_BFLOAT16, false}, train},
  };
  expect_auto_choices(cases);
}

}  // namespace
}  // namespace cudatest

#endif  // OPENRNN_TEST_CUDA
