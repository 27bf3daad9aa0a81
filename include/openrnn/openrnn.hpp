// openrnn.hpp: a header-only C++17 RAII layer over the C API in openrnn.h. It adds no behaviour: every method is one
// C call, failures become openrnn::Exception carrying the status and openrnn_last_error()'s message, and objects
// release their C resources in their destructors. Buffers stay caller-owned, exactly as in the C API.
#ifndef OPENRNN_OPENRNN_HPP
#define OPENRNN_OPENRNN_HPP

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "openrnn/openrnn.h"

namespace openrnn {

class Exception : public std::runtime_error {
 public:
  Exception(openrnn_status status, const std::string& message)
      : std::runtime_error(std::string(openrnn_status_string(status)) + ": " + message), status_(status) {}
  openrnn_status status() const noexcept { return status_; }

 private:
  openrnn_status status_;
};

// Throws Exception when s is not SUCCESS.
inline void check(openrnn_status s) {
  if (s != OPENRNN_STATUS_SUCCESS) throw Exception(s, openrnn_last_error());
}

namespace detail {
// Move-only owner of one C object, destroyed by Destroy.
template <typename T, openrnn_status (*Destroy)(T)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(T p) : p_(p) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  ~Owned() { reset(); }
  T get() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  void reset() noexcept {
    if (p_) Destroy(p_);
    p_ = nullptr;
  }

 private:
  T p_ = nullptr;
};
}  // namespace detail

// A device handle. Handle cpu(OPENRNN_DEVICE_CPU); Handle gpu(OPENRNN_DEVICE_CUDA, 0);
class Handle {
 public:
  explicit Handle(openrnn_device device = OPENRNN_DEVICE_CPU, int ordinal = 0) {
    openrnn_handle_t h = nullptr;
    check(openrnn_create_handle(&h, device, ordinal));
    h_ = Owned(h);
  }
  openrnn_handle_t get() const noexcept { return h_.get(); }
  openrnn_device device() const {
    openrnn_device d;
    check(openrnn_get_handle_device(get(), &d, nullptr));
    return d;
  }
  void set_stream(void* cuda_stream) { check(openrnn_set_stream(get(), cuda_stream)); }
  void* stream() const {
    void* s = nullptr;
    check(openrnn_get_stream(get(), &s));
    return s;
  }
  void set_num_threads(int n) { check(openrnn_set_num_threads(get(), n)); }
  int num_threads() const {
    int n = 0;
    check(openrnn_get_num_threads(get(), &n));
    return n;
  }

 private:
  using Owned = detail::Owned<openrnn_handle_t, openrnn_destroy_handle>;
  Owned h_;
};

// The model configuration with defaults (openrnn_rnn_config_init) and chainable setters.
struct Config : openrnn_rnn_config {
  Config() { check(openrnn_rnn_config_init(this)); }
  Config& with_cell(openrnn_cell c) { cell = c; return *this; }
  Config& with_sizes(int input, int hidden) { input_size = input; hidden_size = hidden; return *this; }
  Config& with_proj(int p) { proj_size = p; return *this; }
  Config& with_layers(int l) { num_layers = l; return *this; }
  Config& with_bidirectional(bool b) { bidirectional = b ? 1 : 0; return *this; }
  Config& with_bias(openrnn_bias_mode m) { bias_mode = m; return *this; }
  Config& with_dtype(openrnn_data_type t) { data_type = t; return *this; }
  Config& with_math(openrnn_math_mode m) { math_mode = m; return *this; }
  Config& with_algo(openrnn_algo a) { algo = a; return *this; }
  Config& with_clip(double c) { cell_clip = c; return *this; }
  Config& with_dropout(double p, uint64_t seed) { dropout = p; dropout_seed = seed; return *this; }
};

class RnnDesc {
 public:
  explicit RnnDesc(const openrnn_rnn_config& cfg) {
    openrnn_rnn_desc_t d = nullptr;
    check(openrnn_create_rnn_desc(&d, &cfg));
    d_ = Owned(d);
  }
  openrnn_rnn_desc_t get() const noexcept { return d_.get(); }
  openrnn_rnn_config config() const {
    openrnn_rnn_config c;
    check(openrnn_get_rnn_config(get(), &c));
    return c;
  }
  void set_dropout_offset(uint64_t offset) { check(openrnn_set_dropout_offset(get(), offset)); }
  uint64_t dropout_offset() const {
    uint64_t o = 0;
    check(openrnn_get_dropout_offset(get(), &o));
    return o;
  }
  // Every canonical tensor in buffer order (PyTorch names, offsets, shapes).
  std::vector<openrnn_weight_param> weight_params() const {
    int n = 0;
    check(openrnn_get_weight_param_count(get(), &n));
    std::vector<openrnn_weight_param> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) check(openrnn_get_weight_param(get(), i, &v[static_cast<size_t>(i)]));
    return v;
  }
  openrnn_weight_param weight_param(int layer, int direction, openrnn_weight_kind kind) const {
    openrnn_weight_param p;
    check(openrnn_get_weight_params(get(), layer, direction, kind, &p));
    return p;
  }
  size_t weight_bytes(const Handle& h) const {
    size_t b = 0;
    check(openrnn_get_weight_space_size(h.get(), get(), &b));
    return b;
  }

 private:
  using Owned = detail::Owned<openrnn_rnn_desc_t, openrnn_destroy_rnn_desc>;
  Owned d_;
};

class SeqDesc {
 public:
  // lengths: empty = every sequence has length max_seq_len; else batch entries in 1..max_seq_len.
  SeqDesc(openrnn_data_type dtype, openrnn_layout layout, int max_seq_len, int batch, int vector_size,
          const std::vector<int32_t>& lengths = {}, double padding_fill = 0.0) {
    if (!lengths.empty() && lengths.size() != static_cast<size_t>(batch))
      throw Exception(OPENRNN_STATUS_BAD_PARAM, "SeqDesc: lengths has " + std::to_string(lengths.size()) +
                                                    " entries, batch is " + std::to_string(batch));
    openrnn_seq_desc_t d = nullptr;
    check(openrnn_create_seq_desc(&d, dtype, layout, max_seq_len, batch, vector_size,
                                  lengths.empty() ? nullptr : lengths.data(), padding_fill));
    d_ = Owned(d);
  }
  openrnn_seq_desc_t get() const noexcept { return d_.get(); }

 private:
  using Owned = detail::Owned<openrnn_seq_desc_t, openrnn_destroy_seq_desc>;
  Owned d_;
};

struct TempSizes {
  size_t workspace = 0;
  size_t reserve = 0;
};

inline TempSizes temp_space_sizes(const Handle& h, const RnnDesc& rnn, openrnn_fwd_mode mode, const SeqDesc& x) {
  TempSizes t;
  check(openrnn_get_temp_space_sizes(h.get(), rnn.get(), mode, x.get(), &t.workspace, &t.reserve));
  return t;
}

// Whether algo can run the problem; reason says why not.
struct AlgoSupport {
  bool supported = false;
  openrnn_algo chosen = OPENRNN_ALGO_STANDARD;
  std::string reason;
};

inline AlgoSupport query_algo(const Handle& h, const RnnDesc& rnn, openrnn_fwd_mode mode, const SeqDesc& x,
                              openrnn_algo algo) {
  AlgoSupport s;
  int ok = 0;
  char reason[512];
  check(openrnn_query_algo(h.get(), rnn.get(), mode, x.get(), algo, &ok, &s.chosen, reason, sizeof(reason)));
  s.supported = ok != 0;
  s.reason = reason;
  return s;
}

// The compute calls, with the C API's arguments in the C API's order (shapes: openrnn.h).
inline void forward(const Handle& h, const RnnDesc& rnn, openrnn_fwd_mode mode, const SeqDesc& x_desc, const void* x,
                    void* y, const void* hx, void* hy, const void* cx, void* cy, const void* weights,
                    size_t weight_bytes, void* workspace, size_t workspace_bytes, void* reserve,
                    size_t reserve_bytes) {
  check(openrnn_forward(h.get(), rnn.get(), mode, x_desc.get(), x, y, hx, hy, cx, cy, weights, weight_bytes, workspace,
                        workspace_bytes, reserve, reserve_bytes));
}

inline void backward_data(const Handle& h, const RnnDesc& rnn, const SeqDesc& x_desc, const void* dy, void* dx,
                          const void* dhy, void* dhx, const void* dcy, void* dcx, const void* weights,
                          size_t weight_bytes, void* workspace, size_t workspace_bytes, void* reserve,
                          size_t reserve_bytes) {
  check(openrnn_backward_data(h.get(), rnn.get(), x_desc.get(), dy, dx, dhy, dhx, dcy, dcx, weights, weight_bytes,
                              workspace, workspace_bytes, reserve, reserve_bytes));
}

inline void backward_weights(const Handle& h, const RnnDesc& rnn, openrnn_wgrad_mode mode, const SeqDesc& x_desc,
                             const void* x, void* dweights, size_t weight_bytes, void* workspace,
                             size_t workspace_bytes, const void* reserve, size_t reserve_bytes) {
  check(openrnn_backward_weights(h.get(), rnn.get(), mode, x_desc.get(), x, dweights, weight_bytes, workspace,
                                 workspace_bytes, reserve, reserve_bytes));
}

inline int version() { return openrnn_version(); }

}  // namespace openrnn

#endif  // OPENRNN_OPENRNN_HPP
