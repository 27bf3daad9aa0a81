#include "descriptor.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "dtype.h"
#include "error.h"

namespace openrnn {

int gate_count(openrnn_cell cell) {
  switch (cell) {
    case OPENRNN_CELL_LSTM: return 4;
    case OPENRNN_CELL_GRU:
    case OPENRNN_CELL_GRU_RESET_BEFORE: return 3;
    case OPENRNN_CELL_RNN_TANH:
    case OPENRNN_CELL_RNN_RELU: return 1;
  }
  return 0;
}

const char* cell_name(openrnn_cell cell) {
  switch (cell) {
    case OPENRNN_CELL_LSTM: return "LSTM";
    case OPENRNN_CELL_GRU: return "GRU";
    case OPENRNN_CELL_GRU_RESET_BEFORE: return "GRU(reset-before)";
    case OPENRNN_CELL_RNN_TANH: return "RNN(tanh)";
    case OPENRNN_CELL_RNN_RELU: return "RNN(relu)";
  }
  return "unknown";
}

bool is_gru(openrnn_cell cell) { return cell == OPENRNN_CELL_GRU || cell == OPENRNN_CELL_GRU_RESET_BEFORE; }

// Upper bound on any one dimension; keeps every product of two of them (and G * H * T * B on 64-bit sizes) far from
// overflow, and is far beyond any RNN that fits in memory.
static constexpr int kMaxDim = 1 << 24;

void validate_config(const openrnn_rnn_config& c) {
  const std::string where = "openrnn_rnn_config.";
  if (c.cell < OPENRNN_CELL_LSTM || c.cell > OPENRNN_CELL_RNN_RELU)
    bad_param(where + "cell: " + std::to_string(static_cast<int>(c.cell)) + " is not an openrnn_cell value");
  if (c.input_size < 1 || c.input_size > kMaxDim)
    bad_param(where + "input_size: must be in 1.." + std::to_string(kMaxDim) + ", got " + std::to_string(c.input_size));
  if (c.hidden_size < 1 || c.hidden_size > kMaxDim)
    bad_param(where + "hidden_size: must be in 1.." + std::to_string(kMaxDim) + ", got " +
              std::to_string(c.hidden_size));
  if (c.proj_size < 0) bad_param(where + "proj_size: must be >= 0, got " + std::to_string(c.proj_size));
  if (c.proj_size > 0 && c.cell != OPENRNN_CELL_LSTM)
    bad_param(where + "proj_size: projection is defined for LSTM only, got cell " + cell_name(c.cell));
  if (c.proj_size > 0 && c.proj_size >= c.hidden_size)
    bad_param(where + "proj_size: must be below hidden_size (" + std::to_string(c.hidden_size) + "), got " +
              std::to_string(c.proj_size));
  if (c.num_layers < 1 || c.num_layers > 1024)
    bad_param(where + "num_layers: must be in 1..1024, got " + std::to_string(c.num_layers));
  if (c.bidirectional != 0 && c.bidirectional != 1)
    bad_param(where + "bidirectional: must be 0 or 1, got " + std::to_string(c.bidirectional));
  if (c.bias_mode < OPENRNN_BIAS_DOUBLE || c.bias_mode > OPENRNN_BIAS_NONE)
    bad_param(where + "bias_mode: " + std::to_string(static_cast<int>(c.bias_mode)) +
              " is not an openrnn_bias_mode value");
  if (c.data_type < OPENRNN_DATA_FLOAT || c.data_type > OPENRNN_DATA_BFLOAT16)
    bad_param(where + "data_type: " + std::to_string(static_cast<int>(c.data_type)) +
              " is not an openrnn_data_type value");
  if (c.math_mode != OPENRNN_MATH_DEFAULT && c.math_mode != OPENRNN_MATH_ALLOW_TF32 &&
      c.math_mode != OPENRNN_MATH_ALLOW_REDUCED_STATE)
    bad_param(where + "math_mode: " + std::to_string(static_cast<int>(c.math_mode)) +
              " is not an openrnn_math_mode value");
  if (c.algo < OPENRNN_ALGO_AUTO || c.algo > OPENRNN_ALGO_PERSISTENT)
    bad_param(where + "algo: " + std::to_string(static_cast<int>(c.algo)) + " is not an openrnn_algo value");
  if (!(c.cell_clip >= 0.0) || std::isinf(c.cell_clip))
    bad_param(where + "cell_clip: must be finite and >= 0 (0 = off)");
  if (c.cell_clip > 0.0 && c.cell != OPENRNN_CELL_LSTM)
    bad_param(where + "cell_clip: clipping is defined for LSTM only, got cell " + cell_name(c.cell));
  if (!(c.dropout >= 0.0 && c.dropout < 1.0)) bad_param(where + "dropout: must be in [0, 1)");
}

static const char* kind_stem(openrnn_weight_kind k) {
  switch (k) {
    case OPENRNN_WEIGHT_IH: return "weight_ih";
    case OPENRNN_WEIGHT_HH: return "weight_hh";
    case OPENRNN_BIAS_IH: return "bias_ih";
    case OPENRNN_BIAS_HH: return "bias_hh";
    case OPENRNN_WEIGHT_HR: return "weight_hr";
  }
  return "?";
}

void build_rnn_desc(openrnn_rnn_desc& d) {
  const auto& c = d.cfg;
  d.G = gate_count(c.cell);
  d.D = c.bidirectional ? 2 : 1;
  d.Hout = c.proj_size > 0 ? c.proj_size : c.hidden_size;
  WeightLayout& w = d.weights;
  w.params.clear();
  w.index.assign(static_cast<size_t>(c.num_layers * d.D), {-1, -1, -1, -1, -1});
  size_t off = 0;
  const size_t es = dtype_size(c.data_type);
  const int GH = d.G * c.hidden_size;
  for (int l = 0; l < c.num_layers; ++l) {
    for (int dir = 0; dir < d.D; ++dir) {
      auto add = [&](openrnn_weight_kind kind, int rows, int cols) {
        openrnn_weight_param p{};
        std::snprintf(p.name, sizeof(p.name), "%s_l%d%s", kind_stem(kind), l, dir ? "_reverse" : "");
        p.layer = l;
        p.direction = dir;
        p.kind = kind;
        p.offset = off;
        p.offset_bytes = off * es;
        p.rows = rows;
        p.cols = cols;
        w.index[static_cast<size_t>(l * d.D + dir)][kind] = static_cast<int>(w.params.size());
        w.params.push_back(p);
        off += static_cast<size_t>(rows) * static_cast<size_t>(cols);
      };
      add(OPENRNN_WEIGHT_IH, GH, d.layer_input_size(l));
      add(OPENRNN_WEIGHT_HH, GH, d.Hout);
      if (d.has_bias_ih()) add(OPENRNN_BIAS_IH, GH, 1);
      if (d.has_bias_hh()) add(OPENRNN_BIAS_HH, GH, 1);
      if (d.has_proj()) add(OPENRNN_WEIGHT_HR, c.proj_size, c.hidden_size);
    }
  }
  w.total_elements = off;
}

}  // namespace openrnn

size_t openrnn_rnn_desc::weight_bytes() const { return weights.total_elements * openrnn::dtype_size(cfg.data_type); }
