// Bad input to the compute calls (forward, backward_data, backward_weights) and to the size queries that feed them,
// on every backend: each returns its specific status, the message names the argument, and every buffer -- outputs,
// workspace and reserve included -- is bitwise unchanged (a rejected call writes nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "openrnn/openrnn.h"

namespace ort {
namespace {

class BadCompute : public ::testing::TestWithParam<Backend> {
 protected:
  // An LSTM with projection (L = 2, D = 2, I = 3, H = 4, P = 2, float32, ragged B = 3, T = 4), and a GRU twin.
  void SetUp() override {
    std::string why;
    if (!backend_available(GetParam(), &why)) GTEST_SKIP() << why;
    ASSERT_EQ(openrnn_create_handle(&h, backend_device(GetParam()), 0), OPENRNN_STATUS_SUCCESS);
    openrnn_rnn_config c;
    openrnn_rnn_config_init(&c);
    c.input_size = 3;
    c.hidden_size = 4;
    c.proj_size = 2;
    c.num_layers = 2;
    c.bidirectional = 1;
    ASSERT_EQ(openrnn_create_rnn_desc(&lstm, &c), OPENRNN_STATUS_SUCCESS);
    c.cell = OPENRNN_CELL_GRU;
    c.proj_size = 0;
    ASSERT_EQ(openrnn_create_rnn_desc(&gru, &c), OPENRNN_STATUS_SUCCESS);
    const int32_t len[3] = {3, 1, 4};
    ASSERT_EQ(openrnn_create_seq_desc(&xd, OPENRNN_DATA_FLOAT, OPENRNN_LAYOUT_SEQ_MAJOR, 4, 3, 3, len, 0.0),
              OPENRNN_STATUS_SUCCESS);
    ASSERT_EQ(openrnn_create_seq_desc(&xd64, OPENRNN_DATA_DOUBLE, OPENRNN_LAYOUT_SEQ_MAJOR, 4, 3, 3, len, 0.0),
              OPENRNN_STATUS_SUCCESS);
    ASSERT_EQ(openrnn_create_seq_desc(&xd_wide, OPENRNN_DATA_FLOAT, OPENRNN_LAYOUT_SEQ_MAJOR, 4, 3, 5, len, 0.0),
              OPENRNN_STATUS_SUCCESS);
    ASSERT_EQ(openrnn_get_weight_space_size(h, lstm, &wbytes), OPENRNN_STATUS_SUCCESS);
    ASSERT_EQ(openrnn_get_weight_space_size(h, gru, &gru_wbytes), OPENRNN_STATUS_SUCCESS);
    ASSERT_EQ(openrnn_get_temp_space_sizes(h, lstm, OPENRNN_FWD_TRAINING, xd, &ws_need, &rs_need),
              OPENRNN_STATUS_SUCCESS);
    ASSERT_EQ(openrnn_get_temp_space_sizes(h, lstm, OPENRNN_FWD_INFERENCE, xd, &ws_inf, nullptr),
              OPENRNN_STATUS_SUCCESS);
    ASSERT_EQ(openrnn_get_temp_space_sizes(h, gru, OPENRNN_FWD_TRAINING, xd, &gru_ws, &gru_rs),
              OPENRNN_STATUS_SUCCESS);
    const size_t f = 4, TB = 12, LDB = 2 * 2 * 3;
    auto mk = [&](size_t bytes, unsigned char fillv) {
      bufs.push_back(std::make_unique<DeviceBuffer>(GetParam(), bytes));
      std::vector<unsigned char> pat(bytes);
      for (size_t i = 0; i < bytes; ++i) pat[i] = static_cast<unsigned char>(fillv + i * 7);
      if (bytes) bufs.back()->upload(pat);
      return bufs.back()->data();
    };
    x = mk(TB * 3 * f, 0x11);
    y = mk(TB * 2 * 2 * f, 0x22);
    hx = mk(LDB * 2 * f, 0x33);
    hy = mk(LDB * 2 * f, 0x44);
    cx = mk(LDB * 4 * f, 0x55);
    cy = mk(LDB * 4 * f, 0x66);
    w = mk(std::max(wbytes, gru_wbytes), 0x77);
    ws = mk(std::max({ws_need, ws_inf, gru_ws}) + 64, 0x88);
    rs = mk(std::max(rs_need, gru_rs) + 64, 0x99);
    dy = mk(TB * 2 * 4 * f, 0xaa);
    dx = mk(TB * 3 * f, 0xbb);
    dhx = mk(LDB * 4 * f, 0xcc);
    dw = mk(std::max(wbytes, gru_wbytes), 0xdd);
    arena = mk(std::max<size_t>(4096, rs_need + ws_need + ws_inf + wbytes + 1024), 0xee);
    snapshot();
  }
  void TearDown() override {
    if (::testing::Test::IsSkipped()) return;
    expect_unchanged();
    openrnn_destroy_seq_desc(xd);
    openrnn_destroy_seq_desc(xd64);
    openrnn_destroy_seq_desc(xd_wide);
    openrnn_destroy_rnn_desc(lstm);
    openrnn_destroy_rnn_desc(gru);
    openrnn_destroy_handle(h);
  }
  void snapshot() {
    snap.clear();
    for (auto& b : bufs) snap.push_back(b->download());
  }
  void expect_unchanged() {
    backend_sync(GetParam());
    for (size_t i = 0; i < bufs.size(); ++i) {
      EXPECT_TRUE(bufs[i]->download() == snap[i]) << "buffer " << i << " was modified by a rejected call";
      std::string what;
      EXPECT_TRUE(bufs[i]->guards_intact(&what)) << "buffer " << i << ": " << what;
    }
  }

  openrnn_status fwd(openrnn_fwd_mode m) {
    return openrnn_forward(h, lstm, m, xd, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need);
  }

  openrnn_handle_t h = nullptr;
  openrnn_rnn_desc_t lstm = nullptr, gru = nullptr;
  openrnn_seq_desc_t xd = nullptr, xd64 = nullptr, xd_wide = nullptr;
  // ws_need / rs_need: training sizes (forward TRAINING and both backward calls); ws_inf: inference workspace.
  size_t wbytes = 0, gru_wbytes = 0, ws_need = 0, rs_need = 0, ws_inf = 0, gru_ws = 0, gru_rs = 0;
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<std::vector<unsigned char>> snap;
  void *x, *y, *hx, *hy, *cx, *cy, *w, *ws, *rs, *dy, *dx, *dhx, *dw, *arena;
};

#define EXPECT_STATUS(call, want, arg)                                                                        \
  do {                                                                                                         \
    const openrnn_status s_ = (call);                                                                          \
    EXPECT_EQ(s_, want) << #call << ": " << openrnn_status_string(s_) << ": " << openrnn_last_error();        \
    EXPECT_NE(std::string(openrnn_last_error()).find(arg), std::string::npos)                                  \
        << #call << ": the message \"" << openrnn_last_error() << "\" does not name " << (arg);               \
  } while (0)

const auto TR = OPENRNN_FWD_TRAINING, INF = OPENRNN_FWD_INFERENCE;
const auto BP = OPENRNN_STATUS_BAD_PARAM;

TEST_P(BadCompute, Forward) {
  EXPECT_STATUS(openrnn_forward(nullptr, lstm, TR, xd, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need),
                BP, "handle");
  EXPECT_STATUS(openrnn_forward(h, nullptr, TR, xd, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need), BP,
                "rnn");
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, nullptr, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need),
                BP, "x_desc");
  EXPECT_STATUS(openrnn_forward(h, lstm, static_cast<openrnn_fwd_mode>(2), xd, x, y, hx, hy, cx, cy, w, wbytes, ws,
                                ws_need, rs, rs_need),
                BP, "mode");
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, nullptr, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need),
                BP, "x");
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, nullptr, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need),
                BP, "y");
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, y, hx, hy, cx, cy, nullptr, wbytes, ws, ws_need, rs, rs_need),
                BP, "weights");
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd64, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need), BP,
                "data type");
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd_wide, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need),
                BP, "vector_size");
  for (size_t wb : {wbytes - 4, wbytes + 4, size_t{0}}) {
    EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, y, hx, hy, cx, cy, w, wb, ws, ws_need, rs, rs_need),
                  OPENRNN_STATUS_WEIGHTS_SIZE_MISMATCH, "weight_bytes");
  }
  if (ws_need > 0) {
    EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need - 1, rs, rs_need),
                  OPENRNN_STATUS_WORKSPACE_TOO_SMALL, "workspace");
    EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, y, hx, hy, cx, cy, w, wbytes, nullptr, ws_need, rs, rs_need),
                  BP, "workspace");
  } else {
    std::printf("note: %s needs no workspace for this problem; WORKSPACE_TOO_SMALL not exercised\n",
                backend_tag(GetParam()));
  }
  ASSERT_GT(rs_need, 0u);
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need - 1),
                OPENRNN_STATUS_RESERVE_TOO_SMALL, "reserve");
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, nullptr, rs_need),
                BP, "reserve");
  // Cell states exist for LSTM only.
  EXPECT_STATUS(openrnn_forward(h, gru, INF, xd, x, y, hx, hy, cx, nullptr, w, gru_wbytes, ws, gru_ws, nullptr, 0),
                BP, "cx");
  EXPECT_STATUS(openrnn_forward(h, gru, INF, xd, x, y, hx, hy, nullptr, cy, w, gru_wbytes, ws, gru_ws, nullptr, 0),
                BP, "cy");
}

TEST_P(BadCompute, ForwardOverlaps) {
  // Pointers carved out of one arena so that they overlap by construction.
  char* a = static_cast<char*>(arena);
  const size_t ysz = 12 * 4 * 4;
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, a, hx, a + ysz - 8, cx, cy, w, wbytes, ws, ws_need, rs, rs_need),
                BP, "overlaps");  // hy overlaps y
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, a + 64, a, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need), BP,
                "overlaps");  // y overlaps x
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, y, hx, a, cx, a + 16, w, wbytes, ws, ws_need, rs, rs_need), BP,
                "overlaps");  // cy overlaps hy
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, a, hx, hy, cx, cy, a + 4, wbytes, ws, ws_need, rs, rs_need), BP,
                "overlaps");  // y overlaps the weights
  EXPECT_STATUS(openrnn_forward(h, lstm, INF, xd, x, y, a, a + 4, cx, cy, w, wbytes, ws, ws_inf, nullptr, 0), BP,
                "overlaps");  // hy overlaps hx
}

TEST_P(BadCompute, ForwardOverlapsWithTempBuffers) {
  char* a = static_cast<char*>(arena);
  // Reserve overlapping y; workspace overlapping the weights (when a workspace is needed).
  EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, a, hx, hy, cx, cy, w, wbytes, ws, ws_need, a + 32,
                                std::max<size_t>(rs_need, 1)),
                BP, "overlaps");
  if (ws_need > 0) {
    EXPECT_STATUS(openrnn_forward(h, lstm, TR, xd, x, y, hx, hy, cx, cy, a, wbytes, a + 8, ws_need, rs, rs_need), BP,
                  "overlaps");
  }
}

TEST_P(BadCompute, UnsupportedAlgorithmOnCpu) {
  if (GetParam() != Backend::CPU) GTEST_SKIP() << "PERSISTENT is a GPU algorithm; refused on the CPU only";
  openrnn_rnn_config c;
  ASSERT_EQ(openrnn_get_rnn_config(lstm, &c), OPENRNN_STATUS_SUCCESS);
  c.algo = OPENRNN_ALGO_PERSISTENT;
  openrnn_rnn_desc_t p = nullptr;
  ASSERT_EQ(openrnn_create_rnn_desc(&p, &c), OPENRNN_STATUS_SUCCESS);
  size_t a = 0, b = 0;
  const openrnn_status s = openrnn_get_temp_space_sizes(h, p, TR, xd, &a, &b);
  EXPECT_EQ(s, OPENRNN_STATUS_NOT_SUPPORTED) << openrnn_last_error();
  const openrnn_status f =
      openrnn_forward(h, p, TR, xd, x, y, hx, hy, cx, cy, w, wbytes, ws, ws_need, rs, rs_need);
  EXPECT_EQ(f, OPENRNN_STATUS_NOT_SUPPORTED) << openrnn_last_error();
  EXPECT_GT(std::string(openrnn_last_error()).size(), 0u);
  EXPECT_EQ(openrnn_backward_data(h, p, xd, dy, dx, nullptr, nullptr, nullptr, nullptr, w, wbytes, ws, ws_need, rs,
                                  rs_need),
            OPENRNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(openrnn_backward_weights(h, p, OPENRNN_WGRAD_SET, xd, x, dw, wbytes, ws, ws_need, rs, rs_need),
            OPENRNN_STATUS_NOT_SUPPORTED);
  openrnn_destroy_rnn_desc(p);
}

TEST_P(BadCompute, BackwardData) {
  auto bd = [&](openrnn_handle_t hh, openrnn_rnn_desc_t r, openrnn_seq_desc_t xs, const void* dy_, void* dx_,
                const void* dhy_, void* dhx_, const void* dcy_, void* dcx_, const void* w_, size_t wb, void* ws_,
                size_t wsb, void* rs_, size_t rsb) {
    return openrnn_backward_data(hh, r, xs, dy_, dx_, dhy_, dhx_, dcy_, dcx_, w_, wb, ws_, wsb, rs_, rsb);
  };
  EXPECT_STATUS(bd(nullptr, lstm, xd, dy, dx, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need, rs, rs_need), BP,
                "handle");
  EXPECT_STATUS(bd(h, nullptr, xd, dy, dx, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need, rs, rs_need), BP, "rnn");
  EXPECT_STATUS(bd(h, lstm, nullptr, dy, dx, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need, rs, rs_need), BP,
                "x_desc");
  EXPECT_STATUS(bd(h, lstm, xd, nullptr, dx, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need, rs, rs_need), BP, "dy");
  EXPECT_STATUS(bd(h, lstm, xd, dy, nullptr, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need, rs, rs_need), BP, "dx");
  EXPECT_STATUS(bd(h, lstm, xd, dy, dx, hy, dhx, cy, nullptr, nullptr, wbytes, ws, ws_need, rs, rs_need), BP,
                "weights");
  EXPECT_STATUS(bd(h, lstm, xd64, dy, dx, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need, rs, rs_need), BP,
                "data type");
  EXPECT_STATUS(bd(h, lstm, xd, dy, dx, hy, dhx, cy, nullptr, w, wbytes + 4, ws, ws_need, rs, rs_need),
                OPENRNN_STATUS_WEIGHTS_SIZE_MISMATCH, "weight_bytes");
  if (ws_need > 0) {
    EXPECT_STATUS(bd(h, lstm, xd, dy, dx, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need - 1, rs, rs_need),
                  OPENRNN_STATUS_WORKSPACE_TOO_SMALL, "workspace");
  }
  EXPECT_STATUS(bd(h, lstm, xd, dy, dx, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need, rs, rs_need - 1),
                OPENRNN_STATUS_RESERVE_TOO_SMALL, "reserve");
  EXPECT_STATUS(bd(h, lstm, xd, dy, dx, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need, nullptr, rs_need), BP,
                "reserve");
  EXPECT_STATUS(bd(h, gru, xd, dy, dx, nullptr, nullptr, cy, nullptr, w, gru_wbytes, ws, gru_ws, rs, gru_rs), BP,
                "dcy");
  EXPECT_STATUS(bd(h, gru, xd, dy, dx, nullptr, nullptr, nullptr, cx, w, gru_wbytes, ws, gru_ws, rs, gru_rs), BP,
                "dcx");
  char* a = static_cast<char*>(arena);
  EXPECT_STATUS(bd(h, lstm, xd, a, a + 16, hy, dhx, cy, nullptr, w, wbytes, ws, ws_need, rs, rs_need), BP,
                "overlaps");  // dx overlaps dy
  EXPECT_STATUS(bd(h, lstm, xd, dy, dx, hy, dhx, cy, dhx, w, wbytes, ws, ws_need, rs, rs_need), BP,
                "overlaps");  // dcx is dhx
  EXPECT_STATUS(bd(h, lstm, xd, dy, dx, hy, a, cy, nullptr, w, wbytes, ws, ws_need, a + 8,
                   std::max<size_t>(rs_need, 1)),
                BP, "overlaps");  // dhx overlaps the reserve
}

TEST_P(BadCompute, BackwardWeights) {
  const auto SET = OPENRNN_WGRAD_SET;
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, static_cast<openrnn_wgrad_mode>(2), xd, x, dw, wbytes, ws, ws_need,
                                         rs, rs_need),
                BP, "wgrad_mode");
  EXPECT_STATUS(openrnn_backward_weights(nullptr, lstm, SET, xd, x, dw, wbytes, ws, ws_need, rs, rs_need), BP,
                "handle");
  EXPECT_STATUS(openrnn_backward_weights(h, nullptr, SET, xd, x, dw, wbytes, ws, ws_need, rs, rs_need), BP, "rnn");
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, nullptr, x, dw, wbytes, ws, ws_need, rs, rs_need), BP,
                "x_desc");
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, xd, nullptr, dw, wbytes, ws, ws_need, rs, rs_need), BP, "x");
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, xd, x, nullptr, wbytes, ws, ws_need, rs, rs_need), BP,
                "dweights");
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, xd_wide, x, dw, wbytes, ws, ws_need, rs, rs_need), BP,
                "vector_size");
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, xd, x, dw, wbytes - 4, ws, ws_need, rs, rs_need),
                OPENRNN_STATUS_WEIGHTS_SIZE_MISMATCH, "weight_bytes");
  if (ws_need > 0) {
    EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, xd, x, dw, wbytes, ws, ws_need - 1, rs, rs_need),
                  OPENRNN_STATUS_WORKSPACE_TOO_SMALL, "workspace");
  }
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, xd, x, dw, wbytes, ws, ws_need, rs, rs_need - 1),
                OPENRNN_STATUS_RESERVE_TOO_SMALL, "reserve");
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, xd, x, dw, wbytes, ws, ws_need, nullptr, rs_need), BP,
                "reserve");
  char* a = static_cast<char*>(arena);
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, xd, a, a + 4, wbytes, ws, ws_need, rs, rs_need), BP,
                "overlaps");  // dweights overlaps x
  EXPECT_STATUS(openrnn_backward_weights(h, lstm, SET, xd, x, a, wbytes, ws, ws_need, a + 8,
                                         std::max<size_t>(rs_need, 1)),
                BP, "overlaps");  // dweights overlaps the reserve
}

std::string backend_name(const ::testing::TestParamInfo<Backend>& i) { return backend_tag(i.param); }
INSTANTIATE_TEST_SUITE_P(Backends, BadCompute, ::testing::ValuesIn(compiled_backends()), backend_name);

}  // namespace
}  // namespace ort
