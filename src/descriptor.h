// Descriptors (the structs behind the opaque C handles) and the canonical weight layout.
//
// The weight buffer holds, for layer l, direction d, the PyTorch tensors back to back:
//   weight_ih [G*H, I_l], weight_hh [G*H, Hout], bias_ih [G*H], bias_hh [G*H], weight_hr [P, H]
// with absent biases / projection left out (openrnn.h). WeightLayout computes every offset once at descriptor
// creation; backends only look offsets up.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "openrnn/openrnn.h"

namespace openrnn {

class Backend;

// Gates per cell: LSTM 4, GRU 3, RNN 1.
int gate_count(openrnn_cell cell);
const char* cell_name(openrnn_cell cell);
bool is_gru(openrnn_cell cell);

struct WeightLayout {
  std::vector<openrnn_weight_param> params;     // buffer order
  // index into params of (layer, direction, kind), or -1 when absent. [layer * D + d][kind]
  std::vector<std::array<int, 5>> index;
  size_t total_elements = 0;

  // Offset in elements of a tensor, or SIZE_MAX when absent.
  size_t offset(int layer, int dir, openrnn_weight_kind kind, int D) const {
    const int i = index[static_cast<size_t>(layer * D + dir)][kind];
    return i < 0 ? SIZE_MAX : params[static_cast<size_t>(i)].offset;
  }
  bool has(int layer, int dir, openrnn_weight_kind kind, int D) const {
    return index[static_cast<size_t>(layer * D + dir)][kind] >= 0;
  }
};

}  // namespace openrnn

// The RNN descriptor. Immutable after creation except dropout_offset.
struct openrnn_rnn_desc {
  openrnn_rnn_config cfg{};
  uint64_t dropout_offset = 0;
  // Derived, fixed at creation.
  int G = 0;     // gates
  int D = 1;     // directions
  int Hout = 0;  // P if projection else H
  openrnn::WeightLayout weights;

  int layer_input_size(int layer) const { return layer == 0 ? cfg.input_size : D * Hout; }
  bool has_bias_ih() const { return cfg.bias_mode == OPENRNN_BIAS_DOUBLE || cfg.bias_mode == OPENRNN_BIAS_SINGLE_INPUT; }
  bool has_bias_hh() const {
    return cfg.bias_mode == OPENRNN_BIAS_DOUBLE || cfg.bias_mode == OPENRNN_BIAS_SINGLE_RECURRENT;
  }
  bool has_proj() const { return cfg.proj_size > 0; }
  size_t weight_bytes() const;
};

// The sequence descriptor. Immutable after creation.
struct openrnn_seq_desc {
  openrnn_data_type data_type = OPENRNN_DATA_FLOAT;
  openrnn_layout layout = OPENRNN_LAYOUT_SEQ_MAJOR;
  int T = 0, B = 0, V = 0;
  std::vector<int32_t> lengths;  // B entries, each in 1..T (filled with T when the caller passed null)
  bool all_full = true;          // every length == T
  double fill = 0.0;

  // Element offset of vector (t, b) of a tensor with this descriptor's layout and vector width `width`.
  size_t vec_offset(int t, int b, int width) const {
    return layout == OPENRNN_LAYOUT_SEQ_MAJOR ? (static_cast<size_t>(t) * B + b) * width
                                              : (static_cast<size_t>(b) * T + t) * width;
  }
};

// The handle: a device and the backend that serves it.
struct openrnn_handle {
  openrnn_device device = OPENRNN_DEVICE_CPU;
  int ordinal = 0;
  std::unique_ptr<openrnn::Backend> backend;
};

namespace openrnn {

// Validates a config; throws Error(BAD_PARAM) naming the field.
void validate_config(const openrnn_rnn_config& cfg);
// Fills the derived fields of a descriptor from its (validated) config.
void build_rnn_desc(openrnn_rnn_desc& desc);

}  // namespace openrnn
