// The float64 reference (see reference.h). Deliberately naive: one sequence, one step, one matrix-vector product at
// a time, so that every line can be checked against the equations in openrnn.h / DESIGN.md by reading it.
#include "reference.h"

#include <cmath>
#include <stdexcept>

#include "numeric_types.h"

namespace ort {

int RefConfig::G() const {
  switch (cell) {
    case OPENRNN_CELL_LSTM: return 4;
    case OPENRNN_CELL_GRU:
    case OPENRNN_CELL_GRU_RESET_BEFORE: return 3;
    default: return 1;
  }
}

std::vector<RefTensor> ref_weight_layout(const RefConfig& c) {
  std::vector<RefTensor> out;
  size_t off = 0;
  const int GH = c.G() * c.H;
  static const char* stems[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"};
  for (int l = 0; l < c.L; ++l) {
    for (int d = 0; d < c.D; ++d) {
      auto add = [&](openrnn_weight_kind k, int rows, int cols) {
        RefTensor t{l, d, k, off, rows, cols,
                    std::string(stems[k]) + "_l" + std::to_string(l) + (d ? "_reverse" : "")};
        off += t.size();
        out.push_back(t);
      };
      add(OPENRNN_WEIGHT_IH, GH, c.layer_in(l));
      add(OPENRNN_WEIGHT_HH, GH, c.Hout());
      if (c.has_bias_ih()) add(OPENRNN_BIAS_IH, GH, 1);
      if (c.has_bias_hh()) add(OPENRNN_BIAS_HH, GH, 1);
      if (c.P > 0) add(OPENRNN_WEIGHT_HR, c.P, c.H);
    }
  }
  return out;
}

size_t ref_weight_count(const RefConfig& c) {
  size_t n = 0;
  for (const auto& t : ref_weight_layout(c)) n += t.size();
  return n;
}

// ---- Philox4x32-10 and dropout (from the specification in the harness brief / docs/numerics.md) -----------------
void ref_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

uint32_t ref_dropout_threshold(double p) {
  double t = std::floor(p * 16777216.0 + 0.5);
  if (t < 0) t = 0;
  if (t > 16777216.0) t = 16777216.0;
  return static_cast<uint32_t>(t);
}

bool ref_dropout_keep(uint64_t seed, uint64_t offset, int layer, uint64_t idx, uint32_t thr) {
  const uint64_t q = idx >> 2;
  const uint32_t ctr[4] = {static_cast<uint32_t>(q & 0xffffffffu), static_cast<uint32_t>(q >> 32),
                           static_cast<uint32_t>(offset & 0xffffffffu),
                           static_cast<uint32_t>(offset >> 32) ^ (static_cast<uint32_t>(layer) << 16)};
  const uint32_t key[2] = {static_cast<uint32_t>(seed & 0xffffffffu), static_cast<uint32_t>(seed >> 32)};
  uint32_t r[4];
  ref_philox(ctr, key, r);
  return (r[idx & 3] >> 8) >= thr;
}

// ---- one step ----------------------------------------------------------------------------------------------------
namespace {

double sigm(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Pointers to the tensors of one (layer, direction); absent ones are null.
struct LayerW {
  const double *ih = nullptr, *hh = nullptr, *bih = nullptr, *bhh = nullptr, *hr = nullptr;
  size_t o_ih = 0, o_hh = 0, o_bih = SIZE_MAX, o_bhh = SIZE_MAX, o_hr = SIZE_MAX;
  int in = 0;
};

LayerW layer_weights(const RefConfig& c, const std::vector<RefTensor>& lay, const double* w, int l, int d) {
  LayerW r;
  r.in = c.layer_in(l);
  for (const auto& t : lay) {
    if (t.layer != l || t.dir != d) continue;
    switch (t.kind) {
      case OPENRNN_WEIGHT_IH: r.ih = w + t.offset; r.o_ih = t.offset; break;
      case OPENRNN_WEIGHT_HH: r.hh = w + t.offset; r.o_hh = t.offset; break;
      case OPENRNN_BIAS_IH: r.bih = w + t.offset; r.o_bih = t.offset; break;
      case OPENRNN_BIAS_HH: r.bhh = w + t.offset; r.o_bhh = t.offset; break;
      case OPENRNN_WEIGHT_HR: r.hr = w + t.offset; r.o_hr = t.offset; break;
    }
  }
  return r;
}

// Everything one step computes. GH = G*H.
struct Step {
  std::vector<double> xp;    // [GH] W_ih x + b_ih
  std::vector<double> hp;    // [GH] W_hh h + b_hh (reset-before GRU: the n rows are W_hn (r*h) + b_hn)
  std::vector<double> act;   // [GH] LSTM i f g o; GRU r z n; RNN h
  std::vector<double> craw;  // [H] LSTM: f*c + i*g before clipping
  std::vector<double> c;     // [H] LSTM: after clipping
  std::vector<double> ht;    // [H] the cell output before the projection
  std::vector<double> hout;  // [Hout]
  std::vector<double> rh;    // [H] reset-before GRU: r * h_prev
};

Step step_forward(const RefConfig& c, const LayerW& W, const double* in, const double* hprev, const double* cprev) {
  const int H = c.H, GH = c.G() * H, Ho = c.Hout();
  Step s;
  s.xp.assign(GH, 0.0);
  s.hp.assign(GH, 0.0);
  s.act.assign(GH, 0.0);
  for (int j = 0; j < GH; ++j) {
    double a = W.bih ? W.bih[j] : 0.0;
    for (int k = 0; k < W.in; ++k) a += W.ih[static_cast<size_t>(j) * W.in + k] * in[k];
    s.xp[j] = a;
  }
  const bool rb = c.cell == OPENRNN_CELL_GRU_RESET_BEFORE;
  const int rows_h = rb ? 2 * H : GH;  // reset-before: the n rows need r first
  for (int j = 0; j < rows_h; ++j) {
    double a = W.bhh ? W.bhh[j] : 0.0;
    for (int k = 0; k < Ho; ++k) a += W.hh[static_cast<size_t>(j) * Ho + k] * hprev[k];
    s.hp[j] = a;
  }
  s.ht.assign(H, 0.0);
  switch (c.cell) {
    case OPENRNN_CELL_LSTM: {
      s.craw.assign(H, 0.0);
      s.c.assign(H, 0.0);
      for (int u = 0; u < H; ++u) {
        const double i = sigm(s.xp[u] + s.hp[u]);
        const double f = sigm(s.xp[H + u] + s.hp[H + u]);
        const double g = std::tanh(s.xp[2 * H + u] + s.hp[2 * H + u]);
        const double o = sigm(s.xp[3 * H + u] + s.hp[3 * H + u]);
        s.act[u] = i;
        s.act[H + u] = f;
        s.act[2 * H + u] = g;
        s.act[3 * H + u] = o;
        const double cr = f * cprev[u] + i * g;
        s.craw[u] = cr;
        s.c[u] = c.clip > 0 ? std::fmin(std::fmax(cr, -c.clip), c.clip) : cr;
        s.ht[u] = o * std::tanh(s.c[u]);
      }
      break;
    }
    case OPENRNN_CELL_GRU:
    case OPENRNN_CELL_GRU_RESET_BEFORE: {
      for (int u = 0; u < H; ++u) {
        s.act[u] = sigm(s.xp[u] + s.hp[u]);
        s.act[H + u] = sigm(s.xp[H + u] + s.hp[H + u]);
      }
      if (rb) {
        s.rh.assign(H, 0.0);
        for (int u = 0; u < H; ++u) s.rh[u] = s.act[u] * hprev[u];
        for (int j = 2 * H; j < 3 * H; ++j) {
          double a = W.bhh ? W.bhh[j] : 0.0;
          for (int k = 0; k < H; ++k) a += W.hh[static_cast<size_t>(j) * H + k] * s.rh[k];
          s.hp[j] = a;
        }
      }
      for (int u = 0; u < H; ++u) {
        const double r = s.act[u], z = s.act[H + u];
        const double n = rb ? std::tanh(s.xp[2 * H + u] + s.hp[2 * H + u])
                            : std::tanh(s.xp[2 * H + u] + r * s.hp[2 * H + u]);
        s.act[2 * H + u] = n;
        s.ht[u] = (1.0 - z) * n + z * hprev[u];
      }
      break;
    }
    case OPENRNN_CELL_RNN_TANH:
    case OPENRNN_CELL_RNN_RELU: {
      for (int u = 0; u < H; ++u) {
        const double pre = s.xp[u] + s.hp[u];
        s.act[u] = c.cell == OPENRNN_CELL_RNN_TANH ? std::tanh(pre) : (pre > 0 ? pre : 0.0);
        s.ht[u] = s.act[u];
      }
      break;
    }
  }
  if (c.P > 0) {
    s.hout.assign(Ho, 0.0);
    for (int p = 0; p < c.P; ++p) {
      double a = 0;
      for (int u = 0; u < H; ++u) a += W.hr[static_cast<size_t>(p) * H + u] * s.ht[u];
      s.hout[p] = a;
    }
  } else {
    s.hout = s.ht;
  }
  return s;
}

// Backward of one step. dhout [Hout]: gradient w.r.t. this step's output (y plus the next step's recurrence).
// dc [H]: gradient w.r.t. c' from the next step (LSTM). Accumulates weight gradients into dw (indexed like the
// weight buffer) and dIn [I_l]; returns the gradients w.r.t. h_prev [Hout] and c_prev [H].
void step_backward(const RefConfig& c, const LayerW& W, const Step& s, const double* in, const double* hprev,
                   const double* cprev, const double* dhout, const double* dc_next, double* dw, double* din,
                   double* dh_prev, double* dc_prev) {
  const int H = c.H, GH = c.G() * H, Ho = c.Hout();
  std::vector<double> dht(H, 0.0);
  if (c.P > 0) {
    for (int p = 0; p < c.P; ++p) {
      for (int u = 0; u < H; ++u) {
        dht[u] += W.hr[static_cast<size_t>(p) * H + u] * dhout[p];
        dw[W.o_hr + static_cast<size_t>(p) * H + u] += dhout[p] * s.ht[u];
      }
    }
  } else {
    for (int u = 0; u < H; ++u) dht[u] = dhout[u];
  }
  std::vector<double> dx(GH, 0.0), dh(GH, 0.0);  // gradients w.r.t. xp and hp
  for (int k = 0; k < Ho; ++k) dh_prev[k] = 0.0;
  const bool rb = c.cell == OPENRNN_CELL_GRU_RESET_BEFORE;
  switch (c.cell) {
    case OPENRNN_CELL_LSTM: {
      for (int u = 0; u < H; ++u) {
        const double i = s.act[u], f = s.act[H + u], g = s.act[2 * H + u], o = s.act[3 * H + u];
        const double tc = std::tanh(s.c[u]);
        double dcv = dc_next[u] + dht[u] * o * (1.0 - tc * tc);
        if (c.clip > 0 && !(std::fabs(s.craw[u]) < c.clip)) dcv = 0.0;  // the clamp is flat: no gradient
        dx[u] = dcv * g * i * (1.0 - i);
        dx[H + u] = dcv * cprev[u] * f * (1.0 - f);
        dx[2 * H + u] = dcv * i * (1.0 - g * g);
        dx[3 * H + u] = dht[u] * tc * o * (1.0 - o);
        dc_prev[u] = dcv * f;
      }
      dh = dx;
      break;
    }
    case OPENRNN_CELL_GRU:
    case OPENRNN_CELL_GRU_RESET_BEFORE: {
      std::vector<double> dr(H, 0.0);
      for (int u = 0; u < H; ++u) {
        const double z = s.act[H + u], n = s.act[2 * H + u];
        const double dn = dht[u] * (1.0 - z);
        const double dz = dht[u] * (hprev[u] - n);
        dh_prev[u] += dht[u] * z;
        const double dpn = dn * (1.0 - n * n);
        dx[2 * H + u] = dpn;
        if (rb) {
          dh[2 * H + u] = dpn;
        } else {
          dh[2 * H + u] = dpn * s.act[u];
          dr[u] = dpn * s.hp[2 * H + u];
        }
        dx[H + u] = dh[H + u] = dz * z * (1.0 - z);
      }
      if (rb) {  // hp_n = W_hn (r*h) + b_hn: gradient w.r.t. r*h, then r and h_prev
        for (int k = 0; k < H; ++k) {
          double drh = 0;
          for (int j = 0; j < H; ++j) drh += W.hh[static_cast<size_t>(2 * H + j) * H + k] * dh[2 * H + j];
          dr[k] = drh * hprev[k];
          dh_prev[k] += drh * s.act[k];
        }
      }
      for (int u = 0; u < H; ++u) {
        const double r = s.act[u];
        dx[u] = dh[u] = dr[u] * r * (1.0 - r);
      }
      break;
    }
    case OPENRNN_CELL_RNN_TANH:
    case OPENRNN_CELL_RNN_RELU: {
      for (int u = 0; u < H; ++u) {
        const double h = s.act[u];
        dx[u] = dh[u] = c.cell == OPENRNN_CELL_RNN_TANH ? dht[u] * (1.0 - h * h) : (h > 0 ? dht[u] : 0.0);
      }
      break;
    }
  }
  // Input side: W_ih, b_ih, and the layer input.
  for (int j = 0; j < GH; ++j) {
    for (int k = 0; k < W.in; ++k) {
      dw[W.o_ih + static_cast<size_t>(j) * W.in + k] += dx[j] * in[k];
      din[k] += W.ih[static_cast<size_t>(j) * W.in + k] * dx[j];
    }
    if (W.bih) dw[W.o_bih + j] += dx[j];
  }
  // Recurrent side: W_hh, b_hh, h_prev (reset-before n rows act on r*h, handled above for h_prev).
  for (int j = 0; j < GH; ++j) {
    const bool n_row_rb = rb && j >= 2 * H;
    const double* hv = n_row_rb ? s.rh.data() : hprev;
    for (int k = 0; k < Ho; ++k) {
      dw[W.o_hh + static_cast<size_t>(j) * Ho + k] += dh[j] * hv[k];
      if (!n_row_rb) dh_prev[k] += W.hh[static_cast<size_t>(j) * Ho + k] * dh[j];
    }
    if (W.bhh) dw[W.o_bhh + j] += dh[j];
  }
}

size_t at(int t, int b, int B, int width) { return (static_cast<size_t>(t) * B + b) * width; }

}  // namespace

// ---- whole network -----------------------------------------------------------------------------------------------
RefForward ref_forward(const RefProblem& p, const std::vector<double>& w, const double* x, const double* hx,
                       const double* cx, openrnn_data_type rounding) {
  const RefConfig& c = p.cfg;
  const int T = p.T, B = p.B, H = c.H, Ho = c.Hout(), D = c.D, W2 = D * Ho;
  if (w.size() != ref_weight_count(c)) throw std::runtime_error("ref_forward: weight vector has the wrong size");
  const auto lay = ref_weight_layout(c);
  RefForward f;
  f.hy.assign(static_cast<size_t>(c.L) * D * B * Ho, 0.0);
  if (c.lstm()) f.cy.assign(static_cast<size_t>(c.L) * D * B * H, 0.0);
  f.h_prev.resize(static_cast<size_t>(c.L) * D);
  f.c_prev.resize(static_cast<size_t>(c.L) * D);
  std::vector<double> prev_out;  // the previous layer's output [T, B, D*Hout]
  const uint32_t thr = ref_dropout_threshold(c.dropout);
  const bool drop = c.training && c.dropout > 0;
  for (int l = 0; l < c.L; ++l) {
    const int In = c.layer_in(l);
    std::vector<double> in(static_cast<size_t>(T) * B * In, 0.0);
    for (int t = 0; t < T; ++t) {
      for (int b = 0; b < B; ++b) {
        if (t >= p.len[b]) continue;
        for (int u = 0; u < In; ++u) {
          const size_t i = at(t, b, B, In) + u;
          if (l == 0) {
            in[i] = x[i];
          } else {
            const bool keep = !drop || ref_dropout_keep(c.seed, c.offset, l, i, thr);
            in[i] = keep ? prev_out[i] * (drop ? 1.0 / (1.0 - c.dropout) : 1.0) : 0.0;
          }
        }
      }
    }
    std::vector<double> out(static_cast<size_t>(T) * B * W2, p.fill);
    for (int d = 0; d < D; ++d) {
      const LayerW Wl = layer_weights(c, lay, w.data(), l, d);
      const size_t sd = static_cast<size_t>(l) * D + d;
      auto& hp_tape = f.h_prev[sd];
      auto& cp_tape = f.c_prev[sd];
      hp_tape.assign(static_cast<size_t>(T) * B * Ho, 0.0);
      cp_tape.assign(static_cast<size_t>(T) * B * H, 0.0);
      for (int b = 0; b < B; ++b) {
        std::vector<double> h(Ho, 0.0), cs(H, 0.0);
        const size_t hs = (sd * B + b) * Ho, cs_off = (sd * B + b) * H;
        if (hx) for (int k = 0; k < Ho; ++k) h[k] = hx[hs + k];
        if (cx && c.lstm()) for (int k = 0; k < H; ++k) cs[k] = cx[cs_off + k];
        const int len = p.len[b];
        for (int s = 0; s < len; ++s) {
          const int t = d == 0 ? s : len - 1 - s;
          std::copy(h.begin(), h.end(), hp_tape.begin() + at(t, b, B, Ho));
          std::copy(cs.begin(), cs.end(), cp_tape.begin() + at(t, b, B, H));
          const Step st = step_forward(c, Wl, &in[at(t, b, B, In)], h.data(), cs.data());
          h = st.hout;
          if (c.lstm()) cs = st.c;
          for (int k = 0; k < Ho; ++k) out[at(t, b, B, W2) + d * Ho + k] = round_to(rounding, h[k]);
        }
        for (int k = 0; k < Ho; ++k) f.hy[hs + k] = round_to(rounding, h[k]);
        if (c.lstm()) for (int k = 0; k < H; ++k) f.cy[cs_off + k] = round_to(rounding, cs[k]);
      }
    }
    f.layer_in.push_back(std::move(in));
    prev_out = std::move(out);
  }
  f.y = std::move(prev_out);
  return f;
}

RefGrads ref_backward(const RefProblem& p, const std::vector<double>& w, const RefForward& f, const double* dy,
                      const double* dhy, const double* dcy) {
  const RefConfig& c = p.cfg;
  const int T = p.T, B = p.B, H = c.H, Ho = c.Hout(), D = c.D, W2 = D * Ho;
  const auto lay = ref_weight_layout(c);
  RefGrads g;
  g.dw.assign(w.size(), 0.0);
  g.dhx.assign(static_cast<size_t>(c.L) * D * B * Ho, 0.0);
  if (c.lstm()) g.dcx.assign(static_cast<size_t>(c.L) * D * B * H, 0.0);
  // Gradient w.r.t. the current layer's output, [T, B, D*Hout]; zero at padding steps.
  std::vector<double> dout(static_cast<size_t>(T) * B * W2, 0.0);
  for (int t = 0; t < T; ++t)
    for (int b = 0; b < B; ++b)
      if (t < p.len[b])
        for (int k = 0; k < W2; ++k) dout[at(t, b, B, W2) + k] = dy[at(t, b, B, W2) + k];
  const uint32_t thr = ref_dropout_threshold(c.dropout);
  const bool drop = c.training && c.dropout > 0;
  for (int l = c.L - 1; l >= 0; --l) {
    const int In = c.layer_in(l);
    const auto& in = f.layer_in[static_cast<size_t>(l)];
    std::vector<double> din(static_cast<size_t>(T) * B * In, 0.0);
    for (int d = 0; d < D; ++d) {
      const LayerW Wl = layer_weights(c, lay, w.data(), l, d);
      const size_t sd = static_cast<size_t>(l) * D + d;
      for (int b = 0; b < B; ++b) {
        std::vector<double> dh(Ho, 0.0), dc(H, 0.0), dhp(Ho), dcp(H, 0.0), dho(Ho);
        const size_t hs = (sd * B + b) * Ho, cs_off = (sd * B + b) * H;
        if (dhy) for (int k = 0; k < Ho; ++k) dh[k] = dhy[hs + k];
        if (dcy && c.lstm()) for (int k = 0; k < H; ++k) dc[k] = dcy[cs_off + k];
        const int len = p.len[b];
        for (int s = len - 1; s >= 0; --s) {
          const int t = d == 0 ? s : len - 1 - s;
          const double* hprev = &f.h_prev[sd][at(t, b, B, Ho)];
          const double* cprev = &f.c_prev[sd][at(t, b, B, H)];
          const Step st = step_forward(c, Wl, &in[at(t, b, B, In)], hprev, cprev);
          for (int k = 0; k < Ho; ++k) dho[k] = dout[at(t, b, B, W2) + d * Ho + k] + dh[k];
          std::fill(dcp.begin(), dcp.end(), 0.0);
          step_backward(c, Wl, st, &in[at(t, b, B, In)], hprev, cprev, dho.data(), dc.data(), g.dw.data(),
                        &din[at(t, b, B, In)], dhp.data(), dcp.data());
          dh = dhp;
          dc = dcp;
        }
        for (int k = 0; k < Ho; ++k) g.dhx[hs + k] = dh[k];
        if (c.lstm()) for (int k = 0; k < H; ++k) g.dcx[cs_off + k] = dc[k];
      }
    }
    if (l == 0) {
      g.dx = std::move(din);
    } else {
      // Through the dropout of this layer's input into the previous layer's output.
      for (size_t i = 0; i < din.size(); ++i) {
        if (drop) din[i] = ref_dropout_keep(c.seed, c.offset, l, i, thr) ? din[i] / (1.0 - c.dropout) : 0.0;
      }
      dout = std::move(din);
    }
  }
  return g;
}

double ref_functional(const RefProblem& p, const RefForward& f, const double* dy, const double* dhy,
                      const double* dcy) {
  const int W2 = p.cfg.D * p.cfg.Hout();
  double s = 0;
  for (int t = 0; t < p.T; ++t)
    for (int b = 0; b < p.B; ++b)
      if (t < p.len[b] && dy)
        for (int k = 0; k < W2; ++k) s += dy[at(t, b, p.B, W2) + k] * f.y[at(t, b, p.B, W2) + k];
  if (dhy) for (size_t i = 0; i < f.hy.size(); ++i) s += dhy[i] * f.hy[i];
  if (dcy) for (size_t i = 0; i < f.cy.size(); ++i) s += dcy[i] * f.cy[i];
  return s;
}

}  // namespace ort
