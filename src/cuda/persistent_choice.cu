// PERSISTENT, host side: the kernel registries (every compiled forward and backward configuration), the rules that
// choose one for a problem, the developer switches that steer them, and the choice's trace (persistent_choice.h).
// Moved out of persistent_algo.cu in session 39, unchanged.
#include "persistent_choice.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "standard_plan.h"  // env_switch01, env_int

namespace openrnn {
namespace cuda {
namespace persist {
namespace {

const std::vector<std::unique_ptr<Kernel>>& all_kernels() {
  static const std::vector<std::unique_ptr<Kernel>> k = [] {
    std::vector<std::unique_ptr<Kernel>> v;
    add_kernels_f32(v);
    add_kernels_bf16(v);
    add_kernels_f16(v);
    add_kernels_v6_f32(v);
    add_kernels_v6_bf16(v);
    add_kernels_v6_f16(v);
    add_kernels_v7_bf16(v);
    add_kernels_v7_f16(v);
    add_kernels_v9_bf16(v);
    add_kernels_v9_f16(v);
    add_kernels_v10_bf16(v);
    add_kernels_v10_f16(v);
    add_kernels_v10_f32(v);
    return v;
  }();
  return k;
}

// OPENRNN_PERSIST_V6=0 (developer switch for A/B timing and tests, read at every call): the forward never takes
// the v6 small-batch kernel.
bool persist_v6_disabled() { return env_switch01("OPENRNN_PERSIST_V6") == 0; }

bool v7_shape_allowed(const Kernel* k) {
  const char* e = std::getenv("OPENRNN_PERSIST_V7_SHAPE");
  int mb = 0, ub = 0;
  if (!e || std::sscanf(e, "%dx%d", &mb, &ub) != 2) return true;
  return k->bc() * 2 == mb && k->ub() == ub;
}

// OPENRNN_PERSIST_V6_SHAPE=CxBC (developer switch for A/B timing and tests, read at every call): only the v6
// configuration with clusters of C CTAs and tiles of BC columns (where there is none, or it cannot take the problem
// in one wave, v4 / v7 run), whatever the batch-size limits of the rule. {0, 0}: not set.
struct V6Shape {
  int c = 0, bc = 0;
};

V6Shape v6_shape_forced() {
  const char* e = std::getenv("OPENRNN_PERSIST_V6_SHAPE");
  V6Shape s;
  if (!e || std::sscanf(e, "%dx%d", &s.c, &s.bc) != 2) return V6Shape{};
  return s;
}

// OPENRNN_PERSIST_V9 (developer switch, read at every call): "0" the forward never takes the v9 tensor-core cluster
// kernel, "1" takes it first wherever a tile fits in one wave; OPENRNN_PERSIST_V9_NBS=n: only tiles of n sequences.
int persist_v9_mode() { return env_switch01("OPENRNN_PERSIST_V9"); }

int v9_nbs_forced() { return env_int("OPENRNN_PERSIST_V9_NBS"); }

// OPENRNN_PERSIST_V10 (developer switch, read at every call): "0" the forward never takes a v10 kernel (any H,
// float32 included), "1" takes it first wherever its plan fits; OPENRNN_PERSIST_V10_NBS=n: only tiles of n sequences.
int persist_v10_mode() { return env_switch01("OPENRNN_PERSIST_V10"); }

int v10_nbs_forced() { return env_int("OPENRNN_PERSIST_V10_NBS"); }

// OPENRNN_PERSIST_V10_UB=n (developer switch, read at every call): only v10 configurations of n units per CTA.
int v10_ub_forced() { return env_int("OPENRNN_PERSIST_V10_UB"); }

// Where v10 runs by default: wherever its plan fits, except float32 at H = 512 for B*D = 3 .. kV10F32MinB512 - 1,
// where v6's tiles of one and two sequences per cluster (h through DSMEM; B <= 14) beat v10's two L2 round trips per
// step (H200, µs/step, v6 -> v10: B = 4 2.13 -> 2.57, B = 12 3.33 -> 3.68; from B = 15 on v4's cluster mode runs
// instead: B = 16 5.24 -> 3.87, B = 64 13.5 -> 10.6; docs/performance.md, "PERSISTENT v10 in float32"). At B*D <= 2
// v10's tile of one (tagged words, one group of 64 CTAs per sequence) beats v6 (H100, session 16, µs/step, v6 -> v10:
// LSTM B = 1 2.24 -> 1.61, B = 2 2.30 -> 1.67; GRU B = 1 1.87 -> 1.55, B = 2 1.89-1.98 -> 1.57); at B*D = 3-4 the
// 16-unit tile of one (groups of 32 CTAs) does (H100, session 17, v6 -> v10: LSTM B = 4 2.15 -> 1.80, B = 3 2.13 ->
// 1.80, GRU B = 4 1.75 -> 1.70, LSTM B = 2 D = 2 2.45 -> 2.13), and at B*D <= 2 ties the 8-unit one.
constexpr int kV10F32MinB512 = 15;

bool v10_preferred(const Kernel* k, openrnn_data_type dt, int H, int B, int D) {
  if (dt != OPENRNN_DATA_FLOAT || H != 512 || B >= kV10F32MinB512 || B * D <= 2) return true;
  // B * D = 3-4: the 16-unit tile of one only (four groups of 32 CTAs), not v10's tiles of 4 (two groups of 64)
  return B * D <= 4 && k->ub() == 16;
}

// Plans are cached per (device, kernel, B, D): the occupancy queries behind them cost tens of µs of host time.
template <typename K>
Plan cached_plan(const cudaDeviceProp& prop, const K* k, int B, int D) {
  static std::mutex mu;
  static std::map<std::tuple<int, const K*, int, int>, Plan> cache;
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) dev = -1;
  const auto key = std::make_tuple(dev, k, B, D);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, k->plan(prop, B, D)).first;
  return it->second;
}

// OPENRNN_PERSIST_TRACE=1 (developer switch): the forward's and the backward's kernel and plan, and the forward's
// input projection inside the launch (Kernel::xprod_plan), on stderr, once per distinct line.
void trace_once(const char* line) {
  static const bool on = env_switch01("OPENRNN_PERSIST_TRACE") == 1;
  if (!on) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(line).second) std::fprintf(stderr, "%s\n", line);
}

const std::vector<std::unique_ptr<BwdKernel>>& all_bwd_kernels() {
  static const std::vector<std::unique_ptr<BwdKernel>> k = [] {
    std::vector<std::unique_ptr<BwdKernel>> v;
    add_bwd_kernels_f32(v);
    add_bwd_kernels_bf16(v);
    add_bwd_kernels_f16(v);
    add_bwd_kernels_rs(v);
    return v;
  }();
  return k;
}

// OPENRNN_PERSIST_BWD=0 (developer switch, read once): backward data runs STANDARD's per-step loop (A/B timing).
bool persist_bwd_disabled() {
  static const bool off = env_switch01("OPENRNN_PERSIST_BWD") == 0;
  return off;
}

}  // namespace

// OPENRNN_PERSIST_V7 (developer switch, read at every call): "0" the forward never takes the v7 tensor-core kernel,
// "1" takes it wherever it applies (16-bit LSTM / GRU, H % 8 == 0) and its plan fits, otherwise the rule of
// v7_preferred. OPENRNN_PERSIST_V7_SHAPE=MBxUB (tuning): only that v7 block shape.
int persist_v7_mode() { return env_switch01("OPENRNN_PERSIST_V7"); }

bool v10_wg_on() { return env_switch01("OPENRNN_PERSIST_V10_WG") != 0; }

bool v10_tile32_on() {
  const int nbs = v10_nbs_forced();
  return persist_v10_mode() != 0 && (nbs <= 0 || nbs == 32);
}

// Where v7 runs by default (docs/performance.md, "PERSISTENT v7"; H100, float16/bfloat16 inference, µs/step, v4 ->
// v7): B >= 16. B = 64: 3.9-9.9 -> 2.8-5.4 at H <= 512, 28.1-28.9 -> 11.3-11.9 at H = 1024; B = 256 H = 256
// 8.4-10.3 -> 5.4-5.5; B = 16 H = 1024 8.3-8.6 -> 5.6-6.0. At B = 16 with H <= 512 the two are within 3%.
bool v7_preferred(int B, int H) {
  (void)H;
  return B >= 16;
}

// Which compiled configuration runs. First, for 16-bit LSTM / GRU at H <= 512, the tensor-core cluster kernel v9
// (persistent_fwd_v9.cuh), smallest tile first, when every tile gets its own cluster at once (H100, 15 clusters of 8
// at H = 256 and 7 of 16 at H = 512: tiles of 16 up to B = 240 / 112, tiles of 20 (session 47) up to B = 300 / 140,
// at H = 256 tiles of 24 and 28 (session 52) up to B = 360 / 420 and GRU's of 32 up to B = 480;
// docs/performance.md, "PERSISTENT v9": faster than v6 / v7 on every such row measured but one tie within 2%, LSTM
// bfloat16 B = 2 H = 256); then the v6 small-batch kernel (persistent_fwd_v6.cuh),
// narrowest tile first, when every batch tile gets its own cluster at once (waves == 1: B <= clusters per direction
// x BC); then v4
// (dev/lab/README.md, v3 timings): small batches take the one-column chunk (BC = 1: no padded FMAs), larger
// batches the wide chunk; cluster mode before grid mode (no global round trip per step); grid mode for H = 1024,
// whose W_hh does not fit in one cluster. The first candidate whose plan fits runs.
Choice choose(const cudaDeviceProp& prop, openrnn_cell cell, openrnn_data_type dt, int H_, int B, int D) {
  Choice ch;
  const int H = padded_hidden(H_);
  const bool v6 = !persist_v6_disabled();
  const int v7mode = persist_v7_mode();
  const V6Shape v6f = v6_shape_forced();
  const int v9mode = persist_v9_mode(), v9nbs = v9_nbs_forced();
  const int v10mode = persist_v10_mode(), v10nbs = v10_nbs_forced(), v10ub = v10_ub_forced();
  const bool v7 = v7mode != 0 && (dt == OPENRNN_DATA_HALF || dt == OPENRNN_DATA_BFLOAT16) && H_ % 8 == 0 &&
                  (v7mode == 1 || v7_preferred(B, H_));
  std::vector<const Kernel*> cand;
  for (const auto& k : all_kernels()) {
    if (k->cell() != cell || k->dtype() != dt || k->H() != H) continue;
    if (k->version() == 6) {
      if (!v6) continue;
      if (v6f.c > 0 && (k->cluster() != v6f.c || k->bc() != v6f.bc)) continue;
      // Two columns in clusters of 4 up to B = 48 (H100: at B = 64 they tie v7, within 2.5%).
      if (v6f.c == 0 && k->cluster() == 4 && B > 48) continue;
    }
    if (k->version() == 7 && !(v7 && v7_shape_allowed(k.get()))) continue;
    // v9: not while a v6 shape is forced (unless v9 is forced too)
    if (k->version() == 9 && (v9mode == 0 || (v9nbs > 0 && k->bc() != v9nbs) || (v6f.c > 0 && v9mode != 1)))
      continue;
    // v10: the same, only where the bulk-copy rows are whole 16-byte chunks (H % 8 in 16 bits, H % 4 in float32),
    // and unless forced where v10_preferred says
    // v10's wgmma tiles (16-bit LSTM, session 57): only at Hr == H (the exchange rows in 64-wide k blocks) on
    // compute capability 9.0 (sm_90a code). By default the tile of 32 (B = 33-64: inference -19% to -21%, training
    // -5% against mma.sync; H200, session 57, run 5), not the tiles of 4-16 (slower: B = 4 +25%, B = 16 +9%, run 2);
    // OPENRNN_PERSIST_V10_WG=1 / 0 (developer switch, read at every call) every wgmma tile / none. Registered before
    // their mma.sync twins: taken first.
    if (k->wgmma()) {
      const int wg = env_switch01("OPENRNN_PERSIST_V10_WG");
      if (wg == 0 || (wg != 1 && k->bc() != 32) || H_ != H || prop.major != 9 || prop.minor != 0) continue;
    }
    if (k->version() == 10 && (v10mode == 0 || (v10nbs > 0 && k->bc() != v10nbs) || (v10ub > 0 && k->ub() != v10ub) ||
                               (v6f.c > 0 && v10mode != 1) ||
                               H_ % (dt == OPENRNN_DATA_FLOAT ? 4 : 8) != 0 ||
                               (v10mode != 1 && !v10_preferred(k.get(), dt, H, B, D))))
      continue;
    cand.push_back(k.get());
  }
  // v3 bench: BC=1 is fastest up to B=4 in cluster mode and up to B=2 in grid mode (H=1024, B=4: BC=8 5.96 vs BC=1
  // 6.94 µs/step); wider chunks from there on. Cluster before grid (grid mode only wins at H=512, B>=64 for LSTM, by
  // <10% at B=64; AUTO does not pick v4 at B=256, H=512).
  // v9: first (a forced v7 still goes before it). v7: before v6 when forced, else after it (v6 fits B <= ~30 at
  // H = 256 and ~14 at H = 512; in 16 bits B <= ~60 at H = 256 with four-column tiles, and for GRU B <= 28 at H = 512).
  // Smallest MB first (most blocks; measured best wherever it fits), UB = 16 last, except first from 2B*H >= 262144
  // (B = 256 H = 512, H200: 10.1 against 12.2 µs/step for 128x8: half the state traffic through L2).
  const bool big = 2LL * B * H_ >= 262144;
  auto rank = [B, v7mode, v9mode, v10mode, big](const Kernel* k) {
    if (k->version() == 9) return (v9mode == 1 ? -300 : -150) + k->bc();
    if (k->version() == 10) return (v10mode == 1 ? -300 : -150) + k->bc();
    if (k->version() == 7)
      return (v7mode == 1 ? -200 : -50) + k->bc() / 16 + (k->ub() == 16 ? (big ? -5 : 10) : 0);
    if (k->version() == 6) return -100 + k->bc();
    int r = k->grid_mode() ? 10 : 0;
    const bool small = B <= (k->grid_mode() ? 2 : 4);
    if (small) r += k->bc() == 1 ? 0 : 1;
    else r += k->bc() == 1 ? 2 : (k->grid_mode() && k->bc() < 16 ? 1 : 0);
    return r;
  };
  std::stable_sort(cand.begin(), cand.end(), [&](const Kernel* a, const Kernel* b) { return rank(a) < rank(b); });
  // v10 in several launches (its batch chunks): a wider v10 tile that runs the batch in fewer launches goes first
  // (session 55: LSTM 16-bit H = 1024 B = 33-64, the tile of 32 in one launch of two groups, against the tile of 16
  // in two). The v10 candidates are adjacent in the ranking, narrowest first.
  const Kernel* v10k = nullptr;
  Plan v10pl;
  for (const Kernel* k : cand) {
    const Plan pl = cached_plan(prop, k, B, D);
    if (v10k && (k->version() != 10 || (pl.ok && pl.waves >= v10pl.waves))) {
      if (k->version() == 10) continue;
      break;  // the v10 candidates are done: the one with the fewest launches
    }
    if (pl.ok && k->version() == 10 && pl.waves > 1) {
      v10k = k;
      v10pl = pl;
      continue;
    }
    if (pl.ok && ((k->version() != 6 && k->version() != 9) || pl.waves == 1)) {
      ch.k = k;
      ch.plan = pl;
      return ch;
    }
    if (ch.why.empty() && k->version() == 4) ch.why = pl.why;
  }
  if (v10k) {
    ch.k = v10k;
    ch.plan = v10pl;
    return ch;
  }
  if (cand.empty()) ch.why = "no compiled configuration";
  return ch;
}

void trace_line(const char* what, const std::string& name, const Plan& pl, int B, int D) {
  char b[256];
  snprintf(b, sizeof b, "openrnn PERSISTENT %s: %s B=%d D=%d groups=%d BT=%d C=%d cl=%d waves=%d smem=%zu", what,
           name.c_str(), B, D, pl.groups, pl.BT, pl.C, pl.cl, pl.waves, pl.smem);
  trace_once(b);
}

void trace_choice(const Choice& ch, int B, int D) { trace_line("forward", ch.k->name(), ch.plan, B, D); }

void trace_xprod(const std::string& name, int P, size_t smem, int B, int D, int Il) {
  char b[256];
  snprintf(b, sizeof b, "openrnn PERSISTENT forward: %s input projection inside the launch, %d producer CTAs per "
           "direction, B=%d D=%d I=%d smem=%zu", name.c_str(), P, B, D, Il, smem);
  trace_once(b);
}

// The backward kernel for a problem, or none (STANDARD's loop runs): B <= 4 takes the one-column chunk, larger B
// the widest; the plan must run every batch tile of both directions at once (one wave of clusters). Measured
// (docs/performance.md, "PERSISTENT backward data"): at B = 64 with H = 512 the kernel lost to STANDARD's loop
// (bfloat16 LSTM 24.5 vs 21.4, GRU 20.2 vs 18.4 us/step of training), so B > 16 at H >= 512 keeps the loop; but the
// reduce-scatter kernels below (session 18) run in several waves where one does not hold the batch (session 25).
//
// LSTM / GRU at H <= 512 take the reduce-scatter cluster kernel first (persistent_bwd_rs.cuh: 16-bit on tensor cores,
// float32 FFMA), its smallest tile that runs every batch tile in one wave of clusters, at any B that fits, and 16-bit
// at H = 1024 the grid kernel with its share on tensor cores (persistent_bwd_grid.cuh, MMA; B <= 16; 16 units per CTA
// from B = 4 (GRU: 2) and for both directions, else 8)
// (docs/performance.md, "PERSISTENT tensor-core backward for 16 bits" and the float32 section after it).
// OPENRNN_PERSIST_BWD_RS (developer switch, read at every call): "0" never takes them; OPENRNN_PERSIST_BWD_RS_NBS=n:
// only tiles of n sequences; OPENRNN_PERSIST_BWD_GRID_U=8|16: only the grid kernel of that many units per CTA.
BwdChoice choose_bwd(const cudaDeviceProp& prop, openrnn_cell cell, openrnn_data_type dt, int H_, int B, int D) {
  BwdChoice ch;
  if (persist_bwd_disabled()) return ch;
  const int H = padded_hidden(H_);
  // Where no reduce-scatter kernel runs every tile in one wave, the one with the fewest waves instead of STANDARD's
  // loop (session 25, H100, training µs/step, STANDARD's loop -> waves: float32 H = 512 B = 64 LSTM 43.5 -> 31.0,
  // GRU 38.2 -> 25.0; float16 B = 256 H = 256 LSTM 20.5 -> 12.3; docs/performance.md, "The reduce-scatter backward
  // in several waves"). OPENRNN_PERSIST_BWD_WAVES=0 (developer switch, read at every call) keeps the loop.
  const bool waves_ok = env_switch01("OPENRNN_PERSIST_BWD_WAVES") != 0;
  if (env_switch01("OPENRNN_PERSIST_BWD_RS") != 0) {
    BwdChoice multi;
    const int nbs = env_int("OPENRNN_PERSIST_BWD_RS_NBS"), gu = env_int("OPENRNN_PERSIST_BWD_GRID_U");
    for (const auto& k : all_bwd_kernels()) {  // listed by tile size
      if (!k->preferred() || k->cell() != cell || k->dtype() != dt || k->H() != H) continue;
      if (nbs > 0 && k->bc() != nbs) continue;
      if (gu > 0 && k->units() > 0 && k->units() != gu) continue;
      // The grid kernel's 16 units per CTA from B = 4 on for LSTM, B = 2 for GRU (H100, session 21, training µs/step,
      // U = 8 -> 16, float16 / bfloat16: LSTM B = 16 12.57 -> 10.59, B = 8 8.34 -> 7.57, B = 4 6.29 -> 6.15, B = 3
      // 5.89 -> 5.81, B = 2 5.45 -> 5.58, B = 1 4.77 -> 5.04; GRU B = 16 12.15 -> 9.82, B = 4 6.13 -> 5.68, B = 2
      // 5.35 -> 5.22, B = 1 4.59 -> 4.62), and with both directions, which U = 8 cannot hold (2 x 128 CTAs;
      // STANDARD's loop ran there: LSTM B = 16 32.8 -> 14.4 with U = 16).
      if (gu == 0 && k->units() == 16 && D == 1 && B < (cell == OPENRNN_CELL_GRU ? 2 : 4)) continue;
      const Plan pl = cached_plan(prop, k.get(), B, D);
      if (pl.ok && (pl.waves == 1 || k->part_bytes(B) > 0)) {  // grid kernels: waves are sequential launches
        ch.k = k.get();
        ch.plan = pl;
        return ch;
      }
      // Several waves of clusters (each cluster runs its tile's T steps; the clusters never wait on each other):
      // the fewest waves, the smallest tile among those.
      if (waves_ok && pl.ok && k->part_bytes(B) == 0 && (!multi.k || pl.waves < multi.plan.waves)) {
        multi.k = k.get();
        multi.plan = pl;
      }
    }
    if (multi.k) return multi;
  }
  // B > 16 at H >= 512: STANDARD's loop, but for float32 at H = 1024, where the grid kernel takes B <= 64 in several
  // launches (session 24: training float32 H = 1024 B = 20-64, docs/performance.md).
  if (B > 16 && H >= 512 && !(dt == OPENRNN_DATA_FLOAT && H == 1024 && B <= 64)) return ch;
  std::vector<const BwdKernel*> cand;
  for (const auto& k : all_bwd_kernels())
    if (!k->preferred() && k->cell() == cell && k->dtype() == dt && k->H() == H) cand.push_back(k.get());
  std::stable_sort(cand.begin(), cand.end(), [B](const BwdKernel* a, const BwdKernel* b) {
    return B <= 4 ? a->bc() < b->bc() : a->bc() > b->bc();
  });
  for (const BwdKernel* k : cand) {
    const Plan pl = cached_plan(prop, k, B, D);
    if (pl.ok && (pl.waves == 1 || k->part_bytes(B) > 0)) {  // grid kernels: waves are sequential launches
      ch.k = k;
      ch.plan = pl;
      return ch;
    }
  }
  return ch;
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
