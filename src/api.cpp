// C entry points: validate every argument, catch every exception, map it to a status, dispatch to the backend.
// A call that fails validation returns before any backend code runs, so it writes nothing.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "backend.h"
#include "descriptor.h"
#include "dtype.h"
#include "error.h"
#include "openrnn/openrnn.h"

namespace openrnn {

namespace {
thread_local std::string g_last_error;

template <typename F>
openrnn_status guarded(F&& f) noexcept {
  try {
    g_last_error.clear();
    f();
    return OPENRNN_STATUS_SUCCESS;
  } catch (const Error& e) {
    g_last_error = e.what();
    return e.status();
  } catch (const std::bad_alloc&) {
    g_last_error = "out of host memory";
    return OPENRNN_STATUS_ALLOC_FAILED;
  } catch (const std::exception& e) {
    g_last_error = std::string("internal error: ") + e.what();
    return OPENRNN_STATUS_INTERNAL_ERROR;
  } catch (...) {
    g_last_error = "internal error: unknown exception";
    return OPENRNN_STATUS_INTERNAL_ERROR;
  }
}

void need(const void* p, const char* fn, const char* arg) {
  if (!p) bad_param(std::string(fn) + ": " + arg + " must not be null");
}

void check_handle(openrnn_handle_t h, const char* fn) {
  need(h, fn, "handle");
  if (!h->backend) fail(OPENRNN_STATUS_INTERNAL_ERROR, std::string(fn) + ": handle has no backend");
}

// One tensor argument as a byte range, for the overlap checks.
struct Range {
  const char* name;
  const void* p;
  size_t bytes;
};

bool overlap(const Range& a, const Range& b) {
  if (!a.p || !b.p || a.bytes == 0 || b.bytes == 0) return false;
  const auto a0 = reinterpret_cast<uintptr_t>(a.p), b0 = reinterpret_cast<uintptr_t>(b.p);
  return a0 < b0 + b.bytes && b0 < a0 + a.bytes;
}

// Every output must be disjoint from every other argument (inputs included).
template <size_t NO, size_t NI>
void check_no_overlap(const char* fn, const Range (&outs)[NO], const Range (&ins)[NI]) {
  for (size_t i = 0; i < NO; ++i) {
    for (size_t j = i + 1; j < NO; ++j)
      if (overlap(outs[i], outs[j]))
        bad_param(std::string(fn) + ": " + outs[i].name + " overlaps " + outs[j].name);
    for (size_t j = 0; j < NI; ++j)
      if (overlap(outs[i], ins[j])) bad_param(std::string(fn) + ": " + outs[i].name + " overlaps " + ins[j].name);
  }
}

// Checks shared by forward / backward_data / backward_weights: descriptors agree, the weight buffer has the right
// size, and the handle's backend accepts the algorithm.
struct Sizes {
  size_t x, y, h, c, w;  // bytes of x, y, one of hx/hy, one of cx/cy, weights
};

Sizes check_problem(const char* fn, openrnn_handle_t handle, openrnn_rnn_desc_t rnn, openrnn_seq_desc_t xd,
                    openrnn_fwd_mode mode, size_t weight_bytes) {
  check_handle(handle, fn);
  need(rnn, fn, "rnn");
  need(xd, fn, "x_desc");
  const auto& c = rnn->cfg;
  if (xd->data_type != c.data_type)
    bad_param(std::string(fn) + ": x_desc data type " + dtype_name(xd->data_type) +
              " differs from the rnn descriptor's " + dtype_name(c.data_type));
  if (xd->V != c.input_size)
    bad_param(std::string(fn) + ": x_desc vector_size " + std::to_string(xd->V) +
              " differs from the rnn descriptor's input_size " + std::to_string(c.input_size));
  if (weight_bytes != rnn->weight_bytes())
    fail(OPENRNN_STATUS_WEIGHTS_SIZE_MISMATCH, std::string(fn) + ": weight_bytes is " + std::to_string(weight_bytes) +
                                                   ", this descriptor's weight buffer is " +
                                                   std::to_string(rnn->weight_bytes()) + " bytes");
  AlgoQuery q = handle->backend->query_algo(*rnn, *xd, mode, c.algo);
  if (!q.supported) not_supported(std::string(fn) + ": " + q.reason);
  const size_t es = dtype_size(c.data_type);
  const size_t TB = static_cast<size_t>(xd->T) * static_cast<size_t>(xd->B);
  const size_t LDB = static_cast<size_t>(c.num_layers) * rnn->D * xd->B;
  return Sizes{TB * xd->V * es, TB * rnn->D * rnn->Hout * es, LDB * rnn->Hout * es,
               c.cell == OPENRNN_CELL_LSTM ? LDB * c.hidden_size * es : 0, rnn->weight_bytes()};
}

void check_temp(const char* fn, const TempSizes& need_sz, const void* ws, size_t ws_bytes, const void* rs,
                size_t rs_bytes, bool uses_reserve) {
  if (ws_bytes < need_sz.workspace)
    fail(OPENRNN_STATUS_WORKSPACE_TOO_SMALL, std::string(fn) + ": workspace_bytes is " + std::to_string(ws_bytes) +
                                                 ", this problem needs " + std::to_string(need_sz.workspace));
  if (need_sz.workspace > 0 && !ws) bad_param(std::string(fn) + ": workspace must not be null (size > 0)");
  if (uses_reserve) {
    if (rs_bytes < need_sz.reserve)
      fail(OPENRNN_STATUS_RESERVE_TOO_SMALL, std::string(fn) + ": reserve_bytes is " + std::to_string(rs_bytes) +
                                                 ", this problem needs " + std::to_string(need_sz.reserve));
    if (need_sz.reserve > 0 && !rs) bad_param(std::string(fn) + ": reserve must not be null (size > 0)");
  }
}

void check_lstm_only(const char* fn, const openrnn_rnn_desc& rnn, const void* p, const char* arg) {
  if (p && rnn.cfg.cell != OPENRNN_CELL_LSTM)
    bad_param(std::string(fn) + ": " + arg + " must be null for a " + cell_name(rnn.cfg.cell) +
              " (cell states exist for LSTM only)");
}

}  // namespace

void set_last_error(const std::string& message) { g_last_error = message; }

// Default stream / thread hooks: a backend overrides the ones that apply to its device.
void Backend::set_stream(void*) { bad_param("openrnn_set_stream: streams apply to CUDA handles only"); }
void* Backend::stream() const { bad_param("openrnn_get_stream: streams apply to CUDA handles only"); }
void Backend::set_num_threads(int) { bad_param("openrnn_set_num_threads: thread counts apply to CPU handles only"); }
int Backend::num_threads() const { bad_param("openrnn_get_num_threads: thread counts apply to CPU handles only"); }

#ifndef OPENRNN_WITH_CUDA
std::unique_ptr<Backend> make_cuda_backend(int) {
  fail(OPENRNN_STATUS_NO_DEVICE, "openrnn_create_handle: this build of openrnn has no CUDA backend (OPENRNN_CUDA=OFF)");
}
#endif

}  // namespace openrnn

using namespace openrnn;

extern "C" {

int openrnn_version(void) { return OPENRNN_VERSION; }

const char* openrnn_status_string(openrnn_status s) {
  switch (s) {
    case OPENRNN_STATUS_SUCCESS: return "OPENRNN_STATUS_SUCCESS";
    case OPENRNN_STATUS_BAD_PARAM: return "OPENRNN_STATUS_BAD_PARAM";
    case OPENRNN_STATUS_NOT_SUPPORTED: return "OPENRNN_STATUS_NOT_SUPPORTED";
    case OPENRNN_STATUS_WORKSPACE_TOO_SMALL: return "OPENRNN_STATUS_WORKSPACE_TOO_SMALL";
    case OPENRNN_STATUS_RESERVE_TOO_SMALL: return "OPENRNN_STATUS_RESERVE_TOO_SMALL";
    case OPENRNN_STATUS_WEIGHTS_SIZE_MISMATCH: return "OPENRNN_STATUS_WEIGHTS_SIZE_MISMATCH";
    case OPENRNN_STATUS_ALLOC_FAILED: return "OPENRNN_STATUS_ALLOC_FAILED";
    case OPENRNN_STATUS_NO_DEVICE: return "OPENRNN_STATUS_NO_DEVICE";
    case OPENRNN_STATUS_CUDA_ERROR: return "OPENRNN_STATUS_CUDA_ERROR";
    case OPENRNN_STATUS_BLAS_ERROR: return "OPENRNN_STATUS_BLAS_ERROR";
    case OPENRNN_STATUS_INTERNAL_ERROR: return "OPENRNN_STATUS_INTERNAL_ERROR";
  }
  return "OPENRNN_STATUS_UNKNOWN";
}

const char* openrnn_last_error(void) { return g_last_error.c_str(); }

// ---- handle -------------------------------------------------------------------------------------------------------

openrnn_status openrnn_create_handle(openrnn_handle_t* out, openrnn_device device, int ordinal) {
  return guarded([&] {
    need(out, "openrnn_create_handle", "out");
    if (device != OPENRNN_DEVICE_CPU && device != OPENRNN_DEVICE_CUDA)
      bad_param("openrnn_create_handle: device " + std::to_string(static_cast<int>(device)) +
                " is not an openrnn_device value");
    if (ordinal < 0) bad_param("openrnn_create_handle: ordinal must be >= 0, got " + std::to_string(ordinal));
    if (device == OPENRNN_DEVICE_CPU && ordinal != 0)
      bad_param("openrnn_create_handle: ordinal must be 0 for the CPU, got " + std::to_string(ordinal));
    auto h = std::make_unique<openrnn_handle>();
    h->device = device;
    h->ordinal = ordinal;
    h->backend = device == OPENRNN_DEVICE_CPU ? make_cpu_backend() : make_cuda_backend(ordinal);
    *out = h.release();
  });
}

openrnn_status openrnn_destroy_handle(openrnn_handle_t handle) {
  return guarded([&] { delete handle; });
}

openrnn_status openrnn_get_handle_device(openrnn_handle_t handle, openrnn_device* device, int* ordinal) {
  return guarded([&] {
    check_handle(handle, "openrnn_get_handle_device");
    if (!device && !ordinal) bad_param("openrnn_get_handle_device: device and ordinal are both null");
    if (device) *device = handle->device;
    if (ordinal) *ordinal = handle->ordinal;
  });
}

openrnn_status openrnn_set_stream(openrnn_handle_t handle, void* stream) {
  return guarded([&] {
    check_handle(handle, "openrnn_set_stream");
    handle->backend->set_stream(stream);
  });
}

openrnn_status openrnn_get_stream(openrnn_handle_t handle, void** stream) {
  return guarded([&] {
    check_handle(handle, "openrnn_get_stream");
    need(stream, "openrnn_get_stream", "stream");
    *stream = handle->backend->stream();
  });
}

openrnn_status openrnn_set_num_threads(openrnn_handle_t handle, int n) {
  return guarded([&] {
    check_handle(handle, "openrnn_set_num_threads");
    if (n < 1 || n > 1024) bad_param("openrnn_set_num_threads: num_threads must be in 1..1024, got " + std::to_string(n));
    handle->backend->set_num_threads(n);
  });
}

openrnn_status openrnn_get_num_threads(openrnn_handle_t handle, int* n) {
  return guarded([&] {
    check_handle(handle, "openrnn_get_num_threads");
    need(n, "openrnn_get_num_threads", "num_threads");
    *n = handle->backend->num_threads();
  });
}

// ---- RNN descriptor -----------------------------------------------------------------------------------------------

openrnn_status openrnn_rnn_config_init(openrnn_rnn_config* c) {
  return guarded([&] {
    need(c, "openrnn_rnn_config_init", "config");
    std::memset(c, 0, sizeof(*c));
    c->cell = OPENRNN_CELL_LSTM;
    c->input_size = 1;
    c->hidden_size = 1;
    c->proj_size = 0;
    c->num_layers = 1;
    c->bidirectional = 0;
    c->bias_mode = OPENRNN_BIAS_DOUBLE;
    c->data_type = OPENRNN_DATA_FLOAT;
    c->math_mode = OPENRNN_MATH_DEFAULT;
    c->algo = OPENRNN_ALGO_AUTO;
    c->cell_clip = 0.0;
    c->dropout = 0.0;
    c->dropout_seed = 0;
  });
}

openrnn_status openrnn_create_rnn_desc(openrnn_rnn_desc_t* out, const openrnn_rnn_config* config) {
  return guarded([&] {
    need(out, "openrnn_create_rnn_desc", "out");
    need(config, "openrnn_create_rnn_desc", "config");
    validate_config(*config);
    auto d = std::make_unique<openrnn_rnn_desc>();
    d->cfg = *config;
    build_rnn_desc(*d);
    *out = d.release();
  });
}

openrnn_status openrnn_destroy_rnn_desc(openrnn_rnn_desc_t desc) {
  return guarded([&] { delete desc; });
}

openrnn_status openrnn_get_rnn_config(openrnn_rnn_desc_t desc, openrnn_rnn_config* config) {
  return guarded([&] {
    need(desc, "openrnn_get_rnn_config", "desc");
    need(config, "openrnn_get_rnn_config", "config");
    *config = desc->cfg;
  });
}

openrnn_status openrnn_set_dropout_offset(openrnn_rnn_desc_t desc, uint64_t offset) {
  return guarded([&] {
    need(desc, "openrnn_set_dropout_offset", "desc");
    desc->dropout_offset = offset;
  });
}

openrnn_status openrnn_get_dropout_offset(openrnn_rnn_desc_t desc, uint64_t* offset) {
  return guarded([&] {
    need(desc, "openrnn_get_dropout_offset", "desc");
    need(offset, "openrnn_get_dropout_offset", "offset");
    *offset = desc->dropout_offset;
  });
}

// ---- sequence descriptor ------------------------------------------------------------------------------------------

openrnn_status openrnn_create_seq_desc(openrnn_seq_desc_t* out, openrnn_data_type data_type, openrnn_layout layout,
                                       int max_seq_len, int batch_size, int vector_size, const int32_t* seq_lengths,
                                       double padding_fill) {
  return guarded([&] {
    const std::string fn = "openrnn_create_seq_desc: ";
    need(out, "openrnn_create_seq_desc", "out");
    if (data_type < OPENRNN_DATA_FLOAT || data_type > OPENRNN_DATA_BFLOAT16)
      bad_param(fn + "data_type " + std::to_string(static_cast<int>(data_type)) + " is not an openrnn_data_type value");
    if (layout != OPENRNN_LAYOUT_SEQ_MAJOR && layout != OPENRNN_LAYOUT_BATCH_MAJOR)
      bad_param(fn + "layout " + std::to_string(static_cast<int>(layout)) + " is not an openrnn_layout value");
    if (max_seq_len < 1 || max_seq_len > (1 << 24))
      bad_param(fn + "max_seq_len must be in 1..16777216, got " + std::to_string(max_seq_len));
    if (batch_size < 1 || batch_size > (1 << 24))
      bad_param(fn + "batch_size must be in 1..16777216, got " + std::to_string(batch_size));
    if (vector_size < 1 || vector_size > (1 << 24))
      bad_param(fn + "vector_size must be in 1..16777216, got " + std::to_string(vector_size));
    auto d = std::make_unique<openrnn_seq_desc>();
    d->data_type = data_type;
    d->layout = layout;
    d->T = max_seq_len;
    d->B = batch_size;
    d->V = vector_size;
    d->fill = padding_fill;
    d->lengths.assign(static_cast<size_t>(batch_size), max_seq_len);
    if (seq_lengths) {
      for (int b = 0; b < batch_size; ++b) {
        const int32_t len = seq_lengths[b];
        if (len < 1 || len > max_seq_len)
          bad_param(fn + "seq_lengths[" + std::to_string(b) + "] = " + std::to_string(len) + " is outside 1..max_seq_len (" +
                    std::to_string(max_seq_len) + ")");
        d->lengths[static_cast<size_t>(b)] = len;
        if (len != max_seq_len) d->all_full = false;
      }
    }
    *out = d.release();
  });
}

openrnn_status openrnn_destroy_seq_desc(openrnn_seq_desc_t desc) {
  return guarded([&] { delete desc; });
}

openrnn_status openrnn_get_seq_desc(openrnn_seq_desc_t d, openrnn_data_type* data_type, openrnn_layout* layout,
                                    int* max_seq_len, int* batch_size, int* vector_size, int32_t* seq_lengths,
                                    double* padding_fill) {
  return guarded([&] {
    need(d, "openrnn_get_seq_desc", "desc");
    if (data_type) *data_type = d->data_type;
    if (layout) *layout = d->layout;
    if (max_seq_len) *max_seq_len = d->T;
    if (batch_size) *batch_size = d->B;
    if (vector_size) *vector_size = d->V;
    if (seq_lengths) std::memcpy(seq_lengths, d->lengths.data(), d->lengths.size() * sizeof(int32_t));
    if (padding_fill) *padding_fill = d->fill;
  });
}

// ---- weights ------------------------------------------------------------------------------------------------------

openrnn_status openrnn_get_weight_space_size(openrnn_handle_t handle, openrnn_rnn_desc_t rnn, size_t* bytes) {
  return guarded([&] {
    check_handle(handle, "openrnn_get_weight_space_size");
    need(rnn, "openrnn_get_weight_space_size", "rnn");
    need(bytes, "openrnn_get_weight_space_size", "bytes");
    *bytes = rnn->weight_bytes();
  });
}

openrnn_status openrnn_get_weight_param_count(openrnn_rnn_desc_t rnn, int* count) {
  return guarded([&] {
    need(rnn, "openrnn_get_weight_param_count", "rnn");
    need(count, "openrnn_get_weight_param_count", "count");
    *count = static_cast<int>(rnn->weights.params.size());
  });
}

openrnn_status openrnn_get_weight_param(openrnn_rnn_desc_t rnn, int index, openrnn_weight_param* param) {
  return guarded([&] {
    need(rnn, "openrnn_get_weight_param", "rnn");
    need(param, "openrnn_get_weight_param", "param");
    const int n = static_cast<int>(rnn->weights.params.size());
    if (index < 0 || index >= n)
      bad_param("openrnn_get_weight_param: index " + std::to_string(index) + " is outside 0.." + std::to_string(n - 1));
    *param = rnn->weights.params[static_cast<size_t>(index)];
  });
}

openrnn_status openrnn_get_weight_params(openrnn_rnn_desc_t rnn, int layer, int direction, openrnn_weight_kind kind,
                                         openrnn_weight_param* param) {
  return guarded([&] {
    const std::string fn = "openrnn_get_weight_params: ";
    need(rnn, "openrnn_get_weight_params", "rnn");
    need(param, "openrnn_get_weight_params", "param");
    if (layer < 0 || layer >= rnn->cfg.num_layers)
      bad_param(fn + "layer " + std::to_string(layer) + " is outside 0.." + std::to_string(rnn->cfg.num_layers - 1));
    if (direction < 0 || direction >= rnn->D)
      bad_param(fn + "direction " + std::to_string(direction) + " is outside 0.." + std::to_string(rnn->D - 1));
    if (kind < OPENRNN_WEIGHT_IH || kind > OPENRNN_WEIGHT_HR)
      bad_param(fn + "kind " + std::to_string(static_cast<int>(kind)) + " is not an openrnn_weight_kind value");
    const int i = rnn->weights.index[static_cast<size_t>(layer * rnn->D + direction)][kind];
    if (i < 0) {
      std::memset(param, 0, sizeof(*param));
      not_supported(fn + (kind == OPENRNN_WEIGHT_HR ? std::string("weight_hr exists only with a projection (proj_size > 0)")
                                                    : std::string("this bias is absent under the descriptor's bias mode")));
    }
    *param = rnn->weights.params[static_cast<size_t>(i)];
  });
}

// ---- sizes and algorithms -----------------------------------------------------------------------------------------

static void check_mode(const char* fn, openrnn_fwd_mode mode) {
  if (mode != OPENRNN_FWD_INFERENCE && mode != OPENRNN_FWD_TRAINING)
    bad_param(std::string(fn) + ": mode " + std::to_string(static_cast<int>(mode)) + " is not an openrnn_fwd_mode value");
}

openrnn_status openrnn_get_temp_space_sizes(openrnn_handle_t handle, openrnn_rnn_desc_t rnn, openrnn_fwd_mode mode,
                                            openrnn_seq_desc_t x_desc, size_t* workspace_bytes,
                                            size_t* reserve_bytes) {
  return guarded([&] {
    const char* fn = "openrnn_get_temp_space_sizes";
    check_mode(fn, mode);
    check_problem(fn, handle, rnn, x_desc, mode, rnn ? rnn->weight_bytes() : 0);
    if (!workspace_bytes && !reserve_bytes) bad_param(std::string(fn) + ": workspace_bytes and reserve_bytes are both null");
    const TempSizes t = handle->backend->temp_sizes(*rnn, *x_desc, mode);
    if (workspace_bytes) *workspace_bytes = t.workspace;
    if (reserve_bytes) *reserve_bytes = mode == OPENRNN_FWD_TRAINING ? t.reserve : 0;
  });
}

openrnn_status openrnn_query_algo(openrnn_handle_t handle, openrnn_rnn_desc_t rnn, openrnn_fwd_mode mode,
                                  openrnn_seq_desc_t x_desc, openrnn_algo algo, int* supported, openrnn_algo* chosen,
                                  char* reason, size_t reason_len) {
  return guarded([&] {
    const std::string fn = "openrnn_query_algo: ";
    check_handle(handle, "openrnn_query_algo");
    need(rnn, "openrnn_query_algo", "rnn");
    need(x_desc, "openrnn_query_algo", "x_desc");
    need(supported, "openrnn_query_algo", "supported");
    check_mode("openrnn_query_algo", mode);
    if (algo < OPENRNN_ALGO_AUTO || algo > OPENRNN_ALGO_PERSISTENT)
      bad_param(fn + "algo " + std::to_string(static_cast<int>(algo)) + " is not an openrnn_algo value");
    if (reason && reason_len == 0) bad_param(fn + "reason_len must be > 0 when reason is not null");
    if (x_desc->data_type != rnn->cfg.data_type) bad_param(fn + "x_desc and rnn have different data types");
    if (x_desc->V != rnn->cfg.input_size) bad_param(fn + "x_desc vector_size differs from the rnn's input_size");
    const AlgoQuery q = handle->backend->query_algo(*rnn, *x_desc, mode, algo);
    *supported = q.supported ? 1 : 0;
    if (chosen) *chosen = q.chosen;
    if (reason) {
      const std::string& r = q.supported ? std::string() : q.reason;
      const size_t n = r.size() < reason_len - 1 ? r.size() : reason_len - 1;
      std::memcpy(reason, r.data(), n);
      reason[n] = '\0';
    }
  });
}

// ---- compute ------------------------------------------------------------------------------------------------------

openrnn_status openrnn_forward(openrnn_handle_t handle, openrnn_rnn_desc_t rnn, openrnn_fwd_mode mode,
                               openrnn_seq_desc_t x_desc, const void* x, void* y, const void* hx, void* hy,
                               const void* cx, void* cy, const void* weights, size_t weight_bytes, void* workspace,
                               size_t workspace_bytes, void* reserve, size_t reserve_bytes) {
  return guarded([&] {
    const char* fn = "openrnn_forward";
    check_mode(fn, mode);
    const Sizes s = check_problem(fn, handle, rnn, x_desc, mode, weight_bytes);
    need(x, fn, "x");
    need(y, fn, "y");
    need(weights, fn, "weights");
    check_lstm_only(fn, *rnn, cx, "cx");
    check_lstm_only(fn, *rnn, cy, "cy");
    const TempSizes t = handle->backend->temp_sizes(*rnn, *x_desc, mode);
    const bool training = mode == OPENRNN_FWD_TRAINING;
    check_temp(fn, t, workspace, workspace_bytes, reserve, reserve_bytes, training);
    const Range outs[] = {{"y", y, s.y},
                          {"hy", hy, s.h},
                          {"cy", cy, s.c},
                          {"workspace", workspace, t.workspace},
                          {"reserve", training ? reserve : nullptr, t.reserve}};
    const Range ins[] = {{"x", x, s.x}, {"hx", hx, s.h}, {"cx", cx, s.c}, {"weights", weights, s.w}};
    check_no_overlap(fn, outs, ins);
    ForwardArgs a{mode, x, y, hx, hy, cx, cy, weights, workspace, workspace_bytes, training ? reserve : nullptr,
                  training ? reserve_bytes : 0};
    handle->backend->forward(*rnn, *x_desc, a);
  });
}

openrnn_status openrnn_backward_data(openrnn_handle_t handle, openrnn_rnn_desc_t rnn, openrnn_seq_desc_t x_desc,
                                     const void* dy, void* dx, const void* dhy, void* dhx, const void* dcy, void* dcx,
                                     const void* weights, size_t weight_bytes, void* workspace,
                                     size_t workspace_bytes, void* reserve, size_t reserve_bytes) {
  return guarded([&] {
    const char* fn = "openrnn_backward_data";
    const Sizes s = check_problem(fn, handle, rnn, x_desc, OPENRNN_FWD_TRAINING, weight_bytes);
    need(dy, fn, "dy");
    need(dx, fn, "dx");
    need(weights, fn, "weights");
    check_lstm_only(fn, *rnn, dcy, "dcy");
    check_lstm_only(fn, *rnn, dcx, "dcx");
    const TempSizes t = handle->backend->temp_sizes(*rnn, *x_desc, OPENRNN_FWD_TRAINING);
    check_temp(fn, t, workspace, workspace_bytes, reserve, reserve_bytes, true);
    // The reserve is read-modify-write: it must not overlap the inputs either.
    const Range outs[] = {{"dx", dx, s.x},
                          {"dhx", dhx, s.h},
                          {"dcx", dcx, s.c},
                          {"workspace", workspace, t.workspace},
                          {"reserve", reserve, t.reserve}};
    const Range ins[] = {{"dy", dy, s.y}, {"dhy", dhy, s.h}, {"dcy", dcy, s.c}, {"weights", weights, s.w}};
    check_no_overlap(fn, outs, ins);
    BackwardDataArgs a{dy, dx, dhy, dhx, dcy, dcx, weights, workspace, workspace_bytes, reserve, reserve_bytes};
    handle->backend->backward_data(*rnn, *x_desc, a);
  });
}

openrnn_status openrnn_backward_weights(openrnn_handle_t handle, openrnn_rnn_desc_t rnn, openrnn_wgrad_mode wgrad_mode,
                                        openrnn_seq_desc_t x_desc, const void* x, void* dweights, size_t weight_bytes,
                                        void* workspace, size_t workspace_bytes, const void* reserve,
                                        size_t reserve_bytes) {
  return guarded([&] {
    const char* fn = "openrnn_backward_weights";
    if (wgrad_mode != OPENRNN_WGRAD_SET && wgrad_mode != OPENRNN_WGRAD_ADD)
      bad_param(std::string(fn) + ": wgrad_mode " + std::to_string(static_cast<int>(wgrad_mode)) +
                " is not an openrnn_wgrad_mode value");
    const Sizes s = check_problem(fn, handle, rnn, x_desc, OPENRNN_FWD_TRAINING, weight_bytes);
    need(x, fn, "x");
    need(dweights, fn, "dweights");
    const TempSizes t = handle->backend->temp_sizes(*rnn, *x_desc, OPENRNN_FWD_TRAINING);
    check_temp(fn, t, workspace, workspace_bytes, reserve, reserve_bytes, true);
    const Range outs[] = {{"dweights", dweights, s.w}, {"workspace", workspace, t.workspace}};
    const Range ins[] = {{"x", x, s.x}, {"reserve", reserve, t.reserve}};
    check_no_overlap(fn, outs, ins);
    BackwardWeightsArgs a{wgrad_mode, x, dweights, workspace, workspace_bytes, reserve, reserve_bytes};
    handle->backend->backward_weights(*rnn, *x_desc, a);
  });
}

}  // extern "C"
