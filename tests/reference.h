// The float64 reference of the whole openrnn API semantics, written independently of src/ (no src/ header, not even
// the cell equations or Philox): plain loops over layers, directions, sequences and steps. Everything here works in
// sequence-major order ([T, B, .]); the harness converts to and from the batch-major layout.
//
// forward  : the outputs y [T, B, D*Hout], hy [L*D, B, Hout], cy [L*D, B, H] of openrnn_forward.
// backward : reverse-mode gradients of the scalar  S = <dy, y> + <dhy, hy> + <dcy, cy>  (dy at padding steps
//            ignored) w.r.t. x, hx, cx and every weight -- the outputs of backward_data + backward_weights(SET).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "openrnn/openrnn.h"

namespace ort {

struct RefConfig {
  openrnn_cell cell = OPENRNN_CELL_LSTM;
  int I = 1, H = 1, P = 0, L = 1, D = 1;
  openrnn_bias_mode bias = OPENRNN_BIAS_DOUBLE;
  double clip = 0.0;     // LSTM cell clipping; 0 = off
  double dropout = 0.0;  // applied to the input of layers 1..L-1 when training
  uint64_t seed = 0, offset = 0;
  bool training = false;

  int G() const;
  int Hout() const { return P > 0 ? P : H; }
  int layer_in(int l) const { return l == 0 ? I : D * Hout(); }
  bool has_bias_ih() const { return bias == OPENRNN_BIAS_DOUBLE || bias == OPENRNN_BIAS_SINGLE_INPUT; }
  bool has_bias_hh() const { return bias == OPENRNN_BIAS_DOUBLE || bias == OPENRNN_BIAS_SINGLE_RECURRENT; }
  bool lstm() const { return cell == OPENRNN_CELL_LSTM; }
};

// One canonical tensor of the weight buffer (offsets in elements).
struct RefTensor {
  int layer, dir;
  openrnn_weight_kind kind;
  size_t offset;
  int rows, cols;
  std::string name;  // PyTorch name
  size_t size() const { return static_cast<size_t>(rows) * cols; }
};

// The weight buffer layout, derived here from the documented order (not from src/descriptor.cpp).
std::vector<RefTensor> ref_weight_layout(const RefConfig& c);
size_t ref_weight_count(const RefConfig& c);

// Philox4x32-10 and the dropout keep bit of element idx = (t*B + b)*W + u of layer `layer`'s input.
void ref_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
uint32_t ref_dropout_threshold(double p);
bool ref_dropout_keep(uint64_t seed, uint64_t offset, int layer, uint64_t idx, uint32_t thr);

// How stored tensors are rounded: DOUBLE = not at all (the exact reference). With another type, the output of every
// layer and the final states are rounded to it: the model of a half/bfloat16 computation whose error the library's
// is compared against.
struct RefProblem {
  RefConfig cfg;
  int T = 1, B = 1;
  std::vector<int> len;  // B lengths in 1..T
  double fill = 0.0;     // written at padding steps of y
};

struct RefForward {
  std::vector<double> y;   // [T, B, D*Hout]
  std::vector<double> hy;  // [L*D, B, Hout]
  std::vector<double> cy;  // [L*D, B, H]; empty unless LSTM
  // Tape for backward: the input of every layer after dropout [T, B, I_l], and per (l, d, t, b) the states entering
  // the step (h_prev [Hout], c_prev [H]).
  std::vector<std::vector<double>> layer_in;
  std::vector<std::vector<double>> h_prev, c_prev;  // [l*D + d] -> [T, B, Hout] / [T, B, H]
};

struct RefGrads {
  std::vector<double> dx;   // [T, B, I]; 0 at padding steps
  std::vector<double> dhx;  // [L*D, B, Hout]
  std::vector<double> dcx;  // [L*D, B, H]; empty unless LSTM
  std::vector<double> dw;   // like the weight buffer
};

// hx / cx may be null (zeros). x is [T, B, I] sequence-major; values at padding steps are never read.
RefForward ref_forward(const RefProblem& p, const std::vector<double>& w, const double* x, const double* hx,
                       const double* cx, openrnn_data_type rounding = OPENRNN_DATA_DOUBLE);
// dy [T, B, D*Hout] (padding ignored); dhy / dcy may be null (zeros).
RefGrads ref_backward(const RefProblem& p, const std::vector<double>& w, const RefForward& fwd, const double* dy,
                      const double* dhy, const double* dcy);

// S = <dy, y> + <dhy, hy> + <dcy, cy> over the valid (non-padding) steps: the functional whose gradient
// ref_backward computes. Null arguments count as zeros.
double ref_functional(const RefProblem& p, const RefForward& f, const double* dy, const double* dhy,
                      const double* dcy);

}  // namespace ort
