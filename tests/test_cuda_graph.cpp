// CUDA graphs: forward(TRAINING) + backward_data + backward_weights (and forward(INFERENCE)) captured from the
// handle's stream and replayed must give bitwise the results of the eager calls, replay after replay, and follow new
// input values written into the same buffers (a captured call allocates nothing and synchronises nothing). The
// one-direction stacks run STANDARD's layer wavefront (aux streams and events inside the capture). Since session 69
// the work that only overlaps (backward_weights' parts of one direction, PERSISTENT's split float32 input
// projection) runs on the aux lanes only under capture and on the handle's stream eagerly (Context::overlap_lanes):
// the one-direction cases and `persistent_f32_split` check that both give the same bits.
#include "test_cuda_util.h"  // first: defines OPENRNN_TEST_CUDA from the build's switch

#ifdef OPENRNN_TEST_CUDA

#include "test_cuda_util.h"

namespace cudatest {
namespace {

struct GraphBuffers {
  DevBuf x, y, hx, hy, cx, cy, w, dy, dx, dhy, dhx, dcy, dcx, dw, ws, rs;
};

struct GraphCase {
  openrnn_data_type dt;
  int L;
  bool bidir;
  const char* name;
  // Default: STANDARD, LSTM I = 24, H = 32, T = 9, B = 6, ragged lengths. A larger B runs full-length sequences.
  openrnn_algo algo = OPENRNN_ALGO_STANDARD;
  int I = 24, H = 32, T = 9, B = 6;
};

class CudaGraph : public ::testing::TestWithParam<GraphCase> {};

TEST_P(CudaGraph, CaptureReplayMatchesEager) {
  CUDATEST_SKIP_IF_NO_GPU();
  const GraphCase& gc = GetParam();
  Problem pr;
  pr.cfg = base_config(OPENRNN_CELL_LSTM, gc.I, gc.H, gc.L, gc.bidir, gc.dt);
  pr.cfg.algo = gc.algo;
  pr.cfg.dropout = 0.25;
  pr.cfg.dropout_seed = 77;
  pr.T = gc.T;
  pr.B = gc.B;
  if (gc.B == 6) pr.lengths = {9, 4, 7, 1, 9, 2};
  pr.layout = OPENRNN_LAYOUT_BATCH_MAJOR;
  const openrnn_data_type dt = pr.cfg.data_type;
  const Inputs in = random_inputs(pr, 3);

  openrnn_handle_t h = nullptr;
  CUDATEST_OK(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0));
  cudaStream_t s = nullptr;
  CUDATEST_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDATEST_OK(openrnn_set_stream(h, s));
  openrnn_rnn_desc_t rnn = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  CUDATEST_OK(openrnn_create_rnn_desc(&rnn, &pr.cfg));
  CUDATEST_OK(openrnn_create_seq_desc(&xd, dt, pr.layout, pr.T, pr.B, pr.cfg.input_size,
                                      pr.lengths.empty() ? nullptr : pr.lengths.data(), pr.fill));
  int supported = 0;
  openrnn_algo chosen = gc.algo;
  char why[256] = {0};
  CUDATEST_OK(openrnn_query_algo(h, rnn, OPENRNN_FWD_TRAINING, xd, gc.algo, &supported, &chosen, why, sizeof why));
  ASSERT_TRUE(supported) << why;
  size_t wsb = 0, rsb = 0;
  CUDATEST_OK(openrnn_get_temp_space_sizes(h, rnn, OPENRNN_FWD_TRAINING, xd, &wsb, &rsb));
  GraphBuffers b;
  b.x = upload(in.x, dt);
  b.hx = upload(in.hx, dt);
  b.cx = upload(in.cx, dt);
  b.w = upload(in.w, dt);
  b.dy = upload(in.dy, dt);
  b.dhy = upload(in.dhy, dt);
  b.dcy = upload(in.dcy, dt);
  const size_t es = dsize(dt);
  b.y = DevBuf(pr.ny() * es);
  b.hy = DevBuf(pr.nh() * es);
  b.cy = DevBuf(pr.nc() * es);
  b.dx = DevBuf(pr.nx() * es);
  b.dhx = DevBuf(pr.nh() * es);
  b.dcx = DevBuf(pr.nc() * es);
  b.dw = DevBuf(in.w.size() * es);
  b.ws = DevBuf(wsb);
  b.rs = DevBuf(rsb);
  const size_t wb = in.w.size() * es;
  auto poison = [&] {
    for (DevBuf* o : {&b.y, &b.hy, &b.cy, &b.dx, &b.dhx, &b.dcx, &b.dw, &b.ws, &b.rs}) o->poison();
    cudaDeviceSynchronize();
  };
  auto issue = [&]() {
    EXPECT_EQ(openrnn_forward(h, rnn, OPENRNN_FWD_TRAINING, xd, b.x.p, b.y.p, b.hx.p, b.hy.p, b.cx.p, b.cy.p, b.w.p,
                              wb, b.ws.p, wsb, b.rs.p, rsb),
              OPENRNN_STATUS_SUCCESS)
        << openrnn_last_error();
    EXPECT_EQ(openrnn_backward_data(h, rnn, xd, b.dy.p, b.dx.p, b.dhy.p, b.dhx.p, b.dcy.p, b.dcx.p, b.w.p, wb, b.ws.p,
                                    wsb, b.rs.p, rsb),
              OPENRNN_STATUS_SUCCESS)
        << openrnn_last_error();
    EXPECT_EQ(openrnn_backward_weights(h, rnn, OPENRNN_WGRAD_SET, xd, b.x.p, b.dw.p, wb, b.ws.p, wsb, b.rs.p, rsb),
              OPENRNN_STATUS_SUCCESS)
        << openrnn_last_error();
  };
  auto results = [&] {
    std::vector<std::vector<double>> r;
    for (DevBuf* o : {&b.y, &b.hy, &b.cy, &b.dx, &b.dhx, &b.dcx, &b.dw}) r.push_back(download(*o, dt));
    return r;
  };

  poison();
  issue();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const auto eager = results();

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  issue();
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int rep = 0; rep < 2; ++rep) {
    poison();
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const auto replay = results();
    for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(bitwise_equal(replay[i], eager[i])) << "output " << i << " replay " << rep;
  }

  // New input values written into the captured x buffer: the replay follows them and matches a fresh eager run.
  const Inputs in2 = random_inputs(pr, 5);
  const auto xb = encode(in2.x, dt);
  ASSERT_EQ(cudaMemcpy(b.x.p, xb.data(), xb.size(), cudaMemcpyHostToDevice), cudaSuccess);
  poison();
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const auto replay2 = results();
  poison();
  issue();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const auto eager2 = results();
  for (size_t i = 0; i < eager2.size(); ++i) EXPECT_TRUE(bitwise_equal(replay2[i], eager2[i])) << "new input, output " << i;
  EXPECT_FALSE(bitwise_equal(eager2[0], eager[0])) << "new input did not change y";

  // Inference forward captured alone.
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  size_t wsi = 0;
  CUDATEST_OK(openrnn_get_temp_space_sizes(h, rnn, OPENRNN_FWD_INFERENCE, xd, &wsi, nullptr));
  ASSERT_LE(wsi, wsb);
  poison();
  CUDATEST_OK(openrnn_forward(h, rnn, OPENRNN_FWD_INFERENCE, xd, b.x.p, b.y.p, nullptr, b.hy.p, nullptr, nullptr, b.w.p,
                              wb, b.ws.p, wsi, nullptr, 0));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const auto inf_eager = download(b.y, dt);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(openrnn_forward(h, rnn, OPENRNN_FWD_INFERENCE, xd, b.x.p, b.y.p, nullptr, b.hy.p, nullptr, nullptr, b.w.p,
                            wb, b.ws.p, wsi, nullptr, 0),
            OPENRNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  poison();
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(bitwise_equal(download(b.y, dt), inf_eager));

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  openrnn_destroy_seq_desc(xd);
  openrnn_destroy_rnn_desc(rnn);
  openrnn_destroy_handle(h);
  cudaStreamDestroy(s);
}

INSTANTIATE_TEST_SUITE_P(Types, CudaGraph,
                         ::testing::Values(GraphCase{OPENRNN_DATA_FLOAT, 2, true, "float32"},
                                           GraphCase{OPENRNN_DATA_HALF, 2, true, "float16"},
                                           GraphCase{OPENRNN_DATA_DOUBLE, 2, true, "float64"},
                                           GraphCase{OPENRNN_DATA_FLOAT, 4, false, "float32_4layer_wavefront"},
                                           GraphCase{OPENRNN_DATA_HALF, 3, false, "float16_3layer_wavefront"},
                                           GraphCase{OPENRNN_DATA_BFLOAT16, 1, false, "bfloat16_one_layer"},
                                           // T * B = 1600 rows, 4H = 4096, I = 512: PERSISTENT's float32 input
                                           // projection takes the split (rows 0-1023 on the 256 x 64 kernel, the
                                           // rest on cuBLAS's default; xproj_split_for on a 132-SM H100 / H200).
                                           GraphCase{OPENRNN_DATA_FLOAT, 1, false, "persistent_f32_split",
                                                     OPENRNN_ALGO_PERSISTENT, 512, 1024, 25, 64}),
                         [](const ::testing::TestParamInfo<GraphCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace cudatest

#endif  // OPENRNN_TEST_CUDA
