// Bad input for every entry point of openrnn.h: each returns its specific status, openrnn_last_error() names the
// argument, and descriptor / handle queries leave valid state alone. The compute calls' cases are in
// test_bad_compute.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "device_buffer.h"
#include "openrnn/openrnn.h"

namespace ort {
namespace {

// EXPECT that `s` is `want` and the last error mentions `arg`.
#define EXPECT_STATUS(call, want, arg)                                                                        \
  do {                                                                                                         \
    const openrnn_status s_ = (call);                                                                          \
    EXPECT_EQ(s_, want) << #call << ": " << openrnn_status_string(s_) << ": " << openrnn_last_error();        \
    if ((want) != OPENRNN_STATUS_SUCCESS) {                                                                    \
      EXPECT_NE(std::string(openrnn_last_error()).find(arg), std::string::npos)                                \
          << #call << ": the message \"" << openrnn_last_error() << "\" does not name " << (arg);             \
    }                                                                                                          \
  } while (0)

openrnn_rnn_config lstm_config() {
  openrnn_rnn_config c;
  openrnn_rnn_config_init(&c);
  c.input_size = 3;
  c.hidden_size = 4;
  c.num_layers = 2;
  return c;
}

struct Handle {
  openrnn_handle_t h = nullptr;
  Handle() { EXPECT_EQ(openrnn_create_handle(&h, OPENRNN_DEVICE_CPU, 0), OPENRNN_STATUS_SUCCESS); }
  ~Handle() { openrnn_destroy_handle(h); }
};

TEST(BadInput, StatusStringsAndLastError) {
  for (int s = 0; s <= 10; ++s) {
    const char* n = openrnn_status_string(static_cast<openrnn_status>(s));
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(std::string(n).rfind("OPENRNN_STATUS_", 0), 0u) << n;
  }
  EXPECT_STREQ(openrnn_status_string(OPENRNN_STATUS_BAD_PARAM), "OPENRNN_STATUS_BAD_PARAM");
  EXPECT_NE(openrnn_status_string(static_cast<openrnn_status>(99)), nullptr);
  EXPECT_STATUS(openrnn_rnn_config_init(nullptr), OPENRNN_STATUS_BAD_PARAM, "config");
  EXPECT_GT(std::strlen(openrnn_last_error()), 0u);
  openrnn_rnn_config c;
  EXPECT_EQ(openrnn_rnn_config_init(&c), OPENRNN_STATUS_SUCCESS);
  EXPECT_STREQ(openrnn_last_error(), "") << "a successful call leaves an empty message";
  EXPECT_EQ(openrnn_version(), OPENRNN_VERSION);
}

TEST(BadInput, Handle) {
  openrnn_handle_t h = nullptr;
  EXPECT_STATUS(openrnn_create_handle(nullptr, OPENRNN_DEVICE_CPU, 0), OPENRNN_STATUS_BAD_PARAM, "out");
  EXPECT_STATUS(openrnn_create_handle(&h, static_cast<openrnn_device>(5), 0), OPENRNN_STATUS_BAD_PARAM, "device");
  EXPECT_STATUS(openrnn_create_handle(&h, OPENRNN_DEVICE_CPU, -1), OPENRNN_STATUS_BAD_PARAM, "ordinal");
  EXPECT_STATUS(openrnn_create_handle(&h, OPENRNN_DEVICE_CPU, 1), OPENRNN_STATUS_BAD_PARAM, "ordinal");
  EXPECT_EQ(h, nullptr) << "a failed create must not write *out";
  // CUDA: NO_DEVICE when not compiled in, or for an ordinal no machine has.
  EXPECT_STATUS(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 4096), OPENRNN_STATUS_NO_DEVICE, "");
  EXPECT_EQ(h, nullptr);
  if (compiled_backends().size() == 1) {
    EXPECT_STATUS(openrnn_create_handle(&h, OPENRNN_DEVICE_CUDA, 0), OPENRNN_STATUS_NO_DEVICE, "CUDA");
  }
  EXPECT_EQ(openrnn_destroy_handle(nullptr), OPENRNN_STATUS_SUCCESS);

  Handle cpu;
  openrnn_device dev;
  int ord = -1;
  EXPECT_STATUS(openrnn_get_handle_device(nullptr, &dev, &ord), OPENRNN_STATUS_BAD_PARAM, "handle");
  EXPECT_STATUS(openrnn_get_handle_device(cpu.h, nullptr, nullptr), OPENRNN_STATUS_BAD_PARAM, "device");
  EXPECT_STATUS(openrnn_get_handle_device(cpu.h, &dev, &ord), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(dev, OPENRNN_DEVICE_CPU);
  EXPECT_EQ(ord, 0);
  void* stream = nullptr;
  EXPECT_STATUS(openrnn_set_stream(nullptr, nullptr), OPENRNN_STATUS_BAD_PARAM, "handle");
  EXPECT_STATUS(openrnn_set_stream(cpu.h, nullptr), OPENRNN_STATUS_BAD_PARAM, "CUDA");
  EXPECT_STATUS(openrnn_get_stream(cpu.h, nullptr), OPENRNN_STATUS_BAD_PARAM, "stream");
  EXPECT_STATUS(openrnn_get_stream(cpu.h, &stream), OPENRNN_STATUS_BAD_PARAM, "CUDA");
  int n = -1;
  EXPECT_STATUS(openrnn_set_num_threads(nullptr, 2), OPENRNN_STATUS_BAD_PARAM, "handle");
  EXPECT_STATUS(openrnn_set_num_threads(cpu.h, 0), OPENRNN_STATUS_BAD_PARAM, "num_threads");
  EXPECT_STATUS(openrnn_set_num_threads(cpu.h, -3), OPENRNN_STATUS_BAD_PARAM, "num_threads");
  EXPECT_STATUS(openrnn_set_num_threads(cpu.h, 1025), OPENRNN_STATUS_BAD_PARAM, "num_threads");
  EXPECT_STATUS(openrnn_get_num_threads(cpu.h, nullptr), OPENRNN_STATUS_BAD_PARAM, "num_threads");
  EXPECT_STATUS(openrnn_get_num_threads(nullptr, &n), OPENRNN_STATUS_BAD_PARAM, "handle");
  EXPECT_STATUS(openrnn_set_num_threads(cpu.h, 3), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_STATUS(openrnn_get_num_threads(cpu.h, &n), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(n, 3);
}

// Every field of openrnn_rnn_config with an invalid value: BAD_PARAM naming the field, *out untouched.
TEST(BadInput, RnnConfigFields) {
  openrnn_rnn_desc_t d = nullptr;
  const openrnn_rnn_config good = lstm_config();
  EXPECT_STATUS(openrnn_create_rnn_desc(nullptr, &good), OPENRNN_STATUS_BAD_PARAM, "out");
  EXPECT_STATUS(openrnn_create_rnn_desc(&d, nullptr), OPENRNN_STATUS_BAD_PARAM, "config");
  struct Bad {
    const char* field;
    void (*mutate)(openrnn_rnn_config&);
  } bad[] = {
      {"cell", [](openrnn_rnn_config& c) { c.cell = static_cast<openrnn_cell>(9); }},
      {"cell", [](openrnn_rnn_config& c) { c.cell = static_cast<openrnn_cell>(-1); }},
      {"input_size", [](openrnn_rnn_config& c) { c.input_size = 0; }},
      {"input_size", [](openrnn_rnn_config& c) { c.input_size = -5; }},
      {"hidden_size", [](openrnn_rnn_config& c) { c.hidden_size = 0; }},
      {"hidden_size", [](openrnn_rnn_config& c) { c.hidden_size = -1; }},
      {"proj_size", [](openrnn_rnn_config& c) { c.proj_size = -1; }},
      {"proj_size", [](openrnn_rnn_config& c) { c.proj_size = 4; }},  // == H
      {"proj_size", [](openrnn_rnn_config& c) { c.proj_size = 9; }},  // > H
      {"proj_size", [](openrnn_rnn_config& c) { c.cell = OPENRNN_CELL_GRU; c.proj_size = 2; }},
      {"proj_size", [](openrnn_rnn_config& c) { c.cell = OPENRNN_CELL_RNN_TANH; c.proj_size = 2; }},
      {"num_layers", [](openrnn_rnn_config& c) { c.num_layers = 0; }},
      {"num_layers", [](openrnn_rnn_config& c) { c.num_layers = -2; }},
      {"bidirectional", [](openrnn_rnn_config& c) { c.bidirectional = 2; }},
      {"bidirectional", [](openrnn_rnn_config& c) { c.bidirectional = -1; }},
      {"bias_mode", [](openrnn_rnn_config& c) { c.bias_mode = static_cast<openrnn_bias_mode>(4); }},
      {"data_type", [](openrnn_rnn_config& c) { c.data_type = static_cast<openrnn_data_type>(4); }},
      {"math_mode", [](openrnn_rnn_config& c) { c.math_mode = static_cast<openrnn_math_mode>(7); }},
      {"algo", [](openrnn_rnn_config& c) { c.algo = static_cast<openrnn_algo>(3); }},
      {"cell_clip", [](openrnn_rnn_config& c) { c.cell_clip = -0.5; }},
      {"cell_clip", [](openrnn_rnn_config& c) { c.cell_clip = std::numeric_limits<double>::infinity(); }},
      {"cell_clip", [](openrnn_rnn_config& c) { c.cell_clip = std::nan(""); }},
      {"cell_clip", [](openrnn_rnn_config& c) { c.cell = OPENRNN_CELL_GRU; c.cell_clip = 1.0; }},
      {"cell_clip", [](openrnn_rnn_config& c) { c.cell = OPENRNN_CELL_RNN_RELU; c.cell_clip = 1.0; }},
      {"dropout", [](openrnn_rnn_config& c) { c.dropout = -0.1; }},
      {"dropout", [](openrnn_rnn_config& c) { c.dropout = 1.0; }},
      {"dropout", [](openrnn_rnn_config& c) { c.dropout = std::nan(""); }},
  };
  for (const auto& b : bad) {
    openrnn_rnn_config c = good;
    b.mutate(c);
    EXPECT_STATUS(openrnn_create_rnn_desc(&d, &c), OPENRNN_STATUS_BAD_PARAM, b.field);
    EXPECT_EQ(d, nullptr) << b.field;
  }
  ASSERT_EQ(openrnn_create_rnn_desc(&d, &good), OPENRNN_STATUS_SUCCESS);
  openrnn_rnn_config back;
  EXPECT_STATUS(openrnn_get_rnn_config(nullptr, &back), OPENRNN_STATUS_BAD_PARAM, "desc");
  EXPECT_STATUS(openrnn_get_rnn_config(d, nullptr), OPENRNN_STATUS_BAD_PARAM, "config");
  EXPECT_STATUS(openrnn_get_rnn_config(d, &back), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(std::memcmp(&back, &good, sizeof(good)), 0);
  uint64_t off = 1;
  EXPECT_STATUS(openrnn_set_dropout_offset(nullptr, 3), OPENRNN_STATUS_BAD_PARAM, "desc");
  EXPECT_STATUS(openrnn_get_dropout_offset(nullptr, &off), OPENRNN_STATUS_BAD_PARAM, "desc");
  EXPECT_STATUS(openrnn_get_dropout_offset(d, nullptr), OPENRNN_STATUS_BAD_PARAM, "offset");
  EXPECT_STATUS(openrnn_get_dropout_offset(d, &off), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(off, 0u);
  EXPECT_STATUS(openrnn_set_dropout_offset(d, 0x123456789abull), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_STATUS(openrnn_get_dropout_offset(d, &off), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(off, 0x123456789abull);
  EXPECT_EQ(openrnn_destroy_rnn_desc(d), OPENRNN_STATUS_SUCCESS);
  EXPECT_EQ(openrnn_destroy_rnn_desc(nullptr), OPENRNN_STATUS_SUCCESS);
}

TEST(BadInput, SeqDesc) {
  openrnn_seq_desc_t d = nullptr;
  const int32_t ok_len[3] = {2, 4, 1};
  const openrnn_data_type F = OPENRNN_DATA_FLOAT;
  const openrnn_layout S = OPENRNN_LAYOUT_SEQ_MAJOR;
  EXPECT_STATUS(openrnn_create_seq_desc(nullptr, F, S, 4, 3, 5, ok_len, 0), OPENRNN_STATUS_BAD_PARAM, "out");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, static_cast<openrnn_data_type>(7), S, 4, 3, 5, ok_len, 0),
                OPENRNN_STATUS_BAD_PARAM, "data_type");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, static_cast<openrnn_layout>(2), 4, 3, 5, ok_len, 0),
                OPENRNN_STATUS_BAD_PARAM, "layout");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, S, 0, 3, 5, nullptr, 0), OPENRNN_STATUS_BAD_PARAM, "max_seq_len");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, S, -4, 3, 5, nullptr, 0), OPENRNN_STATUS_BAD_PARAM, "max_seq_len");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, S, 4, 0, 5, nullptr, 0), OPENRNN_STATUS_BAD_PARAM, "batch_size");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, S, 4, -1, 5, nullptr, 0), OPENRNN_STATUS_BAD_PARAM, "batch_size");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, S, 4, 3, 0, nullptr, 0), OPENRNN_STATUS_BAD_PARAM, "vector_size");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, S, 4, 3, -7, nullptr, 0), OPENRNN_STATUS_BAD_PARAM, "vector_size");
  const int32_t too_long[3] = {2, 5, 1}, zero[3] = {2, 0, 1}, negative[3] = {-1, 2, 3};
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, S, 4, 3, 5, too_long, 0), OPENRNN_STATUS_BAD_PARAM, "seq_lengths[1]");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, S, 4, 3, 5, zero, 0), OPENRNN_STATUS_BAD_PARAM, "seq_lengths[1]");
  EXPECT_STATUS(openrnn_create_seq_desc(&d, F, S, 4, 3, 5, negative, 0), OPENRNN_STATUS_BAD_PARAM, "seq_lengths[0]");
  EXPECT_EQ(d, nullptr);

  ASSERT_EQ(openrnn_create_seq_desc(&d, OPENRNN_DATA_HALF, OPENRNN_LAYOUT_BATCH_MAJOR, 4, 3, 5, ok_len, -2.5),
            OPENRNN_STATUS_SUCCESS);
  EXPECT_STATUS(openrnn_get_seq_desc(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
                OPENRNN_STATUS_BAD_PARAM, "desc");
  openrnn_data_type t;
  openrnn_layout lay;
  int T = 0, B = 0, V = 0;
  int32_t lens[3] = {0, 0, 0};
  double fill = 0;
  EXPECT_STATUS(openrnn_get_seq_desc(d, &t, &lay, &T, &B, &V, lens, &fill), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(t, OPENRNN_DATA_HALF);
  EXPECT_EQ(lay, OPENRNN_LAYOUT_BATCH_MAJOR);
  EXPECT_EQ(T, 4);
  EXPECT_EQ(B, 3);
  EXPECT_EQ(V, 5);
  EXPECT_EQ(lens[0], 2);
  EXPECT_EQ(lens[1], 4);
  EXPECT_EQ(lens[2], 1);
  EXPECT_EQ(fill, -2.5);
  // Every output may be null.
  EXPECT_STATUS(openrnn_get_seq_desc(d, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
                OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(openrnn_destroy_seq_desc(d), OPENRNN_STATUS_SUCCESS);
  EXPECT_EQ(openrnn_destroy_seq_desc(nullptr), OPENRNN_STATUS_SUCCESS);
}

TEST(BadInput, WeightQueries) {
  Handle h;
  openrnn_rnn_config c = lstm_config();
  c.bias_mode = OPENRNN_BIAS_SINGLE_INPUT;
  openrnn_rnn_desc_t d = nullptr;
  ASSERT_EQ(openrnn_create_rnn_desc(&d, &c), OPENRNN_STATUS_SUCCESS);
  size_t bytes = 0;
  int count = -1;
  openrnn_weight_param p;
  EXPECT_STATUS(openrnn_get_weight_space_size(nullptr, d, &bytes), OPENRNN_STATUS_BAD_PARAM, "handle");
  EXPECT_STATUS(openrnn_get_weight_space_size(h.h, nullptr, &bytes), OPENRNN_STATUS_BAD_PARAM, "rnn");
  EXPECT_STATUS(openrnn_get_weight_space_size(h.h, d, nullptr), OPENRNN_STATUS_BAD_PARAM, "bytes");
  EXPECT_STATUS(openrnn_get_weight_param_count(nullptr, &count), OPENRNN_STATUS_BAD_PARAM, "rnn");
  EXPECT_STATUS(openrnn_get_weight_param_count(d, nullptr), OPENRNN_STATUS_BAD_PARAM, "count");
  EXPECT_STATUS(openrnn_get_weight_param_count(d, &count), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(count, 6);  // 2 layers x (ih, hh, bias_ih)
  EXPECT_STATUS(openrnn_get_weight_param(nullptr, 0, &p), OPENRNN_STATUS_BAD_PARAM, "rnn");
  EXPECT_STATUS(openrnn_get_weight_param(d, 0, nullptr), OPENRNN_STATUS_BAD_PARAM, "param");
  EXPECT_STATUS(openrnn_get_weight_param(d, -1, &p), OPENRNN_STATUS_BAD_PARAM, "index");
  EXPECT_STATUS(openrnn_get_weight_param(d, count, &p), OPENRNN_STATUS_BAD_PARAM, "index");
  EXPECT_STATUS(openrnn_get_weight_params(nullptr, 0, 0, OPENRNN_WEIGHT_IH, &p), OPENRNN_STATUS_BAD_PARAM, "rnn");
  EXPECT_STATUS(openrnn_get_weight_params(d, 0, 0, OPENRNN_WEIGHT_IH, nullptr), OPENRNN_STATUS_BAD_PARAM, "param");
  EXPECT_STATUS(openrnn_get_weight_params(d, 2, 0, OPENRNN_WEIGHT_IH, &p), OPENRNN_STATUS_BAD_PARAM, "layer");
  EXPECT_STATUS(openrnn_get_weight_params(d, -1, 0, OPENRNN_WEIGHT_IH, &p), OPENRNN_STATUS_BAD_PARAM, "layer");
  EXPECT_STATUS(openrnn_get_weight_params(d, 0, 1, OPENRNN_WEIGHT_IH, &p), OPENRNN_STATUS_BAD_PARAM, "direction");
  EXPECT_STATUS(openrnn_get_weight_params(d, 0, 0, static_cast<openrnn_weight_kind>(5), &p),
                OPENRNN_STATUS_BAD_PARAM, "kind");
  std::memset(&p, 0x5a, sizeof(p));
  EXPECT_STATUS(openrnn_get_weight_params(d, 1, 0, OPENRNN_BIAS_HH, &p), OPENRNN_STATUS_NOT_SUPPORTED, "bias");
  openrnn_weight_param zero;
  std::memset(&zero, 0, sizeof(zero));
  EXPECT_EQ(std::memcmp(&p, &zero, sizeof(p)), 0) << "an absent tensor's param must be zeroed";
  EXPECT_STATUS(openrnn_get_weight_params(d, 0, 0, OPENRNN_WEIGHT_HR, &p), OPENRNN_STATUS_NOT_SUPPORTED,
                "weight_hr");
  openrnn_destroy_rnn_desc(d);
}

TEST(BadInput, TempSizesAndQueryAlgo) {
  Handle h;
  openrnn_rnn_config c = lstm_config();
  openrnn_rnn_desc_t d = nullptr;
  ASSERT_EQ(openrnn_create_rnn_desc(&d, &c), OPENRNN_STATUS_SUCCESS);
  openrnn_seq_desc_t x = nullptr, x64 = nullptr, x_wide = nullptr;
  ASSERT_EQ(openrnn_create_seq_desc(&x, OPENRNN_DATA_FLOAT, OPENRNN_LAYOUT_SEQ_MAJOR, 4, 2, 3, nullptr, 0),
            OPENRNN_STATUS_SUCCESS);
  ASSERT_EQ(openrnn_create_seq_desc(&x64, OPENRNN_DATA_DOUBLE, OPENRNN_LAYOUT_SEQ_MAJOR, 4, 2, 3, nullptr, 0),
            OPENRNN_STATUS_SUCCESS);
  ASSERT_EQ(openrnn_create_seq_desc(&x_wide, OPENRNN_DATA_FLOAT, OPENRNN_LAYOUT_SEQ_MAJOR, 4, 2, 5, nullptr, 0),
            OPENRNN_STATUS_SUCCESS);
  size_t ws = 0, rs = 0;
  const auto I = OPENRNN_FWD_INFERENCE, TR = OPENRNN_FWD_TRAINING;
  EXPECT_STATUS(openrnn_get_temp_space_sizes(nullptr, d, I, x, &ws, &rs), OPENRNN_STATUS_BAD_PARAM, "handle");
  EXPECT_STATUS(openrnn_get_temp_space_sizes(h.h, nullptr, I, x, &ws, &rs), OPENRNN_STATUS_BAD_PARAM, "rnn");
  EXPECT_STATUS(openrnn_get_temp_space_sizes(h.h, d, I, nullptr, &ws, &rs), OPENRNN_STATUS_BAD_PARAM, "x_desc");
  EXPECT_STATUS(openrnn_get_temp_space_sizes(h.h, d, static_cast<openrnn_fwd_mode>(2), x, &ws, &rs),
                OPENRNN_STATUS_BAD_PARAM, "mode");
  EXPECT_STATUS(openrnn_get_temp_space_sizes(h.h, d, I, x, nullptr, nullptr), OPENRNN_STATUS_BAD_PARAM,
                "workspace_bytes");
  EXPECT_STATUS(openrnn_get_temp_space_sizes(h.h, d, I, x64, &ws, &rs), OPENRNN_STATUS_BAD_PARAM, "data type");
  EXPECT_STATUS(openrnn_get_temp_space_sizes(h.h, d, I, x_wide, &ws, &rs), OPENRNN_STATUS_BAD_PARAM,
                "vector_size");
  rs = 77;
  EXPECT_STATUS(openrnn_get_temp_space_sizes(h.h, d, I, x, &ws, &rs), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(rs, 0u) << "inference needs no reserve";
  EXPECT_STATUS(openrnn_get_temp_space_sizes(h.h, d, TR, x, nullptr, &rs), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_GT(rs, 0u) << "training must reserve space for the backward pass";

  int sup = -1;
  openrnn_algo chosen = static_cast<openrnn_algo>(-1);
  char reason[128];
  const auto A = OPENRNN_ALGO_AUTO;
  EXPECT_STATUS(openrnn_query_algo(nullptr, d, I, x, A, &sup, &chosen, reason, 128), OPENRNN_STATUS_BAD_PARAM,
                "handle");
  EXPECT_STATUS(openrnn_query_algo(h.h, nullptr, I, x, A, &sup, &chosen, reason, 128), OPENRNN_STATUS_BAD_PARAM,
                "rnn");
  EXPECT_STATUS(openrnn_query_algo(h.h, d, I, nullptr, A, &sup, &chosen, reason, 128), OPENRNN_STATUS_BAD_PARAM,
                "x_desc");
  EXPECT_STATUS(openrnn_query_algo(h.h, d, I, x, A, nullptr, &chosen, reason, 128), OPENRNN_STATUS_BAD_PARAM,
                "supported");
  EXPECT_STATUS(openrnn_query_algo(h.h, d, static_cast<openrnn_fwd_mode>(-1), x, A, &sup, &chosen, reason, 128),
                OPENRNN_STATUS_BAD_PARAM, "mode");
  EXPECT_STATUS(openrnn_query_algo(h.h, d, I, x, static_cast<openrnn_algo>(3), &sup, &chosen, reason, 128),
                OPENRNN_STATUS_BAD_PARAM, "algo");
  EXPECT_STATUS(openrnn_query_algo(h.h, d, I, x, A, &sup, &chosen, reason, 0), OPENRNN_STATUS_BAD_PARAM,
                "reason_len");
  EXPECT_STATUS(openrnn_query_algo(h.h, d, I, x64, A, &sup, &chosen, reason, 128), OPENRNN_STATUS_BAD_PARAM,
                "data type");
  EXPECT_STATUS(openrnn_query_algo(h.h, d, I, x_wide, A, &sup, &chosen, reason, 128), OPENRNN_STATUS_BAD_PARAM,
                "vector_size");
  EXPECT_EQ(sup, -1) << "a rejected query must not write *supported";
  EXPECT_STATUS(openrnn_query_algo(h.h, d, I, x, A, &sup, &chosen, reason, 128), OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(sup, 1) << "AUTO must accept every valid problem";
  EXPECT_NE(chosen, OPENRNN_ALGO_AUTO) << "AUTO reports the algorithm it resolves to";
  EXPECT_STATUS(openrnn_query_algo(h.h, d, I, x, A, &sup, nullptr, nullptr, 0), OPENRNN_STATUS_SUCCESS, "");
  // PERSISTENT is a GPU algorithm: on the CPU it is unsupported, with a reason, and the call itself succeeds.
  std::memset(reason, 'x', sizeof(reason));
  EXPECT_STATUS(openrnn_query_algo(h.h, d, I, x, OPENRNN_ALGO_PERSISTENT, &sup, nullptr, reason, 8),
                OPENRNN_STATUS_SUCCESS, "");
  EXPECT_EQ(sup, 0);
  EXPECT_LE(std::strlen(reason), 7u) << "the reason must be truncated to reason_len - 1 and NUL-terminated";
  EXPECT_GT(std::strlen(reason), 0u);
  openrnn_destroy_seq_desc(x);
  openrnn_destroy_seq_desc(x64);
  openrnn_destroy_seq_desc(x_wide);
  openrnn_destroy_rnn_desc(d);
}

}  // namespace
}  // namespace ort
