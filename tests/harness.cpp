// Runner: buffers, random data, library calls with poisoned outputs and write guards, and the checks of what each
// call wrote. See harness.h.
#include "harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "numeric_types.h"

namespace ort {

namespace {

const char* cell_tag(openrnn_cell c) {
  switch (c) {
    case OPENRNN_CELL_LSTM: return "lstm";
    case OPENRNN_CELL_GRU: return "gru";
    case OPENRNN_CELL_GRU_RESET_BEFORE: return "grurb";
    case OPENRNN_CELL_RNN_TANH: return "rnntanh";
    case OPENRNN_CELL_RNN_RELU: return "rnnrelu";
  }
  return "bad";
}

const char* bias_tag(openrnn_bias_mode b) {
  switch (b) {
    case OPENRNN_BIAS_DOUBLE: return "bD";
    case OPENRNN_BIAS_SINGLE_INPUT: return "bI";
    case OPENRNN_BIAS_SINGLE_RECURRENT: return "bR";
    case OPENRNN_BIAS_NONE: return "bN";
  }
  return "bX";
}

// All-ones bytes are a NaN in float64, float32, float16 and bfloat16 alike: the poison of every output, workspace
// and reserve, and the content of x / dy at padding steps.
const std::vector<unsigned char> kPoison{0xFF};

bool has_nan(openrnn_data_type t, const std::vector<unsigned char>& bytes) {
  const size_t n = bytes.size() / elem_size(t);
  for (size_t i = 0; i < n; ++i)
    if (std::isnan(decode(t, bytes.data(), i))) return true;
  return false;
}

std::string check_status(openrnn_status s) {
  return std::string(openrnn_status_string(s)) + ": " + openrnn_last_error();
}

}  // namespace

// ---- Case ----------------------------------------------------------------------------------------------------------
std::string Case::name() const {
  std::ostringstream o;
  o << cell_tag(cell) << '_' << bias_tag(bias) << "_L" << L << "_D" << D;
  if (P > 0) o << "_P" << P;
  o << (ragged ? "_rag" : "_eq") << (layout == OPENRNN_LAYOUT_SEQ_MAJOR ? "_seq" : "_bat") << '_' << type_tag(dtype)
    << "_I" << I << "H" << H << "B" << B << "T" << T;
  if (mode == OPENRNN_FWD_TRAINING) o << "_train";
  if (math == OPENRNN_MATH_ALLOW_TF32) o << "_tf32";
  if (clip > 0) o << "_clip";
  if (dropout > 0) o << "_drop";
  if (states != kAllStates) o << "_st" << states;
  if (!tag.empty()) o << '_' << tag;
  o << '_' << backend_tag(backend);
  return o.str();
}

uint64_t Case::seed() const {
  std::string n = name();
  n.resize(n.size() - std::string(backend_tag(backend)).size());  // same data on every backend
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : n) h = (h ^ ch) * 1099511628211ull;
  if (const char* s = std::getenv("OPENRNN_TEST_SEED")) h ^= std::strtoull(s, nullptr, 0);
  return h;
}

std::vector<int> Case::lengths() const {
  std::vector<int> l(static_cast<size_t>(B), T);
  if (!ragged) return l;
  Rng r(seed() ^ 0x1e46u);
  for (auto& v : l) v = 1 + r.below(T);
  // Unsorted on purpose: the longest last, the shortest (1) first, and B = 1 still shorter than T.
  if (B == 1) {
    l[0] = T > 1 ? T - 1 : 1;
  } else {
    l[static_cast<size_t>(B - 1)] = T;
    if (B > 2) l[0] = 1;
  }
  return l;
}

RefProblem Case::ref_problem(bool training) const {
  RefProblem p;
  p.cfg.cell = cell;
  p.cfg.I = I;
  p.cfg.H = H;
  p.cfg.P = P;
  p.cfg.L = L;
  p.cfg.D = D;
  p.cfg.bias = bias;
  p.cfg.clip = clip;
  p.cfg.dropout = dropout;
  p.cfg.seed = dropout_seed;
  p.cfg.offset = dropout_offset;
  p.cfg.training = training;
  p.T = T;
  p.B = B;
  p.len = lengths();
  p.fill = fill;
  return p;
}

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name() << " (seed " << c.seed() << ")"; }

openrnn_algo forced_algo() {
  const char* s = std::getenv("OPENRNN_TEST_ALGO");
  if (!s || !*s || std::strcmp(s, "auto") == 0) return OPENRNN_ALGO_AUTO;
  if (std::strcmp(s, "standard") == 0) return OPENRNN_ALGO_STANDARD;
  if (std::strcmp(s, "persistent") == 0) return OPENRNN_ALGO_PERSISTENT;
  ADD_FAILURE() << "OPENRNN_TEST_ALGO=" << s << " is not one of standard|persistent|auto";
  return OPENRNN_ALGO_AUTO;
}

const char* algo_name(openrnn_algo a) {
  return a == OPENRNN_ALGO_STANDARD ? "standard" : a == OPENRNN_ALGO_PERSISTENT ? "persistent" : "auto";
}

double forward_tolerance(openrnn_data_type t) {
  switch (t) {
    case OPENRNN_DATA_DOUBLE: return 1e-12;
    case OPENRNN_DATA_FLOAT: return 1e-5;
    default: return 0.0;  // measured per case: rounded_model_bound
  }
}

double forward_tolerance(const Case& c) {
  if (c.math == OPENRNN_MATH_ALLOW_TF32 && c.dtype == OPENRNN_DATA_FLOAT && c.backend == Backend::CUDA) return 3e-3;
  return forward_tolerance(c.dtype);
}

// Twice the rounded model's error (DESIGN.md), floored at 2^-20 so that a tensor whose rounding happens to be
// exact (e.g. all outputs 0 for a dead ReLU) is not held to a zero bound.
double rounded_model_bound(double model_err) { return std::fmax(2.0 * model_err, 0x1.0p-20); }

double rel_err(const std::vector<double>& a, const std::vector<double>& b, const std::vector<char>& mask) {
  if (a.size() != b.size()) return HUGE_VAL;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!mask.empty() && !mask[i]) continue;
    const double d = a[i] - b[i];
    num += d * d;
    den += b[i] * b[i];
  }
  if (std::isnan(num)) return HUGE_VAL;
  return std::sqrt(num) / std::fmax(std::sqrt(den), 1e-300);
}

void expect_close(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                  double tol, const std::vector<char>& mask) {
  ASSERT_EQ(got.size(), want.size()) << what << ": size";
  const double e = rel_err(got, want, mask);
  static const bool verbose = std::getenv("OPENRNN_TEST_VERBOSE") != nullptr;
  if (verbose) std::printf("  %-40s relative error %.3e (bound %.3e)\n", what.c_str(), e, tol);
  if (e <= tol) return;
  size_t worst = 0;
  double wd = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!mask.empty() && !mask[i]) continue;
    const double d = std::isnan(got[i]) ? HUGE_VAL : std::fabs(got[i] - want[i]);
    if (d > wd) {
      wd = d;
      worst = i;
    }
  }
  ADD_FAILURE() << what << ": relative error " << e << " > " << tol << "; worst element " << worst << ": got "
                << got[worst] << ", reference " << want[worst] << " (" << got.size() << " elements)";
}

// ---- Runner --------------------------------------------------------------------------------------------------------
Runner::Runner(const Case& cs) : c(cs) {
  prob = c.ref_problem(false);
  len = prob.len;
  const RefConfig& rc = prob.cfg;
  const int Ho = rc.Hout(), LDB = c.L * c.D * c.B;
  Rng r(c.seed());
  layout = ref_weight_layout(rc);
  w.assign(ref_weight_count(rc), 0.0);
  const double k = 1.0 / std::sqrt(static_cast<double>(c.H));
  for (const auto& t : layout)
    for (size_t i = 0; i < t.size(); ++i) w[t.offset + i] = r.signed_away(0.05 * k, k);
  auto rounded = [&](size_t n) {
    auto v = random_vector(r, n, 1.0);
    for (auto& e : v) e = round_to(c.dtype, e);
    return v;
  };
  for (auto& e : w) e = round_to(c.dtype, e);
  x = rounded(static_cast<size_t>(c.T) * c.B * c.I);
  hx = rounded(static_cast<size_t>(LDB) * Ho);
  if (c.lstm()) cx = rounded(static_cast<size_t>(LDB) * c.H);
  dy = rounded(static_cast<size_t>(c.T) * c.B * c.D * Ho);
  dhy = rounded(static_cast<size_t>(LDB) * Ho);
  if (c.lstm()) dcy = rounded(static_cast<size_t>(LDB) * c.H);
  // Padding steps hold NaN: the library must never read them.
  for (int t = 0; t < c.T; ++t)
    for (int b = 0; b < c.B; ++b)
      if (t >= len[b]) {
        for (int u = 0; u < c.I; ++u) x[(static_cast<size_t>(t) * c.B + b) * c.I + u] = NAN;
        for (int u = 0; u < c.D * Ho; ++u) dy[(static_cast<size_t>(t) * c.B + b) * c.D * Ho + u] = NAN;
      }

  if (!backend_available(c.backend, &skip_reason)) return;

  openrnn_status s = openrnn_create_handle(&handle, backend_device(c.backend), 0);
  if (s != OPENRNN_STATUS_SUCCESS) {
    ADD_FAILURE() << "openrnn_create_handle: " << check_status(s);
    skip_reason = "handle creation failed";
    return;
  }
  openrnn_rnn_config cfg;
  openrnn_rnn_config_init(&cfg);
  cfg.cell = c.cell;
  cfg.input_size = c.I;
  cfg.hidden_size = c.H;
  cfg.proj_size = c.P;
  cfg.num_layers = c.L;
  cfg.bidirectional = c.D == 2;
  cfg.bias_mode = c.bias;
  cfg.data_type = c.dtype;
  cfg.algo = forced_algo();
  cfg.math_mode = c.math;
  cfg.cell_clip = c.clip;
  cfg.dropout = c.dropout;
  cfg.dropout_seed = c.dropout_seed;
  s = openrnn_create_rnn_desc(&rnn, &cfg);
  if (s != OPENRNN_STATUS_SUCCESS) {
    ADD_FAILURE() << "openrnn_create_rnn_desc: " << check_status(s);
    skip_reason = "descriptor creation failed";
    return;
  }
  openrnn_set_dropout_offset(rnn, c.dropout_offset);
  // Equal lengths: alternately pass null and an explicit array of T (both mean "all full").
  const bool pass_lengths = c.ragged || (c.seed() & 1);
  s = openrnn_create_seq_desc(&xd, c.dtype, c.layout, c.T, c.B, c.I, pass_lengths ? len.data() : nullptr, c.fill);
  if (s != OPENRNN_STATUS_SUCCESS) {
    ADD_FAILURE() << "openrnn_create_seq_desc: " << check_status(s);
    skip_reason = "sequence descriptor creation failed";
    return;
  }
  // The forced algorithm may not cover this problem: skip, with the backend's reason. Both modes are asked; the
  // case's own mode decides whether it runs, the other is reported by supports().
  for (openrnn_fwd_mode m : {OPENRNN_FWD_INFERENCE, OPENRNN_FWD_TRAINING}) {
    int supported = 0;
    char reason[512] = {0};
    s = openrnn_query_algo(handle, rnn, m, xd, cfg.algo, &supported, nullptr, reason, sizeof(reason));
    if (s != OPENRNN_STATUS_SUCCESS) {
      ADD_FAILURE() << "openrnn_query_algo: " << check_status(s);
      skip_reason = "query_algo failed";
      return;
    }
    if (!supported)
      refused[m] = std::string("algorithm ") + algo_name(cfg.algo) + " refused this case on " +
                   backend_tag(c.backend) + (m == OPENRNN_FWD_TRAINING ? " (training)" : " (inference)") + ": " +
                   reason;
  }
  if (!refused[c.mode].empty()) {
    skip_reason = refused[c.mode];
    return;
  }
  EXPECT_EQ(openrnn_get_weight_space_size(handle, rnn, &weight_bytes), OPENRNN_STATUS_SUCCESS);
  EXPECT_EQ(weight_bytes, w.size() * elem_size(c.dtype)) << "weight space size differs from the documented layout";
  if (refused[OPENRNN_FWD_INFERENCE].empty()) {
    EXPECT_EQ(openrnn_get_temp_space_sizes(handle, rnn, OPENRNN_FWD_INFERENCE, xd, &ws_inf, nullptr),
              OPENRNN_STATUS_SUCCESS)
        << openrnn_last_error();
  }
  if (refused[OPENRNN_FWD_TRAINING].empty()) {
    EXPECT_EQ(openrnn_get_temp_space_sizes(handle, rnn, OPENRNN_FWD_TRAINING, xd, &ws_train, &rs_train),
              OPENRNN_STATUS_SUCCESS)
        << openrnn_last_error();
  }

  const size_t es = elem_size(c.dtype);
  const size_t TB = static_cast<size_t>(c.T) * c.B, hbytes = static_cast<size_t>(LDB) * Ho * es,
               cbytes = static_cast<size_t>(LDB) * c.H * es;
  auto mk = [&](size_t bytes) { return std::make_unique<DeviceBuffer>(c.backend, bytes); };
  bx = mk(TB * c.I * es);
  by = mk(TB * c.D * Ho * es);
  bhx = mk(hbytes);
  bhy = mk(hbytes);
  bcx = mk(cbytes);
  bcy = mk(cbytes);
  bw = mk(weight_bytes);
  bws = mk(std::max(ws_inf, ws_train));
  brs = mk(rs_train);
  bdy = mk(TB * c.D * Ho * es);
  bdx = mk(TB * c.I * es);
  bdhy = mk(hbytes);
  bdhx = mk(hbytes);
  bdcy = mk(cbytes);
  bdcx = mk(cbytes);
  bdw = mk(weight_bytes);
  x_bytes = pack_seq(x, c.I);
  hx_bytes = encode_all(c.dtype, hx);
  cx_bytes = encode_all(c.dtype, cx);
  w_bytes = encode_all(c.dtype, w);
  dy_bytes = pack_seq(dy, c.D * Ho);
  dhy_bytes = encode_all(c.dtype, dhy);
  dcy_bytes = encode_all(c.dtype, dcy);
  upload_all();
}

Runner::~Runner() {
  openrnn_destroy_seq_desc(xd);
  openrnn_destroy_rnn_desc(rnn);
  openrnn_destroy_handle(handle);
}

bool Runner::supports(openrnn_fwd_mode m, std::string* why) const {
  if (!ready(why)) return false;
  if (refused[m].empty()) return true;
  if (why) *why = refused[m];
  return false;
}

bool Runner::ready(std::string* why) const {
  if (skip_reason.empty()) return true;
  if (why) *why = skip_reason;
  return false;
}

void Runner::upload_all() {
  bx->upload(x_bytes);
  bhx->upload(hx_bytes);
  if (!cx_bytes.empty()) bcx->upload(cx_bytes);
  bw->upload(w_bytes);
  bdy->upload(dy_bytes);
  bdhy->upload(dhy_bytes);
  if (!dcy_bytes.empty()) bdcy->upload(dcy_bytes);
}

void Runner::set_weights(const std::vector<double>& nw) {
  w_bytes = encode_all(c.dtype, nw);
  bw->upload(w_bytes);
}

void Runner::set_weight(size_t i, double v) {
  const size_t es = elem_size(c.dtype);
  encode(c.dtype, v, w_bytes.data(), i);
  bw->upload(w_bytes.data() + i * es, es, i * es);
}

void Runner::set_inputs(const std::vector<double>& nx, const std::vector<double>& nhx,
                        const std::vector<double>& ncx) {
  x_bytes = pack_seq(nx, c.I);
  hx_bytes = encode_all(c.dtype, nhx);
  cx_bytes = encode_all(c.dtype, ncx);
  upload_all();
}

std::vector<unsigned char> Runner::pack_seq(const std::vector<double>& v, int width) const {
  const size_t es = elem_size(c.dtype);
  std::vector<unsigned char> out(static_cast<size_t>(c.T) * c.B * width * es, 0xFF);
  for (int t = 0; t < c.T; ++t)
    for (int b = 0; b < c.B; ++b) {
      const size_t src = (static_cast<size_t>(t) * c.B + b) * width;
      const size_t dst = c.layout == OPENRNN_LAYOUT_SEQ_MAJOR ? src : (static_cast<size_t>(b) * c.T + t) * width;
      for (int u = 0; u < width; ++u) encode(c.dtype, t < len[b] ? v[src + u] : NAN, out.data(), dst + u);
    }
  return out;
}

std::vector<double> Runner::unpack_seq(const std::vector<unsigned char>& bytes, int width) const {
  std::vector<double> out(static_cast<size_t>(c.T) * c.B * width);
  for (int t = 0; t < c.T; ++t)
    for (int b = 0; b < c.B; ++b) {
      const size_t dst = (static_cast<size_t>(t) * c.B + b) * width;
      const size_t src = c.layout == OPENRNN_LAYOUT_SEQ_MAJOR ? dst : (static_cast<size_t>(b) * c.T + t) * width;
      for (int u = 0; u < width; ++u) out[dst + u] = decode(c.dtype, bytes.data(), src + u);
    }
  return out;
}

std::vector<char> Runner::valid_mask(int width) const {
  std::vector<char> m(static_cast<size_t>(c.T) * c.B * width, 0);
  for (int t = 0; t < c.T; ++t)
    for (int b = 0; b < c.B; ++b)
      if (t < len[b])
        for (int u = 0; u < width; ++u) m[(static_cast<size_t>(t) * c.B + b) * width + u] = 1;
  return m;
}

namespace {

// Checks a sequence output (y or dx): written (no NaN) at valid steps, exactly the fill value at padding steps.
void check_seq_output(const Runner& r, const std::string& what, const std::vector<double>& v, int width) {
  const double fill = round_to(r.c.dtype, r.c.fill);
  size_t unwritten = 0, badfill = 0, first_unwritten = SIZE_MAX, first_badfill = SIZE_MAX;
  for (int t = 0; t < r.c.T; ++t)
    for (int b = 0; b < r.c.B; ++b)
      for (int u = 0; u < width; ++u) {
        const size_t i = (static_cast<size_t>(t) * r.c.B + b) * width + u;
        if (t < r.len[b]) {
          if (std::isnan(v[i]) && unwritten++ == 0) first_unwritten = i;
        } else if (!(v[i] == fill) && badfill++ == 0) {
          first_badfill = i;
        }
      }
  EXPECT_EQ(unwritten, 0u) << what << ": " << unwritten << " elements at valid steps were not written (NaN), first "
                           << "at sequence-major index " << first_unwritten;
  EXPECT_EQ(badfill, 0u) << what << ": " << badfill << " padding elements differ from padding_fill " << fill
                         << ", first at sequence-major index " << first_badfill << " = "
                         << (first_badfill == SIZE_MAX ? 0.0 : v[first_badfill]);
}

void check_guards(const char* call, std::initializer_list<std::pair<const char*, const DeviceBuffer*>> bufs) {
  for (const auto& b : bufs) {
    std::string what;
    EXPECT_TRUE(b.second->guards_intact(&what)) << call << " wrote outside " << b.first << ": " << what;
  }
}

void check_unchanged(const char* call, const char* name, const DeviceBuffer& b,
                     const std::vector<unsigned char>& want) {
  if (want.empty()) return;
  const auto got = b.download();
  size_t first = SIZE_MAX;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    if (got[i] != want[i]) {
      first = i;
      break;
    }
  EXPECT_EQ(first, SIZE_MAX) << call << " modified its input " << name << " (first changed byte " << first << ")";
}

}  // namespace

FwdOut Runner::forward(openrnn_fwd_mode mode, bool check) {
  FwdOut out;
  const bool lstm = c.lstm();
  // Inputs as the case says; outputs all requested when unchecked (finite differences need hy and cy).
  const unsigned st_in = c.states, st = check ? c.states : kAllStates;
  by->fill(kPoison);
  bhy->fill(kPoison);
  bcy->fill(kPoison);
  bws->fill(kPoison);
  if (mode == OPENRNN_FWD_TRAINING) brs->fill(kPoison);
  const size_t ws = mode == OPENRNN_FWD_TRAINING ? ws_train : ws_inf;
  const openrnn_status s = openrnn_forward(
      handle, rnn, mode, xd, bx->data(), by->data(), (st_in & kHx) ? bhx->data() : nullptr,
      (st & kHy) ? bhy->data() : nullptr, (lstm && (st_in & kCx)) ? bcx->data() : nullptr,
      (lstm && (st & kCy)) ? bcy->data() : nullptr, bw->data(), weight_bytes, bws->data(), ws,
      mode == OPENRNN_FWD_TRAINING ? brs->data() : nullptr, mode == OPENRNN_FWD_TRAINING ? rs_train : 0);
  backend_sync(c.backend);
  last_status = check_status(s);
  EXPECT_EQ(s, OPENRNN_STATUS_SUCCESS) << "openrnn_forward: " << last_status;
  if (s != OPENRNN_STATUS_SUCCESS) return out;
  trained = mode == OPENRNN_FWD_TRAINING;
  const int Ho = prob.cfg.Hout();
  out.y = unpack_seq(by->download(), c.D * Ho);
  if (st & kHy) out.hy = decode_all(c.dtype, bhy->download());
  if (lstm && (st & kCy)) out.cy = decode_all(c.dtype, bcy->download());
  if (!check) return out;
  check_guards("openrnn_forward", {{"x", bx.get()}, {"y", by.get()}, {"hx", bhx.get()}, {"hy", bhy.get()},
                                   {"cx", bcx.get()}, {"cy", bcy.get()}, {"weights", bw.get()},
                                   {"workspace", bws.get()}, {"reserve", brs.get()}});
  check_unchanged("openrnn_forward", "x", *bx, x_bytes);
  check_unchanged("openrnn_forward", "hx", *bhx, hx_bytes);
  check_unchanged("openrnn_forward", "cx", *bcx, cx_bytes);
  check_unchanged("openrnn_forward", "weights", *bw, w_bytes);
  check_seq_output(*this, "y", out.y, c.D * Ho);
  EXPECT_FALSE(has_nan(c.dtype, bhy->download()) && (st & kHy)) << "hy: not every element was written";
  EXPECT_FALSE(lstm && (st & kCy) && has_nan(c.dtype, bcy->download())) << "cy: not every element was written";
  // Unrequested outputs were not passed; their buffers must still hold the poison.
  if (!(st & kHy)) check_unchanged("openrnn_forward", "hy (not passed)", *bhy, std::vector<unsigned char>(bhy->bytes(), 0xFF));
  if (!(st & kCy)) check_unchanged("openrnn_forward", "cy (not passed)", *bcy, std::vector<unsigned char>(bcy->bytes(), 0xFF));
  return out;
}

BwdOut Runner::backward(bool check) {
  BwdOut out;
  EXPECT_TRUE(trained) << "harness bug: backward without forward(TRAINING)";
  const bool lstm = c.lstm();
  const unsigned st_in = c.states, st = check ? c.states : kAllStates;
  const auto reserve_after_fwd = brs->download();
  bdx->fill(kPoison);
  bdhx->fill(kPoison);
  bdcx->fill(kPoison);
  bws->fill(kPoison);
  openrnn_status s = openrnn_backward_data(
      handle, rnn, xd, bdy->data(), bdx->data(), (st_in & kDhy) ? bdhy->data() : nullptr,
      (st & kDhx) ? bdhx->data() : nullptr, (lstm && (st_in & kDcy)) ? bdcy->data() : nullptr,
      (lstm && (st & kDcx)) ? bdcx->data() : nullptr, bw->data(), weight_bytes, bws->data(), ws_train, brs->data(),
      rs_train);
  backend_sync(c.backend);
  last_status = check_status(s);
  EXPECT_EQ(s, OPENRNN_STATUS_SUCCESS) << "openrnn_backward_data: " << last_status;
  if (s != OPENRNN_STATUS_SUCCESS) return out;
  trained = false;  // backward_data consumed the reserve
  out.dx = unpack_seq(bdx->download(), c.I);
  if (st & kDhx) out.dhx = decode_all(c.dtype, bdhx->download());
  if (lstm && (st & kDcx)) out.dcx = decode_all(c.dtype, bdcx->download());
  if (check) {
    check_guards("openrnn_backward_data",
                 {{"dy", bdy.get()}, {"dx", bdx.get()}, {"dhy", bdhy.get()}, {"dhx", bdhx.get()},
                  {"dcy", bdcy.get()}, {"dcx", bdcx.get()}, {"weights", bw.get()}, {"workspace", bws.get()},
                  {"reserve", brs.get()}});
    check_unchanged("openrnn_backward_data", "dy", *bdy, dy_bytes);
    check_unchanged("openrnn_backward_data", "dhy", *bdhy, dhy_bytes);
    check_unchanged("openrnn_backward_data", "dcy", *bdcy, dcy_bytes);
    check_unchanged("openrnn_backward_data", "weights", *bw, w_bytes);
    check_seq_output(*this, "dx", out.dx, c.I);
    EXPECT_FALSE((st & kDhx) && has_nan(c.dtype, bdhx->download())) << "dhx: not every element was written";
    EXPECT_FALSE(lstm && (st & kDcx) && has_nan(c.dtype, bdcx->download())) << "dcx: not every element was written";
    const std::vector<unsigned char> poison_h(bdhx->bytes(), 0xFF), poison_c(bdcx->bytes(), 0xFF);
    if (!(st & kDhx)) check_unchanged("openrnn_backward_data", "dhx (not passed)", *bdhx, poison_h);
    if (!(st & kDcx)) check_unchanged("openrnn_backward_data", "dcx (not passed)", *bdcx, poison_c);
  }
  (void)reserve_after_fwd;
  const auto reserve_before_wgrad = brs->download();
  bdw->fill(kPoison);
  bws->fill(kPoison);
  s = openrnn_backward_weights(handle, rnn, OPENRNN_WGRAD_SET, xd, bx->data(), bdw->data(), weight_bytes,
                               bws->data(), ws_train, brs->data(), rs_train);
  backend_sync(c.backend);
  last_status = check_status(s);
  EXPECT_EQ(s, OPENRNN_STATUS_SUCCESS) << "openrnn_backward_weights: " << last_status;
  if (s != OPENRNN_STATUS_SUCCESS) return out;
  const auto dwb = bdw->download();
  out.dw = decode_all(c.dtype, dwb);
  if (check) {
    check_guards("openrnn_backward_weights",
                 {{"x", bx.get()}, {"dweights", bdw.get()}, {"workspace", bws.get()}, {"reserve", brs.get()}});
    check_unchanged("openrnn_backward_weights", "x", *bx, x_bytes);
    check_unchanged("openrnn_backward_weights", "reserve", *brs, reserve_before_wgrad);
    EXPECT_FALSE(has_nan(c.dtype, dwb)) << "dweights: not every element was written by WGRAD_SET";
  }
  return out;
}

std::vector<double> Runner::backward_weights_add(const std::vector<double>& dw_init) {
  bdw->upload(encode_all(c.dtype, dw_init));
  bws->fill(kPoison);
  const openrnn_status s = openrnn_backward_weights(handle, rnn, OPENRNN_WGRAD_ADD, xd, bx->data(), bdw->data(),
                                                    weight_bytes, bws->data(), ws_train, brs->data(), rs_train);
  backend_sync(c.backend);
  last_status = check_status(s);
  EXPECT_EQ(s, OPENRNN_STATUS_SUCCESS) << "openrnn_backward_weights(ADD): " << last_status;
  std::string what;
  EXPECT_TRUE(bdw->guards_intact(&what)) << "backward_weights(ADD) wrote outside dweights: " << what;
  return decode_all(c.dtype, bdw->download());
}

double Runner::functional_via_library() {
  const FwdOut f = forward(OPENRNN_FWD_TRAINING, false);
  if (f.y.empty()) return NAN;
  const RefForward rf{f.y, f.hy, f.cy, {}, {}, {}};
  return ref_functional(prob, rf, dy.data(), (c.states & kDhy) ? dhy.data() : nullptr,
                        (c.lstm() && (c.states & kDcy)) ? dcy.data() : nullptr);
}

}  // namespace ort
