#include "cpu_plan.h"

#include <algorithm>

#include "cpu_gemm.h"
#include "dtype.h"

namespace openrnn {
namespace cpu {

namespace {
// A bump allocator of byte offsets, each sub-buffer rounded up to 64 bytes.
struct Arena {
  size_t used = 0;
  size_t es;
  explicit Arena(size_t e, size_t start = 0) : used(start), es(e) {}
  size_t take(size_t elems) {
    const size_t off = used;
    used += (elems * es + 63) / 64 * 64;
    return off;
  }
};
}  // namespace

Dims make_dims(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x) {
  Dims d{};
  const auto& c = rnn.cfg;
  d.cell = c.cell;
  d.dt = c.data_type;
  d.T = x.T;
  d.B = x.B;
  d.I = c.input_size;
  d.H = c.hidden_size;
  d.P = c.proj_size;
  d.Hout = rnn.Hout;
  d.G = rnn.G;
  d.GH = rnn.G * c.hidden_size;
  d.L = c.num_layers;
  d.D = rnn.D;
  d.W = rnn.D * rnn.Hout;
  d.lstm = c.cell == OPENRNN_CELL_LSTM;
  d.gru_lbr = c.cell == OPENRNN_CELL_GRU;
  d.gru_rb = c.cell == OPENRNN_CELL_GRU_RESET_BEFORE;
  d.rnn = c.cell == OPENRNN_CELL_RNN_TANH || c.cell == OPENRNN_CELL_RNN_RELU;
  d.relu = c.cell == OPENRNN_CELL_RNN_RELU;
  d.proj = c.proj_size > 0;
  d.seq_major = x.layout == OPENRNN_LAYOUT_SEQ_MAJOR;
  d.all_full = x.all_full;
  d.clip = c.cell_clip;
  d.dropout = c.dropout;
  d.nweights = rnn.weights.total_elements;
  d.es = c.data_type == OPENRNN_DATA_DOUBLE ? 8 : 4;
  return d;
}

ResHeader reserve_header(const Dims& d) {
  Arena a(d.es);
  ResHeader h;
  const size_t LDB = static_cast<size_t>(d.L) * d.D * d.B;
  h.H0 = a.take(LDB * d.Hout);
  if (d.lstm) h.C0 = a.take(LDB * d.H);
  h.bytes = a.used;
  return h;
}

namespace {
// Layer l laid out from byte offset base; *end receives the offset just past it.
ResLayer layer_at(const Dims& d, int l, size_t base, size_t* end) {
  Arena a(d.es, base);
  ResLayer r;
  const size_t TB = d.TB();
  r.Y = a.take(TB * d.W);
  if (l > 0 && d.dropout > 0.0) r.Xd = a.take(TB * d.W);
  for (int dir = 0; dir < d.D; ++dir) {
    ResDir& rd = r.dir[dir];
    rd.G = a.take(TB * d.GH);
    if (d.lstm) rd.C = a.take(TB * d.H);
    if (d.proj) {
      rd.HP = a.take(TB * d.H);
      rd.DHP = a.take(TB * d.P);
    }
    if (d.gru_lbr) rd.HN = a.take(TB * d.H);
    if (d.gru_rb) rd.RH = a.take(TB * d.H);
  }
  if (end) *end = a.used;
  return r;
}
size_t layer_bytes(const Dims& d, int l) {
  size_t end = 0;
  layer_at(d, l, 0, &end);
  return end;
}
}  // namespace

ResLayer reserve_layer(const Dims& d, int l) {
  size_t base = reserve_header(d).bytes;
  if (l > 0) base += layer_bytes(d, 0) + static_cast<size_t>(l - 1) * layer_bytes(d, 1);
  return layer_at(d, l, base, nullptr);
}

size_t reserve_bytes(const Dims& d) {
  size_t n = reserve_header(d).bytes + layer_bytes(d, 0);
  if (d.L > 1) n += static_cast<size_t>(d.L - 1) * layer_bytes(d, 1);
  return n;
}

namespace {
size_t weight_elems_if_16bit(const Dims& d) {
  return (d.dt == OPENRNN_DATA_HALF || d.dt == OPENRNN_DATA_BFLOAT16) ? d.nweights : 0;
}
}  // namespace

FwdWs forward_ws(const Dims& d, bool training) {
  Arena a(d.es);
  FwdWs w;
  const size_t nW = weight_elems_if_16bit(d);
  if (nW) w.Wf = a.take(nW);
  const bool native = d.dt == OPENRNN_DATA_FLOAT || d.dt == OPENRNN_DATA_DOUBLE;
  if (fwd_needs_x0(d, native)) w.X0 = a.take(d.TB() * d.I);
  w.bx = a.take(d.GH);
  if (d.gru_lbr) w.bhn = a.take(d.H);
  const int NR = d.es == 8 ? kNR<double> : kNR<float>;
  w.Pk = a.take(static_cast<size_t>(d.G) * ceil_div(d.H, NR) * d.Hout * NR);
  if (d.proj) w.Pr = a.take(static_cast<size_t>(ceil_div(d.P, NR)) * d.H * NR);
  if (!training) {
    w.Ya = a.take(d.TB() * d.W);
    if (d.L > 1) w.Yb = a.take(d.TB() * d.W);
    w.XW = a.take(d.TB() * d.GH);
    const size_t BH = static_cast<size_t>(d.B) * d.H;
    if (d.lstm) w.C = a.take(BH);
    if (d.proj) w.HP = a.take(BH);
    if (d.gru_lbr) w.HN = a.take(BH);
    if (d.gru_rb) w.RH = a.take(BH);
    const size_t LDB = static_cast<size_t>(d.L) * d.D * d.B;
    w.H0 = a.take(LDB * d.Hout);
    if (d.lstm) w.C0 = a.take(LDB * d.H);
  }
  w.bytes = a.used;
  return w;
}

BwdWs backward_ws(const Dims& d) {
  Arena a(d.es);
  BwdWs w;
  const size_t nW = weight_elems_if_16bit(d);
  if (nW) w.Wf = a.take(nW);
  const size_t wide = d.TB() * static_cast<size_t>(std::max(d.I, d.W));
  w.dA = a.take(wide);
  w.dB = a.take(wide);
  const size_t B = static_cast<size_t>(d.B);
  w.DH = a.take(B * d.Hout);
  w.DHD = a.take(B * d.Hout);
  w.DC = a.take(B * d.H);
  if (d.proj) w.DHT = a.take(B * d.H);
  if (d.gru_rb) w.DRH = a.take(B * d.H);
  w.bytes = a.used;
  return w;
}

WgWs wgrad_ws(const Dims& d) {
  Arena a(d.es);
  WgWs w;
  const bool native = d.dt == OPENRNN_DATA_FLOAT || d.dt == OPENRNN_DATA_DOUBLE;
  if (wg_needs_x0(d, native)) w.X0 = a.take(d.TB() * d.I);
  const size_t nW = weight_elems_if_16bit(d);
  if (nW) w.Gw = a.take(nW);
  w.bytes = a.used;
  return w;
}

}  // namespace cpu
}  // namespace openrnn
