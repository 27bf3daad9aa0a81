// The test harness: one Case describes a problem (cell, sizes, layout, dtype, options, which optional states are
// passed, backend). A Runner builds the handle, descriptors and guarded buffers for it, draws random data, calls the
// library with poisoned outputs, checks what was written and what was not, and compares with the float64 reference.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "openrnn/openrnn.h"
#include "reference.h"

namespace ort {

// Optional-state flags of a case: which of the nullable state pointers are passed (non-null).
constexpr unsigned kHx = 1, kCx = 2, kHy = 4, kCy = 8, kDhy = 16, kDcy = 32, kDhx = 64, kDcx = 128,
                   kAllStates = 255;

struct Case {
  Backend backend = Backend::CPU;
  openrnn_cell cell = OPENRNN_CELL_LSTM;
  openrnn_bias_mode bias = OPENRNN_BIAS_DOUBLE;
  int L = 1, D = 1, I = 3, H = 3, P = 0, B = 3, T = 4;
  bool ragged = false;
  openrnn_layout layout = OPENRNN_LAYOUT_SEQ_MAJOR;
  openrnn_data_type dtype = OPENRNN_DATA_DOUBLE;
  openrnn_fwd_mode mode = OPENRNN_FWD_INFERENCE;  // of the forward-only cases
  openrnn_math_mode math = OPENRNN_MATH_DEFAULT;  // ALLOW_TF32: GPU float32 GEMMs may use TF32
  double clip = 0.0, dropout = 0.0;
  uint64_t dropout_seed = 0x5eed1234abcdull, dropout_offset = 0;
  unsigned states = kAllStates;
  double fill = 0.0;
  std::string tag;  // extra words in the name

  std::string name() const;   // readable, unique within a table, a valid gtest name
  uint64_t seed() const;      // data seed: a hash of the name, xor OPENRNN_TEST_SEED when set
  std::vector<int> lengths() const;
  RefProblem ref_problem(bool training) const;
  bool lstm() const { return cell == OPENRNN_CELL_LSTM; }
};
std::ostream& operator<<(std::ostream& os, const Case& c);  // gtest prints parameters with it

// OPENRNN_TEST_ALGO = standard | persistent | auto (default).
openrnn_algo forced_algo();
const char* algo_name(openrnn_algo a);

// Forward tolerances on ||out - ref|| / ||ref|| (float16 / bfloat16 are measured per case, see check_forward).
double forward_tolerance(openrnn_data_type t);
// The same for a case: TF32 on a GPU gets 3e-3 (the CPU ignores ALLOW_TF32 and stays strict).
double forward_tolerance(const Case& c);

// ||a - b|| / ||b|| over the entries where mask is empty or true; ||b|| is floored at 1e-300 so an all-zero reference
// demands an all-zero result.
double rel_err(const std::vector<double>& a, const std::vector<double>& b, const std::vector<char>& mask = {});

struct FwdOut {
  std::vector<double> y, hy, cy;  // y sequence-major [T, B, D*Hout] (padding included)
};
struct BwdOut {
  std::vector<double> dx, dhx, dcx, dw;  // dx sequence-major [T, B, I]
};

class Runner {
 public:
  explicit Runner(const Case& c);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // False when the case must be skipped here (backend absent, or the forced algorithm refused it); *why says why.
  bool ready(std::string* why) const;
  // ready() and the forced algorithm also accepts mode m (a case may use both modes).
  bool supports(openrnn_fwd_mode m, std::string* why) const;

  const Case& c;
  RefProblem prob;          // reference problem (training flag per call)
  std::vector<int> len;
  // Random data, already rounded to the case's dtype; sequence-major. Padding steps of x and dy hold NaN.
  std::vector<double> x, hx, cx, w, dy, dhy, dcy;
  std::vector<RefTensor> layout;

  openrnn_handle_t handle = nullptr;
  openrnn_rnn_desc_t rnn = nullptr;
  openrnn_seq_desc_t xd = nullptr;
  size_t weight_bytes = 0, ws_inf = 0, ws_train = 0, rs_train = 0;

  // Calls openrnn_forward with the case's optional states (null where the flag is off), poisoned outputs and
  // guards, and checks (as gtest failures) the status, guards, unchanged inputs, no NaN left where written and the
  // padding fill. The output holds what was written (hy/cy empty when not requested).
  FwdOut forward(openrnn_fwd_mode mode, bool check = true);
  // backward_data then backward_weights(SET) after a forward(TRAINING) done by this runner, with the same checks.
  BwdOut backward(bool check = true);
  // backward_weights(ADD) into dw_init (already rounded), returning the accumulated result.
  std::vector<double> backward_weights_add(const std::vector<double>& dw_init);
  // Re-uploads weights / inputs / initial states (for finite differences), unchecked.
  void set_weights(const std::vector<double>& nw);
  // Writes one weight element (index in elements) without touching the rest.
  void set_weight(size_t i, double v);
  void set_inputs(const std::vector<double>& nx, const std::vector<double>& nhx, const std::vector<double>& ncx);
  // <dy, y> + <dhy, hy> + <dcy, cy> of one forward(TRAINING) on the current buffers (all states requested).
  double functional_via_library();

  // Layout conversion: sequence-major values <-> bytes in the case's layout and dtype (NaN at padding on pack).
  std::vector<unsigned char> pack_seq(const std::vector<double>& v, int width) const;
  std::vector<double> unpack_seq(const std::vector<unsigned char>& bytes, int width) const;
  std::vector<char> valid_mask(int width) const;  // [T, B, width] sequence-major: 1 at non-padding steps

  std::string last_status;  // status + message of the last library call

 private:
  void upload_all();
  std::unique_ptr<DeviceBuffer> bx, by, bhx, bhy, bcx, bcy, bw, bws, brs, bdy, bdx, bdhy, bdhx, bdcy, bdcx, bdw;
  std::vector<unsigned char> x_bytes, hx_bytes, cx_bytes, w_bytes, dy_bytes, dhy_bytes, dcy_bytes;
  std::string skip_reason;
  std::string refused[2];  // per openrnn_fwd_mode: why the forced algorithm refused it ("" = accepted)
  bool trained = false;
};

// The float16/bfloat16 bound: the relative error of the rounded reference model (reference.h) w.r.t. the exact
// one, doubled, with a small floor. Computed for each tensor separately.
double rounded_model_bound(double model_err);

// gtest helpers: compare and report with the case name and seed.
void expect_close(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                  double tol, const std::vector<char>& mask = {});

}  // namespace ort
