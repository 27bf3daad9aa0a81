// Case tables (see case_table.h).
#include "case_table.h"

#include <algorithm>
#include <set>
#include <string>

#include "numeric_types.h"

namespace ort {

const std::vector<Shape>& table_shapes() {
  static const std::vector<Shape> s = {
      {5, 3, 3, 4},    // small, I != H
      {1, 1, 1, 3},    // the degenerate sizes
      {7, 17, 5, 5},   // odd, B = 5
      {4, 255, 3, 3},  // wide hidden layer
      {16, 5, 1, 7},   // I > H, one sequence, longer T
  };
  return s;
}

std::vector<std::vector<int>> all_pairs(const std::vector<int>& domains,
                                        bool (*pair_ok)(int, int, int, int), unsigned seed) {
  const int F = static_cast<int>(domains.size());
  int V = 1;
  for (int d : domains) V = std::max(V, d);
  // uncovered[((f1 * V + v1) * F + f2) * V + v2] for f1 < f2, admissible pairs only (a flat table: this runs at
  // every process start, once per table).
  std::vector<char> uncovered(static_cast<size_t>(F * V * F * V), 0);
  auto idx = [&](int f1, int v1, int f2, int v2) { return static_cast<size_t>(((f1 * V + v1) * F + f2) * V + v2); };
  size_t left = 0;
  for (int f1 = 0; f1 < F; ++f1)
    for (int f2 = f1 + 1; f2 < F; ++f2)
      for (int v1 = 0; v1 < domains[f1]; ++v1)
        for (int v2 = 0; v2 < domains[f2]; ++v2)
          if (!pair_ok || pair_ok(f1, v1, f2, v2)) {
            uncovered[idx(f1, v1, f2, v2)] = 1;
            ++left;
          }
  Rng rng(seed);
  std::vector<std::vector<int>> rows;
  auto consistent = [&](const std::vector<int>& a, int f, int v) {
    for (int g = 0; g < F; ++g)
      if (g != f && a[g] >= 0 && pair_ok && !(f < g ? pair_ok(f, v, g, a[g]) : pair_ok(g, a[g], f, v))) return false;
    return true;
  };
  // Newly covered pairs that factor f = v adds to the partial row a.
  auto gain_of = [&](const std::vector<int>& a, int f, int v) {
    int n = 0;
    for (int g = 0; g < F; ++g) {
      if (g == f || a[g] < 0) continue;
      n += f < g ? uncovered[idx(f, v, g, a[g])] : uncovered[idx(g, a[g], f, v)];
    }
    return n;
  };
  std::vector<size_t> open;
  while (left > 0) {
    open.clear();
    for (size_t i = 0; i < uncovered.size(); ++i)
      if (uncovered[i]) open.push_back(i);
    std::vector<int> best;
    int best_gain = -1;
    for (int trial = 0; trial < 24; ++trial) {
      // Start from one uncovered pair, then fill the other factors greedily in random order.
      size_t p = open[static_cast<size_t>(rng.below(static_cast<int>(open.size())))];
      const int v2 = static_cast<int>(p % V), f2 = static_cast<int>(p / V % F), v1 = static_cast<int>(p / V / F % V),
                f1 = static_cast<int>(p / V / F / V);
      std::vector<int> a(F, -1);
      a[f1] = v1;
      a[f2] = v2;
      int total = 1;
      std::vector<int> order;
      for (int f = 0; f < F; ++f)
        if (a[f] < 0) order.push_back(f);
      for (size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[static_cast<size_t>(rng.below(static_cast<int>(i)))]);
      bool ok = true;
      for (int f : order) {
        int bv = -1, bg = -1;
        const int start = rng.below(domains[f]);
        for (int k = 0; k < domains[f]; ++k) {
          const int v = (start + k) % domains[f];
          if (!consistent(a, f, v)) continue;
          const int g = gain_of(a, f, v);
          if (g > bg) {
            bg = g;
            bv = v;
          }
        }
        if (bv < 0) {
          ok = false;
          break;
        }
        a[f] = bv;
        total += bg;
      }
      if (ok && total > best_gain) {
        best_gain = total;
        best = a;
      }
    }
    if (best_gain <= 0) break;  // only pairs no admissible row can hold are left
    for (int f1 = 0; f1 < F; ++f1)
      for (int f2 = f1 + 1; f2 < F; ++f2) {
        char& u = uncovered[idx(f1, best[f1], f2, best[f2])];
        if (u) {
          u = 0;
          --left;
        }
      }
    rows.push_back(best);
  }
  return rows;
}

namespace {

const openrnn_cell kCells[] = {OPENRNN_CELL_LSTM, OPENRNN_CELL_GRU, OPENRNN_CELL_GRU_RESET_BEFORE,
                               OPENRNN_CELL_RNN_TANH, OPENRNN_CELL_RNN_RELU};
const openrnn_bias_mode kBias[] = {OPENRNN_BIAS_DOUBLE, OPENRNN_BIAS_SINGLE_INPUT, OPENRNN_BIAS_SINGLE_RECURRENT,
                                   OPENRNN_BIAS_NONE};
const openrnn_data_type kTypes[] = {OPENRNN_DATA_DOUBLE, OPENRNN_DATA_FLOAT, OPENRNN_DATA_HALF,
                                    OPENRNN_DATA_BFLOAT16};

int proj_for(int H) { return H <= 1 ? 0 : (H < 8 ? H - 1 : H / 4); }

void set_shape(Case& c, const Shape& s) {
  c.I = s.I;
  c.H = s.H;
  c.B = s.B;
  c.T = s.T;
}

// Ragged cases alternate the padding fill between a plain and an unusual value.
void set_fill(Case& c, size_t n) { c.fill = c.ragged ? (n % 2 ? -2.5 : 0.0) : 0.0; }

std::vector<Case> dedupe(std::vector<Case> v) {
  std::set<std::string> seen;
  std::vector<Case> out;
  for (auto& c : v)
    if (seen.insert(c.name()).second) out.push_back(c);
  return out;
}

// Factor order of the pair tables.
enum { F_CELL, F_BIAS, F_L, F_D, F_PROJ, F_LEN, F_LAYOUT, F_TYPE, F_SHAPE, F_MODE, F_COUNT };

bool pair_ok(int f1, int v1, int f2, int v2) {
  // A projection needs an LSTM and H > 1 (shape 1 has H = 1).
  auto bad = [](int fa, int va, int fb, int vb) {
    if (fa == F_PROJ && va == 1) {
      if (fb == F_CELL && vb != 0) return true;
      if (fb == F_SHAPE && table_shapes()[static_cast<size_t>(vb)].H <= 1) return true;
    }
    if (fa == F_LEN && va == 1 && fb == F_SHAPE && table_shapes()[static_cast<size_t>(vb)].T <= 1) return true;
    return false;
  };
  return !bad(f1, v1, f2, v2) && !bad(f2, v2, f1, v1);
}

Case from_row(const std::vector<int>& r, const openrnn_data_type* types) {
  Case c;
  c.cell = kCells[r[F_CELL]];
  c.bias = kBias[r[F_BIAS]];
  c.L = 1 + r[F_L];
  c.D = 1 + r[F_D];
  set_shape(c, table_shapes()[static_cast<size_t>(r[F_SHAPE])]);
  c.P = r[F_PROJ] ? proj_for(c.H) : 0;
  c.ragged = r[F_LEN] == 1;
  c.layout = r[F_LAYOUT] ? OPENRNN_LAYOUT_BATCH_MAJOR : OPENRNN_LAYOUT_SEQ_MAJOR;
  c.dtype = types[r[F_TYPE]];
  c.mode = r[F_MODE] ? OPENRNN_FWD_TRAINING : OPENRNN_FWD_INFERENCE;
  c.tag = "pw";
  return c;
}

}  // namespace

std::vector<Case> forward_cases() {
  std::vector<Case> v;
  size_t n = 0;
  // Core product. Shape, layout and projection rotate with the running index so that each appears throughout.
  const size_t core_shapes[] = {0, 2, 4};
  for (auto cell : kCells)
    for (auto bias : kBias)
      for (int L = 1; L <= 2; ++L)
        for (int D = 1; D <= 2; ++D)
          for (bool ragged : {false, true})
            for (auto t : kTypes) {
              Case c;
              c.cell = cell;
              c.bias = bias;
              c.L = L;
              c.D = D;
              c.ragged = ragged;
              c.dtype = t;
              set_shape(c, table_shapes()[core_shapes[n % 3]]);
              c.layout = (n / 3) % 2 ? OPENRNN_LAYOUT_BATCH_MAJOR : OPENRNN_LAYOUT_SEQ_MAJOR;
              c.P = (cell == OPENRNN_CELL_LSTM && (n / 2) % 2) ? proj_for(c.H) : 0;
              set_fill(c, n);
              v.push_back(c);
              ++n;
            }
  const std::vector<int> domains = {5, 4, 3, 2, 2, 2, 2, 4, static_cast<int>(table_shapes().size()), 2};
  for (const auto& r : all_pairs(domains, pair_ok, 1234)) {
    Case c = from_row(r, kTypes);
    set_fill(c, n++);
    v.push_back(c);
  }
  return on_every_backend(dedupe(v));
}

std::vector<Case> backward_cases() {
  std::vector<Case> v;
  size_t n = 0;
  const size_t core_shapes[] = {0, 2, 4};
  for (auto cell : kCells)
    for (auto bias : kBias)
      for (int D = 1; D <= 2; ++D)
        for (bool ragged : {false, true})
          for (auto t : {OPENRNN_DATA_DOUBLE, OPENRNN_DATA_FLOAT}) {
            Case c;
            c.cell = cell;
            c.bias = bias;
            c.L = 1 + static_cast<int>((n / 2) % 2);
            c.D = D;
            c.ragged = ragged;
            c.dtype = t;
            c.mode = OPENRNN_FWD_TRAINING;
            set_shape(c, table_shapes()[core_shapes[n % 3]]);
            c.layout = (n / 4) % 2 ? OPENRNN_LAYOUT_BATCH_MAJOR : OPENRNN_LAYOUT_SEQ_MAJOR;
            c.P = (cell == OPENRNN_CELL_LSTM && (n / 3) % 2) ? proj_for(c.H) : 0;
            set_fill(c, n);
            v.push_back(c);
            ++n;
          }
  // Pairs over every factor; the mode factor is unused (backward is always after a training forward).
  const std::vector<int> domains = {5, 4, 3, 2, 2, 2, 2, 4, static_cast<int>(table_shapes().size()), 1};
  for (const auto& r : all_pairs(domains, pair_ok, 4321)) {
    Case c = from_row(r, kTypes);
    c.mode = OPENRNN_FWD_TRAINING;
    set_fill(c, n++);
    v.push_back(c);
  }
  return on_every_backend(dedupe(v));
}

std::vector<Case> on_every_backend(const std::vector<Case>& cases) {
  std::vector<Case> out;
  for (Backend b : compiled_backends())
    for (Case c : cases) {
      c.backend = b;
      out.push_back(c);
    }
  return out;
}

}  // namespace ort
