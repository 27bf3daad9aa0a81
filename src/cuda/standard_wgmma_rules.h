// STANDARD algorithm, 16-bit Hopper step kernel (standard_wgmma.cuh): where it runs and in which form. The measured
// rules (use_wgmma_step with h2048_rule, tall_rule, lean_rule, big_rule, perm_rule) and their developer switches
// (docs/developer-switches.md), host code only. Included by standard_wgmma.cuh.
#pragma once

#include <cuda_runtime.h>

#include "standard_plan.h"  // StdDims, env_switch01

namespace openrnn {
namespace cuda {

// OPENRNN_STD_WGMMA (developer switch, read once): "0" never use the Hopper step kernel, "1" use it wherever it applies
// (before the mma.sync one), unset/other: the rule of use_wgmma_step().
inline int wgmma_override() {
  static const int v = env_switch01("OPENRNN_STD_WGMMA");
  return v;
}

namespace wg {

// OPENRNN_STD_WGMMA_TALL (developer switch, read once): "1" / "0" force the tall tile on / off wherever it can run
// (the rule picks the small shape and its grid has more CTAs than the device has SMs: two 64-row CTAs share an SM
// there, and one 128-row CTA with the small shape's units, N = 64 / 48 / 64, loads each W_hh box once for both);
// unset: tall_rule.
inline int tall_override() {
  static const int o = env_switch01("OPENRNN_STD_WGMMA_TALL");
  return o;
}
// OPENRNN_STD_WGMMA_LEAN (developer switch, read once): the tall tile in its two-per-SM form (Tile's LEAN). Unset:
// where the tall grid has more CTAs than SMs (two tall CTAs of one step then share an SM instead of running in two
// waves; since session 78 big_rule takes the 128-row shape there, so the lean tile runs by default only under
// OPENRNN_STD_WGMMA_BIG=0); "0" / "1" force it off / on wherever the tall tile runs. Session 74 run 1 (H200, float16,
// graph, µs/step, mean of two rounds, LEAN=0 -> the rule) at 144-192 tall CTAs (B = 160-384, H = 384-1024): inference
// -8% to -21% (LSTM B = 192 H = 1024 21.69 -> 17.51), training -4% to -11%; the other 14 points of its grid within
// 0.6%. Where the tall grid has at most as many CTAs as SMs (72-128) lean lost 43-58% / 19-26% (session 73 runs 3-4):
// run 2 found most of that loss under programmatic launch (the next step's CTAs start beside this step's, some SMs then
// hold two of one step's CTAs; without it lean loses 8-14%).
inline bool lean_rule(long long n_tall, int sms) {
  static const int o = env_switch01("OPENRNN_STD_WGMMA_LEAN");
  return o >= 0 ? o == 1 : n_tall > sms;
}

// Where the 128-row shape (N = 128 / 96 for LSTM / GRU: the register cell's tiles, with the deep ring) takes the step
// instead of the 64-row one or the tall tile: where its grid of n_big CTAs has at least 100 (session 26's first
// kernel), and where the tall tile would run two CTAs per SM (over_lean: tall_rule takes it and its grid has more CTAs
// than SMs; lean_rule's condition, so that OPENRNN_STD_WGMMA_LEAN does not move this rule; false where
// OPENRNN_STD_WGMMA_TALL is set). Session 78's run 2 (H200, float16, graph, T = 100, µs per step, the rule before ->
// the 128-row shape forced, inference two rounds): where the alternative was the lean tall tile (72-96 CTAs of the
// 128-row shape: B = 160 / 192 at H = 1024, B = 192 / 256 at H = 768) inference -17% to -37% (GRU B = 192 H = 1024
// 14.01 -> 9.59, LSTM 15.86 -> 13.12), training -4% to -13%; where it was the small shape in one wave (B = 160 H = 768:
// 240 CTAs, two per SM) or the tall tile one per SM (LSTM B = 128: 96 / 128 CTAs) it lost: inference +14% to +27%,
// training +6% to +10%.
// OPENRNN_STD_WGMMA_BIG (developer switch, read once): "1" / "0" force it on / off at any grid; unset: that rule.
inline bool big_rule(long long n_big, bool over_lean) {
  static const int o = env_switch01("OPENRNN_STD_WGMMA_BIG");
  return o >= 0 ? o == 1 : n_big >= 100 || over_lean;
}

// Where the tall tile replaces the small shape by default (given that it can run): where its grid of n_tall CTAs (one
// per SM: 144 KB of ring) takes no more waves than the small shape's n_small (two per SM: 96 KB of ring each).
// Session 73 run 1 (H200, float16 / bfloat16, training float16 only, graph, µs/step, small -> tall, LSTM and GRU at
// B = 128-512, H = 256-1024, every point where the tall tile could run): where this holds it won at every point,
// inference -4% to -18% (GRU bfloat16 B = 256 H = 384 7.29 -> 6.12, LSTM float16 B = 256 H = 512 9.06 -> 8.28),
// training -2% to -8%; where it does not (B = 160 H = 768: 240 small CTAs in one wave, 144 tall in two) it lost 20-47%
// (LSTM float16 inference 10.51 -> 15.48).
inline bool tall_rule(long long n_small, long long n_tall, int sms) {
  const long long per_wave = sms > 0 ? sms : 1;
  return (n_tall + per_wave - 1) / per_wave <= (n_small + 2 * per_wave - 1) / (2 * per_wave);
}

// Where the register cell takes encode_perm_map's view by default (it can: H % UB == 0, the cell's buffers 16-byte
// aligned). Session 77's run 5 (H200, float16, graph, T = 100, µs per step, plain box -> permuted, inference two rounds
// within 0.8% of each other, training one round):
// - LSTM 128 x 128 (B = 256 H = 1024): inference 14.59 -> 13.74 (-5.8%); training 36.65 -> 37.10 (+1.2%).
// - LSTM tall 128 x 64 (B = 192 / 256 H = 512): inference +3.1% / +4.1%; training -1.3% / -1.8%.
// - LSTM 64 x 64 (B = 16 H = 256): inference 2.45 -> 2.60 (+6.3%); training +1.9%.
// - GRU 128 x 96 (B = 256 H = 1024): inference 12.27 -> 11.83 (-3.6%); training 31.64 -> 32.22 (+1.8%).
// - GRU tall 128 x 48 (B = 192 / 256 H = 512): inference -6.0% / -1.6%; training -2.5% / -2.8%.
// - GRU 64 x 48 (B = 16 / 192 / 256 H = 256): inference -2.7% / -5.7% / -4.5%; training -1.9% / -2.6% / -2.3%.
// Elsewhere in that grid (other step paths, the lean tile) within 0.4%. So: in inference GRU's tiles and LSTM's
// 128 x 128; in training the tall tiles and GRU's 64 x 48.
inline bool perm_rule(bool lstm, int MB, int UB, bool training) {
  const bool big = UB == 32, tall = MB == 128 && UB == 16;
  if (training) return tall || (!lstm && MB == 64);
  return !lstm || big;
}
// OPENRNN_STD_WGMMA_PERM (developer switch, read once): "0" / "1" keep W_hh's plain box for the register cell (pairs
// of units 8 apart per thread) / take encode_perm_map's view wherever it can run; unset: perm_rule.
inline bool perm_allowed(bool lstm, int MB, int UB, bool training) {
  static const int o = env_switch01("OPENRNN_STD_WGMMA_PERM");
  return o >= 0 ? o == 1 : perm_rule(lstm, MB, UB, training);
}

}  // namespace wg

// Where the Hopper step applies: as the mma.sync step (float16 / bfloat16, LSTM without projection, GRU
// linear-before-reset, RNN, H % 8 == 0), on a device of compute capability 9.0 (the kernel is built for sm_90a).
inline bool wgmma_step_applies(const StdDims& d, openrnn_data_type dt, int cc_major, int cc_minor) {
  return (dt == OPENRNN_DATA_HALF || dt == OPENRNN_DATA_BFLOAT16) && !d.proj && !d.gru_rb && d.H % 8 == 0 &&
         cc_major == 9 && cc_minor == 0;
}
// The rule (OPENRNN_STD_WGMMA=0/1 overrides it within wgmma_step_applies), measured on the H100 against the paths it
// replaces (docs/performance.md, "the Hopper step kernel"; run 9, float16 / bfloat16 inference, µs/step, cuBLAS +
// pointwise over two processes -> this kernel): where the mma.sync step's rule does not take the step, H in [384, 512]
// with B * H > 65536 (B = 256 H = 512: LSTM 17.3-19.1 -> 11.6-11.8, GRU 12.3-18.6 -> 10.2-10.4) and H in (512, 1024]
// with B >= 64 (B = 64 H = 1024: LSTM 15.6-30.6 -> 12.3-12.4, GRU 12.3-15.3 -> 10.9-11.1; B = 256: LSTM 21.0-21.5 ->
// 20.9-21.5 inference, 58.5 -> 52.8 training). GRU at B = 256 H = 1024 joined the rule in session 27, with the 128-row
// tile's cell on four warpgroups (run 11, two processes: cuBLAS step 17.8-18.6 -> 17.0-17.2 inference, 43.3-45.3 ->
// 43.0-44.1 training; it lost before, 17.8-19.2 -> 20.0-20.5; session 28's epilogue-only warpgroups: 16.3-16.5). It
// loses at H = 2048 (B = 256: 42-54 -> 52-65 in session 27): its product there is twice cuBLAS's at the same rate.
// Where B * H >= 65536 cuBLAS has had 32 MiB of workspace since session 33 (blas_ws_per_handle), and at B = 64
// H = 1024 its step now wins (session 34, runs 2-3, H100, float16 inference, graph, µs/step, this kernel -> cuBLAS
// step, three processes without cuDNN: LSTM 10.05 -> 9.02, GRU 8.77 -> 8.12; beside cuDNN in the same process: LSTM
// 10.06 -> 9.04-9.06, GRU 8.78 -> 8.89-8.97; training LSTM 24.62 -> 24.47, GRU 21.86 -> 21.99; run 4, two
// processes without cuDNN: B = 96 LSTM 12.19 -> 11.22, GRU 10.72 -> 9.74; B = 128 LSTM 12.57 -> 12.77, GRU 11.09 ->
// 10.08). So cuBLAS takes B <= 96 (LSTM) / B <= 128 (GRU) there; B = 256 keeps this kernel (LSTM 17.31 vs 18.51, GRU
// 15.45 vs 15.50). bfloat16 follows float16 alone (run 5, B = 64 LSTM 10.08-10.12 -> 9.53, GRU 8.78 -> 8.12), but
// LSTM at B = 64 beside cuDNN read 10.28 (run 4) against session 33's 10.19 with this kernel.
// Session 45 (runs 13-14 and 16, H100, float16 / bfloat16, beside cuDNN STANDARD, graph, µs/step, the rule's path ->
// this kernel) added three regions:
// - Below B * H = 8192 at H = 64-512 (the CUDA-core fused step ran there up to B = 16, cuBLAS + pointwise above B = 16),
//   measured at H = 64-512 and B = 1-64: inference -6% to -36% (LSTM float16 H = 256 B = 8 4.64 -> 3.29, GRU H = 384
//   B = 16 5.76 -> 4.18, H = 512 B = 15 6.30 -> 4.61; over cuBLAS: H = 256 B = 20-24 -20% to -22%), training -6% to
//   -22% (one row of 48 +0.5%: LSTM float16 H = 64 B = 64). H < 64: session 46, below.
// - GRU at H = 256 from B * H = 49152 (B = 192-512, over mma.sync and over cuBLAS + pointwise): inference -9% to -15%
//   (B = 256 6.38 -> 5.66), training -2% to -10%.
// - LSTM at H = 256 from B * H = 131072 (B = 512, over cuBLAS + pointwise): inference -20% / -21%, training -11% /
//   -12%. LSTM lost at B = 256 (+5% inference) and was even at B = 192 (-0.6% / +5.0%).
// Both cells lost 6-71% at B = 32-128 (mma.sync's region at H = 256).
// Session 46 (run 5, H100, float16, beside cuDNN STANDARD, graph, best of two alternating processes, µs/step, the
// rule's path -> this kernel) added two more:
// - H = 16-48, below B * H = 8192 as at H >= 64: inference -10% to -30% (LSTM H = 48 B = 1 3.67 -> 2.58, GRU H = 16
//   B = 256 4.99 -> 4.10), training -5% to -17%. At B * H >= 8192 (H = 32 / 48 B = 256) mma.sync keeps the step: this
//   kernel took +66% to +104% there.
// - H = 384-512 from B = 96 (mma.sync's region up to B * H = 65536): inference -0.4% to -19% (GRU H = 512 B = 128
//   8.17 -> 6.64, LSTM H = 384 B = 96 6.39 -> 6.37), training -0.7% to -9%. At B = 24-64 it lost 2-53%.
// RNN cells stay off it: it lost at every point measured (H = 64-512, B = 1-128, +3% to +197%).
// Session 78 (run 5, H200, float16, graph, no comparator, µs/step, the rule's path -> this kernel, inference two
// rounds, training one) measured it at H = 640-1024, B = 32-128, where the rule ran cuBLAS + pointwise or mma.sync
// (the register cell, the fold and the deep ring came after the measurements above):
// - GRU: inference -10% to -29% at every such point (B = 32 H = 640 5.74 -> 4.10, B = 64 H = 1024 7.76 -> 6.88) but
//   B = 96 H = 1024 (-1.3%); training -2.6% to -11% (B = 96 H = 1024 +0.6%).
// - LSTM: inference -3% to -22% at B = 32 (H = 640 6.02 -> 4.67), B = 64 H = 1024 8.54 -> 7.79 (-8.8%), B = 96
//   H = 768 -12%; B = 96 H = 1024 +4.0% (cuBLAS keeps it); training -0.8% to -7.6% at B = 32, -2.5% at B = 64
//   H = 1024, +0.6% at B = 96 H = 1024. Every other point of that grid already ran it (within 0.6% / 0.9%).
// So from B = 32 at H in (512, 1024], but LSTM at H > 768 with B in (64, 96]. Beside cuDNN STANDARD (same run, switch
// forced) B = 64 H = 1024: LSTM inference 1.087 / 1.078 (float16 / bfloat16), GRU 1.165 / 1.175.
// Session 47 (run 1, H100, float16, graph, no comparator, best of two alternating processes, µs/step, the rule's path
// -> this kernel) measured two more edges:
// - H = 8: GRU wins at B = 1-256 (inference -10% to -27%, training -0.5% to -15%); LSTM at B = 1-16 (inference -19% /
//   -22% at B = 1 / 4, +0.7% at B = 16; training -4% to -17%) and loses at B = 64 / 256 (+2.5% to +4.8%).
// - H = 320 (between the region below B * H = 8192 and H = 384): it loses at B = 32-96 (+5% to +67%) and is mixed
//   from B = 128 (GRU inference B = 128 -6.6%, LSTM +4.5%; B = 256 -3% to +0.5%), so the rule does not take it.
// At H in (1024, 2048], where cuBLAS + pointwise ran the step: session 79's run 1 (H200, float16, graph, T = 100, µs
// per step, that step -> this kernel forced, inference two rounds, training one) at H = 1536 / 2048, B = 96-256:
// - B = 128 (two rows of 128-row CTAs, 96 / 128 CTAs: one wave): inference GRU -8.2% / -15.0% (H = 2048 21.04 ->
//   17.88), LSTM -0.1% / -10.6% (27.31 -> 24.43); training GRU +0.7% / -2.6%, LSTM +2.7% / -1.0%.
// - B = 256 (256 CTAs at H = 2048): GRU inference -7.0% at H = 2048 (38.20 -> 35.52), +5.6% at H = 1536; training
//   +2.1% / +6.8%; LSTM +0.9% / +8.3% (H = 2048 / 1536), training +3.6% / +8.9%.
// - B = 96 +1.5% to +22% (inference; training +4.8% to +6.6%), B = 160 / 192 (three rows of CTAs, two waves) +9% to
//   +33%.
// Run 2 (the same, B = 104-120): inference GRU -6% / -8% / -12% at H = 1536 (B = 104 / 112 / 120), -0.0% / -14% / -22%
// at H = 2048; LSTM +1.9% / -3.4% / -4.9% and +3.2% / -6.5% / -10.5%; training at H = 2048, B = 112 / 120: GRU -5.1% /
// -5.2%, LSTM -0.9% / -0.9%.
// So B = 112-128 at H in (1536, 2048] in both modes and GRU's inference at H in (1024, 1536]; GRU's inference at
// B = 256, H in (1536, 2048]. Session 78's run 7 lost at B = 16-64 there (+6% to +28%). Run 3, by this rule against
// the one before: B = 112 / 120 inference GRU -13.3% / -20.4% at H = 2048 (-7.1% / -11.3% at 1536), LSTM -4.9% / -7.8%.
// Session 80 (runs 1-2, H200, float16, graph, T = 100, µs per step, cuBLAS + pointwise -> this kernel forced, inference
// two rounds, training one), after the last row of CTAs' box was shifted to end at B (standard_wgmma.cuh, ma):
// - GRU inference from B = 88: H = 2048 B = 88 / 96 / 104 21.13 -> 16.30 / -12.0% / -15.7% (B = 80 +0.9%, B = 72
//   +6.2%); H = 1536 -12.1% / -8.4% / -13.1%; H = 1280 -4.5% / -12.8% / -0.1%.
// - GRU training from B = 96 at H = 2048 (B = 96 / 104 -2.5% / -4.5%, B = 80 +1.5%); H = 1536 -0.3% / -1.9%.
// - LSTM below B = 112: inference at H = 2048 B = 88 / 96 / 104 +15% / +13% / +0.2%, at H = 1536 +11% / -0.3% /
//   +1.3%, at H = 1280 -4.8% / -3.3% / +7.1%; training at H = 2048 B = 104 +1.5%. So cuBLAS keeps it.
// Only where H % 64 == 0 (use_wgmma_step, below).
inline bool h2048_rule(const StdDims& d, bool training) {
  if (d.gru_lbr && !training && d.B >= 88 && d.B <= 128) return true;
  if (d.B >= 112 && d.B <= 128) return d.H > 1536;
  if (d.gru_lbr && training && d.H > 1536 && d.B >= 96 && d.B < 112) return true;
  return d.B == 256 && d.gru_lbr && !training && d.H > 1536;
}

// training: the forward pass of a training call (it writes the reserve), which h2048_rule tells apart.
inline bool use_wgmma_step(const StdDims& d, openrnn_data_type dt, int cc_major, int cc_minor, bool mma_rule,
                           bool training) {
  if (!wgmma_step_applies(d, dt, cc_major, cc_minor)) return false;
  const int o = wgmma_override();
  if (o >= 0) return o == 1;
  if (!(d.lstm || d.gru_lbr)) return false;  // RNN: slower at every point measured (session 46)
  const long long bh = static_cast<long long>(d.B) * d.H;
  if (d.H == 8) return d.B <= (d.gru_lbr ? 256 : 16);    // measured up to B = 256 (session 47)
  if (d.H >= 16 && d.H <= 512 && bh < 8192) return true;  // the fused step (B <= 16) and cuBLAS (B > 16) below
  if (d.H == 256 && bh >= (d.gru_lbr ? 49152 : 131072)) return true;
  if (d.H >= 384 && d.H <= 512 && d.B >= 96) return true;  // over mma.sync up to B * H = 65536, as above beyond
  // The mma.sync step first where its rule takes it (by default only up to B = 16 at H > 512; OPENRNN_STD_MMA=1
  // forces it, with OPENRNN_STD_WGMMA unset)
  if (mma_rule || d.H < 384 || d.H > 2048) return false;
  // H > 512 with H % 64 != 0 and B > 64: cuBLAS + pointwise. There the rows of W and of the state are not a multiple
  // of the 128-byte swizzle's line apart, and the last k block is partly filled out of bounds (which of the two costs
  // was not told apart). Session 80 (H200, float16 inference, graph, T = 100, µs per step, two rounds; run 3: cuBLAS
  // -> this kernel forced) at B = 128 (no box past B): H = 1000 GRU +15%, LSTM +5%; H = 1544 GRU +23% (18.25 ->
  // 22.38; H = 1536 13.34), LSTM +28%; H = 1800 GRU +32%, LSTM +23%; at H = 1024 / 1536 / 1792 -1% to -13%. At B = 96
  // +23% to +58% (those include the shifted box's own cost at H % 64 != 0, run 7: +11% to +13% at H = 1000). Run 4
  // (by the rule, the Hopper step -> cuBLAS at every H > 512 with H % 64 != 0): B = 96 / 128 at H = 1000 GRU -12.6% /
  // -12.6%, LSTM 0.0% (cuBLAS before too) / -8.1%; but H = 800 B = 32 GRU +22.7% / LSTM +12.4%, H = 1000 B = 64 GRU
  // +5.3% / LSTM -2.4%; so the line held from B = 65.
  // Session 81 found the cost in the rows' misalignment (run 2, ncu: three times the L2 requests) and padded them
  // (StdDims::wpad: W_hh's copy in both modes, the state slots in inference). Run 4 (H200, float16 inference, graph,
  // T = 100, µs per step, two rounds, cuBLAS -> this kernel forced, padded) at B = 96 / 128 / 256: H = 600 / 800 /
  // 1000 -4% to -28% at every point (GRU B = 256 H = 1000 17.14 -> 12.59, LSTM B = 96 H = 1000 11.70 -> 10.69); where
  // h2048_rule takes it at H = 1200 / 1544 / 1800, B <= 128: -20% to +2% (GRU B = 96 H = 1800 20.82 -> 16.71, GRU
  // B = 128 H = 1200 +2.0%, LSTM B = 128 H = 1544 +1.0%); at B = 256 for H > 1024 +1% to +27% (GRU H = 1544 +3.9%,
  // which h2048_rule would take). So in inference the rule for aligned rows, but B > 128 at H > 1024; in training
  // (W_hh's rows aligned, the state's not: run 3, -7% to +0.7% against the unpadded kernel) cuBLAS from B = 65 as
  // before.
  if (d.H > 512 && d.H % 64 != 0 && d.B > 64 && (training || (d.B > 128 && d.H > 1024))) return false;
  if (d.H > 1024) return h2048_rule(d, training);
  // LSTM at H > 768, B in (64, 96]: cuBLAS in training. Session 78 kept it there in inference too (B = 96 H = 1024
  // +4.0%); session 80's run 1 (as h2048_rule's, with the shifted box) found this kernel ahead in inference at
  // H = 1024: B = 72 / 80 / 88 / 96 -0.2% / -2.2% / -4.2% / -6.5% (10.14 -> 9.49); training B = 80 / 96 +2.3% / +0.7%.
  if (d.H > 512 && d.B >= 32) return !(d.lstm && training && d.H > 768 && d.B > 64 && d.B <= 96);
  // Elsewhere cuBLAS + pointwise. Before session 78 the rule went on here at H = 384-1024 (B * H > 65536 at
  // H <= 512, which the line for B >= 96 above covers; at H > 512 from B = 64 below B * H = 65536 and above B = 96 /
  // 128 beyond, sessions 26-34, which the line before this covers).
  return false;
}

}  // namespace cuda
}  // namespace openrnn
