// STANDARD algorithm: the carve-up of the workspace and reserve space. One function (make_std_layout) computes every
// offset; temp_sizes and the three calls all use it, so sizes and pointers cannot disagree.
//
// Internal tensors are sequence-major ([T, B, W]); only the user's x, y, dx, dy follow the descriptor's layout.
// T is the storage type (element size es), S the arithmetic type (ss: 8 for float64, else 4).
//
// State slots. The state of one layer and direction is kept in `slots` buffers of [B, Hout] (h, storage type) and
// [B, H] (c, arithmetic type): slots = T + 1 when training (the backward needs every step's state), 2 otherwise
// (ping-pong). Forward direction: step t reads slot t and writes slot t+1; reverse direction: step t reads slot
// t+1 and writes slot t (indices mod slots). So with T + 1 slots the states *entering* steps 0..T-1 are the
// contiguous [T, B, Hout] block starting at slot 0 (forward) or slot 1 (reverse): the weight-gradient GEMM of W_hh
// reads them as one matrix. Slot 0 / slot T hold the copy of hx / cx (backward does not get hx / cx again).
//
// Reserve (TRAINING), per layer l and direction d (index l*D+d), each [T, B, ...] in time order:
//   acts  [T, B, G*H] S      activations (LSTM i f g o, GRU r z n, RNN h)
//   hs    [T+1, B, Hout*split] T   states (see above; split = 2: hi/lo pairs of float16/bfloat16);
//   cs    [T+1, B, H] S      (LSTM)
//   htil  [T, B, H*split] T  LSTM projection input o*tanh(c)
//   hn    [T, B, H] S        GRU linear-before-reset W_hn h + b_hn
//   rh    [T, B, H*split] T  GRU reset-before r*h
//   dG    [T, B, G*H] T      written by backward_data: gradient w.r.t. the pre-activations (input side)
//   dGh   [T, B, G*H] T      GRU linear-before-reset: recurrent side (n part differs)
//   dhtot [T, B, P] T        LSTM projection: gradient w.r.t. the projected h (for dW_hr)
// and per layer: y_l [T, B, D*Hout] T (l < L-1: the layer's output, 0 at padding), x_l [T, B, D*Hout] T (l >= 1 with
// dropout: the dropped input of layer l). Every saved value of a padding step is 0 (or a carried finite state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "descriptor.h"

namespace openrnn {
namespace cuda {

constexpr size_t kAbsent = SIZE_MAX;
// Streams an algorithm may use at once: the handle's stream and cuda_backend.h's kAuxStreams.
constexpr int kStdLanes = 3;

struct StdDims {
  int T, B, I, H, Hout, P, G, GH, L, D;
  openrnn_cell cell;
  bool proj, lstm, gru_lbr, gru_rb, rnn;
  size_t es, ss;
  int split;  // 2 for float16/bfloat16 (hi/lo state pairs, standard_kernels.cuh), else 1
  // The Hopper step's padded row pitch (elements), 0 where none: Hout rounded up to 64 for split states of its cells
  // (LSTM without projection, GRU linear-before-reset, RNN) with Hout > 64, Hout % 64 != 0 and Hout % 8 == 0. Its
  // TMA boxes read 128-byte rows; rows 2 Hout bytes apart straddle two lines each (session 81, run 2: GRU B = 128,
  // H = 1544, 18.9 µs per step kernel against 12.8 at H = 1536, three times the L2 requests; the bench's step +72%).
  // Where it runs, W_hh is copied into a workspace buffer of this pitch (f_wp) and, in inference, the state slots take
  // it as their part pitch (FwdStep::hsp; the reserve keeps Hout, the layout PERSISTENT and the backward share).
  int wpad;
  int hs_ld() const { return Hout * split; }  // row stride of h states (the reserve's; see wpad)
  int us_ld() const { return H * split; }     // row stride of htil / rh
  int layer_in(int l) const { return l == 0 ? I : D * Hout; }
  long long TB() const { return static_cast<long long>(T) * B; }
};

struct StdReserveDir {
  size_t acts = kAbsent, hs = kAbsent, cs = kAbsent, htil = kAbsent, hn = kAbsent, rh = kAbsent, dG = kAbsent,
         dGh = kAbsent, dhtot = kAbsent;
};

struct StdLayout {
  StdDims d{};
  size_t blas_ws = 0;  // cuBLAS workspace per handle (blas_ws_per_handle); the slices open every carve-up below
  size_t blas_step_ws = 0;  // of which the recurrent steps' GEMMs see the first (blas_step_ws, <= blas_ws)
  bool training = false;
  bool dropout = false;  // training with p > 0 and L > 1
  int slots = 2;

  // reserve
  std::vector<StdReserveDir> rsv;  // [l*D + dir]
  std::vector<size_t> rsv_y;       // [l], kAbsent for l = L-1
  std::vector<size_t> rsv_x;       // [l], kAbsent unless l >= 1 and dropout
  size_t reserve_bytes = 0;

  // Layer wavefront (one direction, L >= 2; forward: standard_forward.cu, backward_data: standard_backward.cu, which
  // runs it top-down in reverse time): the layers of a group of `wave` consecutive layers run at once, one per lane,
  // in chunks of `chunk` steps; a layer starts chunk k when the layer feeding it has finished that chunk. wave = 0:
  // off (layers one after another, direction d on lane d).
  int wave = 0, chunk = 0;

  // forward workspace (offsets from the workspace start; the cuBLAS slices come first). Per lane j (direction j, or
  // wavefront lane j): gx holds the input projection of every step ([T*B, G*H]), or of one chunk in the wavefront
  // ([chunk*B, G*H]); the other buffers hold one step.
  size_t f_lens = kAbsent;
  size_t f_gx[kStdLanes]{}, f_gh[kStdLanes]{}, f_ghn[kStdLanes]{};
  size_t f_hp[kStdLanes]{kAbsent, kAbsent, kAbsent};  // LSTM projection GEMM output [B, P] S
  // split: [W_hh | W_hh] [G*H, 2*Hout] then [W_hr | W_hr] [P, 2*H], T
  size_t f_w2[kStdLanes]{kAbsent, kAbsent, kAbsent};
  // the Hopper step's copy of W_hh at the padded pitch [G*H, wpad] T (StdDims::wpad > 0)
  size_t f_wp[kStdLanes]{kAbsent, kAbsent, kAbsent};
  // inference only (training keeps these in the reserve); f_hs at the part pitch max(Hout, wpad)
  size_t f_acts[kStdLanes]{kAbsent, kAbsent, kAbsent}, f_hs[kStdLanes]{}, f_cs[kStdLanes]{kAbsent, kAbsent, kAbsent},
      f_htil[kStdLanes]{kAbsent, kAbsent, kAbsent}, f_rh[kStdLanes]{kAbsent, kAbsent, kAbsent};
  size_t f_y[2]{kAbsent, kAbsent};  // ping-pong layer outputs [T, B, D*Hout]
  size_t fwd_bytes = 0;

  // backward_data workspace
  size_t b_lens = kAbsent;
  // per lane j (direction j, or wavefront lane j as in the forward): dh / dc ping-pong [B, Hout] / [B, H] S, ...
  size_t b_dh[kStdLanes][2]{}, b_dc[kStdLanes][2]{}, b_dhtil[kStdLanes]{}, b_drh[kStdLanes]{};
  size_t b_wt[kStdLanes]{kAbsent, kAbsent, kAbsent};  // W_hh^T [Hout, G*H] T for the fused backward kernel
  size_t b_dx[2]{};  // ping-pong [T, B, max layer input] T
  // wavefront with L >= 3: layer 0's dX [T, B, I] T of its own. In b_dx[0] its rows (width I) would overlap rows of
  // other steps of layer 2's dX (width D*Hout), which layer 1 of the same group is still reading.
  size_t b_dx0 = kAbsent;
  size_t bwd_bytes = 0;

  // backward_weights workspace
  size_t w_lens = kAbsent, w_x = kAbsent, w_ones = kAbsent;
  size_t wg_bytes = 0;

  size_t workspace_bytes = 0;
};

StdDims std_dims(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x);
StdLayout make_std_layout(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, bool training);
// The forward's layer wavefront for these dimensions: lanes (0 = off) and chunk length in steps. Rule and
// measurements: standard_algo.cu, docs/performance.md; OPENRNN_STD_WAVEFRONT=0 (off) or =N (chunks of N steps)
// overrides it (developer switch, read once per process).
void std_wavefront(const StdDims& d, int* lanes, int* chunk);

// A developer switch from the environment: 1 when `name` is "1", 0 when "0", -1 when unset or anything else. The
// callers keep the value in a function-local static (read once per process).
inline int env_switch01(const char* name) {
  const char* e = std::getenv(name);
  if (!e) return -1;
  if (std::strcmp(e, "0") == 0) return 0;
  if (std::strcmp(e, "1") == 0) return 1;
  return -1;
}
// An integer developer switch from the environment: 0 where unset or not a number.
inline int env_int(const char* name) {
  const char* e = std::getenv(name);
  int n = 0;
  return e && std::sscanf(e, "%d", &n) == 1 ? n : 0;
}
// A developer switch holding a two-bit mask (0-3); `fallback` where unset or anything else.
inline int env_mask(const char* name, int fallback) {
  const char* e = std::getenv(name);
  int n = fallback;
  return e && std::sscanf(e, "%d", &n) == 1 && n >= 0 && n <= 3 ? n : fallback;
}

// A developer switch that forces a kernel's per-launch shared-memory carveout: its value (a percent, or -1 for none),
// read once by the caller's static; -2 where unset or not a number.
inline int env_carveout(const char* name) {
  const char* e = std::getenv(name);
  int n = 0;
  return e && std::sscanf(e, "%d", &n) == 1 ? n : -2;
}

// OPENRNN_STD_PDL (developer switch, read once): "0" launches the 16-bit step kernels (standard_mma.cuh,
// standard_wgmma.cuh; forward, and the tensor-core backward step) plainly; otherwise every step after a layer and
// direction's first is a programmatic dependent of the step before it (it loads its first W_hh (backward: W_hh^T)
// stages while that step finishes; docs/performance.md, sessions 27 and 29).
inline bool std_step_pdl() {
  static const bool on = env_switch01("OPENRNN_STD_PDL") != 0;
  return on;
}

// OPENRNN_STD_PW_PDL (developer switch, read once): "0"-"3" force which pointwise kernels of the cuBLAS step path are
// programmatic dependents of the cuBLAS GEMM before them (a mask: 1 forward, 2 backward); unset or another value:
// the rule of std_pw_pdl().
inline int std_pw_pdl_override() {
  static const int v = env_mask("OPENRNN_STD_PW_PDL", -1);
  return v;
}

// Which pointwise kernels of the cuBLAS step path (after a layer and direction's first step) are launched as
// programmatic dependents of the step's GEMM (pw_enter, standard_kernels.cuh): bit 1 forward, bit 2 backward. Such a
// kernel is resident when the GEMM's blocks exit and waits there before it reads what the GEMM wrote. Session 63, runs
// 2-3 (H200, T = 100, graph replays, best of two processes per side, against plain launches; docs/performance.md):
// - forward, float16: GRU inference -5.0% to -6.5% at B = 16 H = 2048 and B = 64 H = 1024-2048 (B = 256 -0.1% /
//   -0.3%); LSTM inference +1.5% to +2.3%; in training the forward's launches cost +1.1% to +2.1% at B = 16-64.
// - backward, float16: -3.0% to -5.3% at B = 16 H = 2048 and B = 64 H = 1024-2048, LSTM B = 256 H = 1024 -3.1%;
//   +2.6% at B = 256 H = 512, GRU B = 256 H = 1024 +1.5%.
// - float32 B = 256 H = 512: training +0.4% to +1.5%, GRU inference -1.5%.
// RNN cells and GRU reset-before were not timed; they keep plain launches.
// Session 64 (run 3, float16, two processes per side) re-timed the mask with the kernels' other inputs loaded before
// the wait: every launch programmatic (3) against the rule, LSTM inference +1.4% to +2.4%, GRU training +1.5% to +2.2%.
inline int std_pw_pdl(const StdDims& d, bool training) {
  const int o = std_pw_pdl_override();
  if (o >= 0) return o;
  if (d.split != 2 || !(d.lstm || d.gru_lbr)) return 0;
  return (d.gru_lbr && !training ? 1 : 0) | (d.H >= 1024 && (d.B <= 64 || d.lstm) ? 2 : 0);
}

// How the cuBLAS step path's pointwise kernels prefetch the next step's inputs into L2 (FwdStep::pf, BwdStep::pf;
// prefetch_l2's mode: 0 none, 1 normal priority, 2 evict_last): the forward's gx, the backward's saved activations,
// states and dy. OPENRNN_STD_FWD_PREFETCH / OPENRNN_STD_BWD_PREFETCH (developer switches, read once) "0"-"2" force
// it; unset or another value: the rule. Session 65, run 1 (H200, float16, LSTM / GRU, B = 16-256, H = 1024 / 2048,
// best of two processes per variant, both directions' switches alike; docs/performance.md):
// - normal prefetch: -0.5% to -1.3% where a step's gx is at most 1 MB (B * G * H <= 262144 floats: B = 16 at H =
//   1024-2048, B = 64 at H = 1024; the B = 16 H = 1024 rows, on step kernels, moved -0.8% to +0.1%); +0.5% to
//   +2.1% at B = 64 H = 2048 and up to +6.3% at B = 256 H = 2048 (B = 256 H = 1024 -0.4% to +0.9%).
// - evict_last against normal: +1.6% to +5.6% at LSTM H = 2048 B = 16-64, within 0.5% at H = 1024, ahead only at
//   LSTM B = 256 H = 2048 (-1.4% / -3.8%, where processes spread by up to 5.8%).
// - float32 (B = 64 / 256, H = 512 / 1024, normal): -0.8% to +0.9%; not taken.
inline int std_prefetch(const StdDims& d, bool backward) {
  static const int f = env_mask("OPENRNN_STD_FWD_PREFETCH", -1), b = env_mask("OPENRNN_STD_BWD_PREFETCH", -1);
  const int o = backward ? b : f;
  if (o >= 0 && o <= 2) return o;
  return d.split == 2 && static_cast<long long>(d.B) * d.GH <= 262144 ? 1 : 0;
}

// Slot index of the state entering / leaving step t for direction dir (see above).
inline int slot_in(int t, int dir, int slots) { return (dir == 0 ? t : t + 1) % slots; }
inline int slot_out(int t, int dir, int slots) { return (dir == 0 ? t + 1 : t) % slots; }
inline int slot_first(int T, int dir, int slots) { return (dir == 0 ? 0 : T) % slots; }
inline int slot_last(int T, int dir, int slots) { return (dir == 0 ? T : 0) % slots; }

}  // namespace cuda
}  // namespace openrnn
