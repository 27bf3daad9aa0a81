// The header-only C++ layer (include/openrnn/openrnn.hpp): a forward and a backward through the RAII objects on
// every backend, compared with the float64 reference; errors become openrnn::Exception with the status and message.
#if __has_include("openrnn/openrnn.hpp")
#include "openrnn/openrnn.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "device_buffer.h"
#include "harness.h"
#include "numeric_types.h"
#include "reference.h"

namespace ort {
namespace {

class CppApi : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string why;
    if (!backend_available(GetParam(), &why)) GTEST_SKIP() << why;
  }
};

TEST_P(CppApi, ForwardAndBackwardThroughRaii) {
  // GRU, 2 layers, bidirectional, ragged batch-major, float64.
  const int I = 3, H = 5, T = 4, B = 3, L = 2, D = 2;
  const std::vector<int32_t> lens = {4, 2, 3};
  openrnn::Handle h(backend_device(GetParam()));
  EXPECT_EQ(h.device(), backend_device(GetParam()));
  openrnn::Handle moved = std::move(h);
  ASSERT_NE(moved.get(), nullptr);
  const openrnn::RnnDesc rnn(openrnn::Config()
                                 .with_cell(OPENRNN_CELL_GRU)
                                 .with_sizes(I, H)
                                 .with_layers(L)
                                 .with_bidirectional(true)
                                 .with_dtype(OPENRNN_DATA_DOUBLE));
  const openrnn::SeqDesc xd(OPENRNN_DATA_DOUBLE, OPENRNN_LAYOUT_BATCH_MAJOR, T, B, I, lens, -1.0);
  EXPECT_EQ(rnn.config().hidden_size, H);
  RefProblem p;
  p.cfg.cell = OPENRNN_CELL_GRU;
  p.cfg.I = I;
  p.cfg.H = H;
  p.cfg.L = L;
  p.cfg.D = D;
  p.cfg.training = true;
  p.T = T;
  p.B = B;
  p.len = {4, 2, 3};
  p.fill = -1.0;
  ASSERT_EQ(rnn.weight_params().size(), ref_weight_layout(p.cfg).size());
  const size_t wb = rnn.weight_bytes(moved);
  ASSERT_EQ(wb, ref_weight_count(p.cfg) * 8);
  const auto tmp = openrnn::temp_space_sizes(moved, rnn, OPENRNN_FWD_TRAINING, xd);
  Rng r(77);
  const auto w = random_vector(r, ref_weight_count(p.cfg), 0.5);
  auto x = random_vector(r, static_cast<size_t>(T) * B * I, 1.0);  // sequence-major for the reference
  const auto dy = random_vector(r, static_cast<size_t>(T) * B * D * H, 1.0);
  auto to_batch_major = [&](const std::vector<double>& v, int width) {
    std::vector<double> o(v.size());
    for (int t = 0; t < T; ++t)
      for (int b = 0; b < B; ++b)
        for (int u = 0; u < width; ++u)
          o[(static_cast<size_t>(b) * T + t) * width + u] = v[(static_cast<size_t>(t) * B + b) * width + u];
    return o;
  };
  auto from_batch_major = [&](const std::vector<double>& v, int width) {
    std::vector<double> o(v.size());
    for (int t = 0; t < T; ++t)
      for (int b = 0; b < B; ++b)
        for (int u = 0; u < width; ++u)
          o[(static_cast<size_t>(t) * B + b) * width + u] = v[(static_cast<size_t>(b) * T + t) * width + u];
    return o;
  };
  auto bytes_of = [](const std::vector<double>& v) { return encode_all(OPENRNN_DATA_DOUBLE, v); };
  DeviceBuffer bx(GetParam(), x.size() * 8), by(GetParam(), dy.size() * 8), bw(GetParam(), wb),
      bws(GetParam(), tmp.workspace), brs(GetParam(), tmp.reserve), bdy(GetParam(), dy.size() * 8),
      bdx(GetParam(), x.size() * 8), bdw(GetParam(), wb);
  bx.upload(bytes_of(to_batch_major(x, I)));
  bw.upload(bytes_of(w));
  bdy.upload(bytes_of(to_batch_major(dy, D * H)));
  openrnn::forward(moved, rnn, OPENRNN_FWD_TRAINING, xd, bx.data(), by.data(), nullptr, nullptr, nullptr, nullptr,
                   bw.data(), wb, bws.data(), tmp.workspace, brs.data(), tmp.reserve);
  openrnn::backward_data(moved, rnn, xd, bdy.data(), bdx.data(), nullptr, nullptr, nullptr, nullptr, bw.data(), wb,
                         bws.data(), tmp.workspace, brs.data(), tmp.reserve);
  openrnn::backward_weights(moved, rnn, OPENRNN_WGRAD_SET, xd, bx.data(), bdw.data(), wb, bws.data(), tmp.workspace,
                            brs.data(), tmp.reserve);
  backend_sync(GetParam());
  const RefForward f = ref_forward(p, w, x.data(), nullptr, nullptr);
  const RefGrads g = ref_backward(p, w, f, dy.data(), nullptr, nullptr);
  expect_close("y", from_batch_major(decode_all(OPENRNN_DATA_DOUBLE, by.download()), D * H), f.y, 1e-12);
  std::vector<double> dx = from_batch_major(decode_all(OPENRNN_DATA_DOUBLE, bdx.download()), I);
  for (int t = 0; t < T; ++t)
    for (int b = 0; b < B; ++b)
      for (int u = 0; u < I; ++u)
        if (t >= p.len[b]) {
          EXPECT_EQ(dx[(static_cast<size_t>(t) * B + b) * I + u], -1.0) << "dx padding";
          dx[(static_cast<size_t>(t) * B + b) * I + u] = 0.0;
        }
  expect_close("dx", dx, g.dx, 1e-10);
  expect_close("dw", decode_all(OPENRNN_DATA_DOUBLE, bdw.download()), g.dw, 1e-10);
}

TEST_P(CppApi, ErrorsBecomeExceptionsWithStatusAndMessage) {
  openrnn::Handle h(backend_device(GetParam()));
  try {
    openrnn::RnnDesc bad(openrnn::Config().with_sizes(3, 0));
    ADD_FAILURE() << "hidden_size 0 was accepted";
  } catch (const openrnn::Exception& e) {
    EXPECT_EQ(e.status(), OPENRNN_STATUS_BAD_PARAM);
    EXPECT_NE(std::string(e.what()).find("hidden_size"), std::string::npos) << e.what();
  }
  const openrnn::RnnDesc rnn(openrnn::Config().with_sizes(3, 4).with_bias(OPENRNN_BIAS_NONE));
  try {
    rnn.weight_param(0, 0, OPENRNN_BIAS_IH);
    ADD_FAILURE() << "an absent bias was returned";
  } catch (const openrnn::Exception& e) {
    EXPECT_EQ(e.status(), OPENRNN_STATUS_NOT_SUPPORTED);
  }
  const openrnn::SeqDesc xd(OPENRNN_DATA_FLOAT, OPENRNN_LAYOUT_SEQ_MAJOR, 2, 1, 3);
  try {
    openrnn::forward(h, rnn, OPENRNN_FWD_INFERENCE, xd, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                     nullptr, rnn.weight_bytes(h) + 1, nullptr, 0, nullptr, 0);
    ADD_FAILURE() << "a bad forward did not throw";
  } catch (const openrnn::Exception& e) {
    EXPECT_EQ(e.status(), OPENRNN_STATUS_WEIGHTS_SIZE_MISMATCH);
    EXPECT_NE(std::string(e.what()).find("weight_bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(openrnn::SeqDesc(OPENRNN_DATA_FLOAT, OPENRNN_LAYOUT_SEQ_MAJOR, 2, 2, 3, {1}), openrnn::Exception);
  if (GetParam() == Backend::CPU) {
    const auto q = openrnn::query_algo(h, rnn, OPENRNN_FWD_INFERENCE, xd, OPENRNN_ALGO_PERSISTENT);
    EXPECT_FALSE(q.supported);
    EXPECT_FALSE(q.reason.empty());
    EXPECT_THROW(h.set_stream(nullptr), openrnn::Exception);
  }
  EXPECT_EQ(openrnn::version(), OPENRNN_VERSION);
}

std::string backend_name(const ::testing::TestParamInfo<Backend>& i) { return backend_tag(i.param); }
INSTANTIATE_TEST_SUITE_P(Backends, CppApi, ::testing::ValuesIn(compiled_backends()), backend_name);

}  // namespace
}  // namespace ort
#endif
