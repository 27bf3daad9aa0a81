// PERSISTENT algorithm (CudaAlgo): per layer, one cuBLAS GEMM for the input projections of all steps and both
// directions' W_ih, one prep kernel (biases, initial states, counters: layer_prep_kernel), then one persistent kernel
// launch (persistent_fwd.cuh; a programmatic dependent of the prep kernel where its grid is small) running every step
// of both directions with W_hh held on chip, which writes hy / cy itself (float32 in place; 16-bit rounded at the last
// step), a kernel after it only for the projection's cy and an hy aliasing a float32 hx (persistent_layer_io.cuh).
// Training: the same kernel also writes the STANDARD algorithm's reserve space (standard_plan.h:
// activations, state slots, GRU's W_hn h + b_hn, layer outputs, dropped inputs), and backward data runs STANDARD's
// backward_data with the per-step loop of each layer replaced by one persistent backward kernel
// launch (persistent_bwd.cuh; 16-bit LSTM / GRU at H <= 512 on tensor cores, persistent_bwd_rs.cuh; H = 1024 in grid
// mode, persistent_bwd_grid.cuh; where no configuration takes the problem in one wave of clusters, STANDARD's own
// loop runs); the weight gradients are STANDARD's large GEMMs.
//
// Cells: LSTM, GRU linear-before-reset, RNN tanh/relu (every kernel version); GRU reset-before in the v4 cluster
// forward and the cluster backward only (H <= 512: two exchanges per step, persistent_fwd.cuh).
// LSTM projection: forward and backward data run the recurrence through W_eff = W_hh W_hr on the float32 LSTM
// kernels (persistent_proj.cuh says how).
//
// Hidden sizes other than the compiled 256/512/1024 run on the next compiled size Hc (persist::padded_hidden) with
// the units [H, Hc) as exact-zero padding inside the kernel (persistent_fwd.cuh); only xproj and hg are laid out
// with Hc (the input GEMM writes gate g at column g*Hc, one GEMM per gate when H != Hc); everything else keeps H.
//
// Workspace (inference), in order, each region 256-byte aligned (Carver): cuBLAS slices | lengths int32[B] (ragged
// only) | per direction: xproj float32 [T, B, G*Hc], bx, bh float32 [G*H], h0, c0, hn, cn float32 [B, H],
// hg float32 [2, B, Hc] (8 bytes per element: v10's tagged words), counters uint32[kMaxGroups] | layer outputs
// ping-pong T [T, B, D*H] x 2 (L > 1) | x staged sequence-major T [T, B, I] (batch-major input) | y staged T [T, B,
// D*H] (batch-major output or padding fill != 0). With the LSTM projection, y / hy / the layer outputs are P wide,
// and per direction weff, g0, hp, whr, hsx and one htil follow (Layout).
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <tuple>
#include <type_traits>
#include <memory>
#include <string>
#include <vector>

#include "cuda_backend.h"
#include "cuda_common.cuh"
#include "cuda_ops.h"
#include "persistent_algo.cuh"
#include "persistent_choice.h"
#include "persistent_layer_io.cuh"
#include "persistent_proj.cuh"
#include "philox.h"
#include "standard_impl.h"
#include "standard_plan.h"

namespace openrnn {
namespace cuda {
namespace {

using persist::BwdChoice;
using persist::BwdKernel;
using persist::Choice;
using persist::Kernel;
using persist::LaunchArgs;
using persist::Plan;
using persist::choose;
using persist::choose_bwd;
using persist::persist_v7_mode;
using persist::trace_choice;
using persist::trace_line;
using persist::trace_xprod;
using persist::v10_tile32_on;
using persist::v10_wg_on;
using persist::v7_preferred;
using persist_io::layer_post_kernel;
using persist_io::layer_prep_kernel;
using persist_io::PostArgs;
using persist_io::prep_blocks;
using persist_io::PrepArgs;
using persist_io::PrepDir;
using persist_io::reserve_init_kernel;

// The strict-float32 input projection's row split (session 44; docs/performance.md, "the input projection in whole
// waves of a pinned tile (session 44)"). xproj = x W_ih^T is [M = T*B, N = G*H] = [M, K] [N, K]^T; cuBLAS's 256 x 64
// kernel (256 columns of N by 64 rows of M, no split-K) runs two CTAs per SM, so one wave holds 2 * SMs tiles and its
// time steps at each whole wave (session 44, run 1: 98 / 177 / 352 us at 128 / 256 / 272+ tiles of M x 4096 x 1024).
// Where M's tiles would leave the last wave part-empty, cuBLAS's heuristic takes another kernel for the whole product
// (35-36 TFLOP/s at M = 1600 / 6400 against ~46 in whole waves). Rows [0, M1) then run on that 256 x 64 kernel, pinned
// through cuBLASLt, in the most whole waves that leave at least one 64-row block; the rest [M1, M) on cuBLAS's default
// on the aux lane, at the same time. Taken only where the rest is cheap after the waves: one 64-row block, or at least
// one 256 x 64 tile per SM (a rest that fills the GPU on its own); a rest in between, with a long K, costs more than
// the waves save (GRU M = 1600 N = 3072 K = 1024: 0.967x; run 1). And only where K >= 512: at LSTM H = 256 B = 64
// (M = 6400 N = 1024 K = 256, a ~100 us GEMM) the split the lab timed 3.4% faster made the whole call 2.6% slower
// (run 2). Bitwise repeatable: M1 and both kernels depend on the shape only (and on the cuBLAS version and GPU, as
// cuBLAS's own choice of kernel does). OPENRNN_XPROJ_SPLIT=0 turns it off (developer switch for A/B timing, read once
// per process).
// OPENRNN_PERSIST_TRACE=1: one line per distinct split of the input projection (as persistent_choice.cu's lines).
struct XprojSplit {
  int m1 = 0;                     // 0: one call on cuBLAS's default
  const LtPlan* plan = nullptr;   // rows [0, m1) (gemm.cu's cuBLASLt plan)
};

void trace_xproj_split(int M, int N, int K, int m1) {
  static const bool on = env_switch01("OPENRNN_PERSIST_TRACE") == 1;
  if (!on) return;
  static std::mutex mu;
  static std::set<std::tuple<int, int, int, int>> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (!seen.insert(std::make_tuple(M, N, K, m1)).second) return;
  std::fprintf(stderr,
               "openrnn PERSISTENT forward: input projection M=%d N=%d K=%d as rows %d (256x64 kernel, whole waves) + "
               "%d on two lanes\n",
               M, N, K, m1, M - m1);
}

// The split for [M, N, K] with ws_bytes of workspace per handle on device `dev` of `sms` SMs.
XprojSplit xproj_split_for(cublasHandle_t h, int dev, int M, int N, int K, size_t ws_bytes, int sms) {
  static const bool off = env_switch01("OPENRNN_XPROJ_SPLIT") == 0;
  if (off || M < 128 || N < 256 || K < 512 || sms <= 0) return XprojSplit{};
  // Whole waves of 2 * sms tiles, tn tiles per 64-row block: the most waves k whose blocks leave a rest.
  const long long tn = (N + 255) / 256, blocks = (M + 63) / 64, per_wave = 2LL * sms;
  long long g1 = 0;
  for (long long k = 1; (k * per_wave) / tn < blocks; ++k) g1 = (k * per_wave) / tn;
  if (g1 <= 0) return XprojSplit{};
  const long long rest_blocks = blocks - g1;
  if (!(rest_blocks == 1 || rest_blocks * tn >= sms)) return XprojSplit{};
  const int m1 = static_cast<int>(g1 * 64);
  // Rows [0, m1) of x [M, K] times W [N, K]^T into [m1, N], float32; cuBLASLt's default alignment (256 bytes).
  const LtShape sh{CUDA_R_32F, CUDA_R_32F, false, true, m1, N, K, K, K, N, {256, 256, 256}};
  const LtPlan& pl = lt_plan(h, dev, sh, ws_bytes, CUBLASLT_MATMUL_TILE_256x64, 0);
  if (!pl.ok) return XprojSplit{};  // no such kernel here: one call on the default
  return XprojSplit{m1, &pl};
}

// STANDARD's backward_data with each layer's recurrence run by the chosen persistent backward kernel.

class PersistentRecurrence final : public BwdRecurrence {
 public:
  PersistentRecurrence(const BwdChoice& ch, void* workspace) : ch_(ch), ws_(static_cast<char*>(workspace)) {}
  void run(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const StdLayout& s,
           const BwdLayer& b) const override {
    const StdDims& d = s.d;
    persist::BwdLaunchArgs la{};
    la.T = d.T;
    la.B = d.B;
    la.Hr = d.H;
    la.D = d.D;
    la.dy = b.dy;
    la.dy_rt = b.dy_rows.row_t;
    la.dy_rb = b.dy_rows.row_b;
    la.dy_width = b.dy_width;
    la.lengths = b.lens;
    la.clip = d.lstm ? static_cast<float>(rnn.cfg.cell_clip) : 0.f;
    for (int dir = 0; dir < d.D; ++dir) {
      const StdReserveDir& q = *b.rsv[dir];
      la.whh[dir] = b.whh[dir];
      la.acts[dir] = region<float>(b.reserve, q.acts);
      la.hs[dir] = region<char>(b.reserve, q.hs);
      la.cs[dir] = region<float>(b.reserve, q.cs);
      la.hn[dir] = region<float>(b.reserve, q.hn);
      la.dG[dir] = region<char>(b.reserve, q.dG);
      la.dGh[dir] = region<char>(b.reserve, q.dGh);
      la.dhy[dir] = b.dhy[dir];
      la.dcy[dir] = b.dcy[dir];
      la.dhx[dir] = b.dhx[dir];
      la.dcx[dir] = b.dcx[dir];
      persist::bwd_grid_bind(*ch_.k, ws_, s.workspace_bytes, d.B, dir, &la);
    }
    (void)x;
    ch_.k->launch(la, ch_.plan, ctx.stream);
  }

 private:
  BwdChoice ch_;
  char* ws_;
};

struct Layout {
  int T, B, I, H, Hc, G, L, D;
  int P, Hout;  // LSTM projection size (0: none); Hout = P or H, the width of y, hx and hy
  size_t es;
  size_t blas_ws = 0;  // cuBLAS workspace per handle (blas_ws_per_handle): the slices open the carve-up
  bool lens = false, stage_x = false, stage_y = false;
  size_t lens_off = 0, xproj[2]{}, bx[2]{}, bh[2]{}, h0[2]{}, c0[2]{}, hn[2]{}, cn[2]{}, hg[2]{}, flags[2]{};
  // LSTM projection only (per direction): weff float32 [G*H, H] = W_hh W_hr, g0 float32 [B, G*H] = hx W_hh^T,
  // hp float32 [T, B, P] = htil W_hr^T, whr float32 [P, H] (16-bit W_hr widened), hsx float32 [T+1, B, H] (training
  // only: the kernel's state slots, unread); htil float32 [T, B, D*H] (the kernel's y: o * tanh(c)).
  size_t weff[2]{}, g0[2]{}, hp[2]{}, whr[2]{}, hsx[2]{}, htil = SIZE_MAX;
  size_t ybuf[2]{SIZE_MAX, SIZE_MAX}, xs = SIZE_MAX, ys = SIZE_MAX;
  size_t bytes = 0;
};

size_t elem_size(openrnn_data_type dt) { return dt == OPENRNN_DATA_FLOAT ? 4 : dt == OPENRNN_DATA_DOUBLE ? 8 : 2; }

Layout make_layout(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, bool training) {
  Layout s{};
  s.T = x.T;
  s.B = x.B;
  s.I = rnn.cfg.input_size;
  s.H = rnn.cfg.hidden_size;
  s.Hc = persist::padded_hidden(s.H);
  s.G = rnn.G;
  s.L = rnn.cfg.num_layers;
  s.D = rnn.D;
  s.P = rnn.cfg.proj_size;
  s.Hout = s.P > 0 ? s.P : s.H;
  s.es = elem_size(rnn.cfg.data_type);
  s.lens = !x.all_full;
  s.stage_x = x.layout != OPENRNN_LAYOUT_SEQ_MAJOR;
  s.stage_y = x.layout != OPENRNN_LAYOUT_SEQ_MAJOR || x.fill != 0.0;
  const size_t TB = size_t(s.T) * s.B, BH = size_t(s.B) * s.H, GH = size_t(s.G) * s.H;
  const size_t GHc = size_t(s.G) * s.Hc, BHc = size_t(s.B) * s.Hc;
  s.blas_ws = blas_ws_per_handle(s.B, s.H, rnn.cfg.data_type, rnn.cfg.math_mode == OPENRNN_MATH_ALLOW_TF32);
  size_t off = cublas_workspace_bytes(s.blas_ws);
  auto take = [&off](size_t bytes) {
    const size_t o = off;
    off = align_up(off + bytes);
    return o;
  };
  if (s.lens) s.lens_off = take(sizeof(int32_t) * s.B);
  for (int d = 0; d < s.D; ++d) {
    s.xproj[d] = take(TB * GHc * 4);
    s.bx[d] = take(GH * 4);
    s.bh[d] = take(GH * 4);
    s.h0[d] = take(BH * 4);
    s.c0[d] = take(BH * 4);
    s.hn[d] = take(BH * 4);
    s.cn[d] = take(BH * 4);
    // float32 [2][B][Hc], or v10's tagged words [groups <= B][2][Hc] x 8 bytes; 16-bit LSTM at H = 1024 (v10's
    // wgmma tiles: a slot of whole 8-row atoms per tile) B + kV10WgExtraB sequences' room
    const bool wg_rows = rnn.cfg.cell == OPENRNN_CELL_LSTM && s.es == 2 && s.Hc == 1024 && s.P == 0;
    s.hg[d] = take(2 * (BHc + (wg_rows ? size_t(persist::kV10WgExtraB) * s.Hc : 0)) * 8);
    s.flags[d] = take(sizeof(unsigned) * persist::kMaxGroups);
    if (s.P > 0) {
      s.weff[d] = take(GH * s.H * 4);
      s.g0[d] = take(BH * s.G * 4);
      s.hp[d] = take(TB * s.P * 4);
      if (s.es != 4) s.whr[d] = take(size_t(s.P) * s.H * 4);  // 16-bit W_hr widened
      if (training) s.hsx[d] = take((TB + s.B) * s.H * 4);
    }
  }
  if (s.P > 0) s.htil = take(TB * s.D * s.H * 4);
  if (s.L > 1)
    for (int i = 0; i < 2; ++i) s.ybuf[i] = take(TB * s.D * s.Hout * s.es);
  if (s.stage_x) s.xs = take(TB * s.I * s.es);
  if (s.stage_y) s.ys = take(TB * s.D * s.Hout * s.es);
  s.bytes = off;
  return s;
}

template <typename T>
void forward_typed(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const Choice& ch,
                   const ForwardArgs& a) {
  const bool training = a.mode == OPENRNN_FWD_TRAINING;
  const Layout s = make_layout(rnn, x, training);
  StdLayout sl;
  if (training) sl = make_std_layout(rnn, x, true);
  char* rs = static_cast<char*>(a.reserve);
  auto rsv = [rs](size_t off) { return off == kAbsent ? nullptr : rs + off; };
  char* ws = static_cast<char*>(a.workspace);
  const cudaStream_t st = ctx.stream;
  ctx.bind_blas_workspace(a.workspace, s.blas_ws);
  int32_t* lens = s.lens ? reinterpret_cast<int32_t*>(ws + s.lens_off) : nullptr;
  if (lens) upload_lengths(x, lens, st);
  const GemmSpec g = gemm_spec(rnn.cfg.data_type, rnn.cfg.math_mode);
  const T* w = static_cast<const T*>(a.w);
  const int T_ = s.T, B = s.B, H = s.H, Hc = s.Hc, G = s.G, D = s.D, L = s.L, P = s.P, Hout = s.Hout;
  const long long TB = static_cast<long long>(T_) * B;
  const bool lstm = rnn.cfg.cell == OPENRNN_CELL_LSTM;
  const bool proj = P > 0;
  // The projection's r = W_hr htil GEMM on float32 operands: the storage type's spec for float32 (TF32 only where the
  // caller allowed it), strict float32 for 16-bit types (htil is float32; W_hr is widened once per call).
  const GemmSpec g32 = gemm_spec(OPENRNN_DATA_FLOAT, std::is_same<T, float>::value ? rnn.cfg.math_mode
                                                                                      : OPENRNN_MATH_DEFAULT);
  const T* xin = static_cast<const T*>(a.x);
  if (s.stage_x) {
    T* xs = reinterpret_cast<T*>(ws + s.xs);
    copy_rows<T, T>(xin, layout_rows(x.layout, T_, B), xs, seq_major_rows(B), T_, B, s.I, nullptr, 0.0, st);
    xin = xs;
  }
  auto f32 = [ws](size_t off) { return reinterpret_cast<float*>(ws + off); };
  // OPENRNN_PERSIST_PDL=0 (developer switch, read once): the forward kernel starts after the prep kernel ends (no PDL).
  static const bool pdl = env_switch01("OPENRNN_PERSIST_PDL") != 0;
  for (int l = 0; l < L; ++l) {
    const int Il = rnn.layer_input_size(l);
    const T* in = l == 0 ? xin : reinterpret_cast<const T*>(ws + s.ybuf[(l - 1) & 1]);
    void* out = l < L - 1 ? static_cast<void*>(ws + s.ybuf[l & 1]) : (s.stage_y ? static_cast<void*>(ws + s.ys) : a.y);
    if (training) {
      // Layer outputs live in the reserve (STANDARD's backward reads them); with dropout, layer l reads its
      // dropped input x_l, also kept in the reserve (same Philox mask as STANDARD: philox.h).
      if (l > 0) {
        const T* prev = reinterpret_cast<const T*>(rsv(sl.rsv_y[static_cast<size_t>(l - 1)]));
        if (sl.dropout) {
          T* xl = reinterpret_cast<T*>(rsv(sl.rsv_x[static_cast<size_t>(l)]));
          dropout_apply(prev, xl, TB * D * Hout, rnn.cfg.dropout_seed, rnn.dropout_offset, l,
                        dropout_threshold(rnn.cfg.dropout), 1.0 / (1.0 - rnn.cfg.dropout), st);
          in = xl;
        } else {
          in = prev;
        }
      }
      if (l < L - 1) out = rsv(sl.rsv_y[static_cast<size_t>(l)]);
    }
    LaunchArgs la{};
    la.T = T_;
    la.B = B;
    la.Hr = H;
    la.D = D;
    la.y = proj ? static_cast<void*>(f32(s.htil)) : out;
    la.lengths = lens;
    la.clip = lstm ? static_cast<float>(rnn.cfg.cell_clip) : 0.f;
    // v10's tagged words: zeroed by the prep kernel where its tiles of one run (B <= 8), else by the launch's memset.
    const long long hg_words = B <= 8 ? 2LL * B * Hc : 0;
    // float32 storage without the projection: the kernel reads hx / cx and writes hy / cy itself (its float32 h0 / c0 /
    // hn / cn are the caller's tensors), no conversions before or after it.
    const bool direct = std::is_same<T, float>::value && !proj;
    PrepArgs<T> prep;
    prep.GH = G * H;
    prep.H = H;
    prep.BH = static_cast<long long>(B) * H;
    prep.hg_words = hg_words;
    prep.gru = rnn.cfg.cell == OPENRNN_CELL_GRU;
    prep.n = std::max({static_cast<long long>(prep.GH), prep.BH, static_cast<long long>(persist::kMaxGroups),
                       hg_words});
    // The input projections of every step, xproj[d] = x W_ih^T (float32, no bias), one GEMM per direction; before
    // proj_fwd_begin, which adds to xproj. Or, where the kernel has producer CTAs that fit beside the plan (float32
    // tiles of one: Kernel::xprod_plan, persistent_fwd_v10.cuh), inside the launch, overlapped with the recurrence.
    size_t xprod_smem = 0;
    const int xprod = std::is_same<T, float>::value && !proj
                          ? ch.k->xprod_plan(ctx.props, ch.plan, B, D, Il, &xprod_smem)
                          : 0;
    if (xprod > 0) {
      trace_xprod(ch.k->name(), xprod, xprod_smem, B, D, Il);
      la.xprod = xprod;
      la.xprod_smem = xprod_smem;
      la.Il = Il;
      la.xin = in;
      for (int d = 0; d < D; ++d) la.wih[d] = w + rnn.weights.offset(l, d, OPENRNN_WEIGHT_IH, D);
    }
    for (int d = 0; d < D && xprod == 0; ++d) {
      const size_t o_ih = rnn.weights.offset(l, d, OPENRNN_WEIGHT_IH, D);
      // Strict float32, one direction: rows [0, m1) on the pinned 256 x 64 kernel in whole waves and [m1, TB) on
      // cuBLAS's default on the aux lane, where that pays (xproj_split_for); eagerly both on the main stream, one
      // after the other (Context::overlap_lanes: the same kernels, so the same bits as a captured call).
      const XprojSplit sp =
          std::is_same<T, float>::value && g.compute == CUBLAS_COMPUTE_32F && D == 1 && H == Hc
              ? xproj_split_for(ctx.blas, ctx.device, static_cast<int>(TB), G * H, Il, s.blas_ws,
                                ctx.props.multiProcessorCount)
              : XprojSplit{};
      if (sp.m1 > 0) {
        const int m1 = sp.m1;
        trace_xproj_split(static_cast<int>(TB), G * H, Il, m1);
        const bool overlap = ctx.overlap_lanes();
        if (overlap) ctx.fork(2);
        // The main handle's workspace slice is the first s.blas_ws bytes of the workspace (bind_blas_workspace).
        lt_gemm_rm(ctx.blas, *sp.plan, 1.f, in, w + o_ih, 0.f, f32(s.xproj[d]), a.workspace, s.blas_ws, ctx.stream);
        gemm_rm(ctx.lane_blas(overlap ? 1 : 0), g, false, true, static_cast<int>(TB) - m1, G * H, Il, 1.0,
                in + static_cast<size_t>(m1) * Il, Il, w + o_ih, Il, 0.0,
                f32(s.xproj[d]) + static_cast<size_t>(m1) * G * H, CUDA_R_32F, G * H);
        if (overlap) ctx.join(2);
      } else if (H == Hc) {
        gemm_rm(ctx.blas, g, false, true, static_cast<int>(TB), G * H, Il, 1.0, in, Il, w + o_ih, Il, 0.0,
                f32(s.xproj[d]), CUDA_R_32F, G * H);
      } else {  // gate gg -> columns [gg*Hc, gg*Hc + H) of [TB, G*Hc]; the padded columns are never read
        for (int gg = 0; gg < G; ++gg)
          gemm_rm(ctx.blas, g, false, true, static_cast<int>(TB), H, Il, 1.0, in, Il,
                  w + o_ih + static_cast<size_t>(gg) * H * Il, Il, 0.0, f32(s.xproj[d]) + static_cast<size_t>(gg) * Hc,
                  CUDA_R_32F, G * Hc);
      }
    }
    for (int d = 0; d < D; ++d) {
      const size_t o_hh = rnn.weights.offset(l, d, OPENRNN_WEIGHT_HH, D);
      const size_t o_bi = rnn.weights.offset(l, d, OPENRNN_BIAS_IH, D);
      const size_t o_bh = rnn.weights.offset(l, d, OPENRNN_BIAS_HH, D);
      const size_t soff = (size_t(l) * D + d) * B * H, roff = (size_t(l) * D + d) * B * Hout;
      const T* hx = static_cast<const T*>(a.hx);
      const T* cx = static_cast<const T*>(a.cx);
      PrepDir<T>& q = prep.d[d];
      q.bih = o_bi == SIZE_MAX ? nullptr : w + o_bi;
      q.bhh = o_bh == SIZE_MAX ? nullptr : w + o_bh;
      q.bx = f32(s.bx[d]);
      q.bh = f32(s.bh[d]);
      // Projection: the kernel starts from h = 0; hx (= r_0, width P) enters through the first step's xproj.
      q.hx = hx && !proj ? hx + soff : nullptr;
      q.h0 = direct ? nullptr : f32(s.h0[d]);
      q.cx = lstm && cx ? cx + soff : nullptr;
      q.c0 = lstm && !direct ? f32(s.c0[d]) : nullptr;
      q.flags = reinterpret_cast<unsigned*>(ws + s.flags[d]);
      q.hg = hg_words ? reinterpret_cast<unsigned long long*>(ws + s.hg[d]) : nullptr;
      if (proj)
        proj_fwd_begin<T>(ctx, g, w + o_hh, w + rnn.weights.offset(l, d, OPENRNN_WEIGHT_HR, D), hx ? hx + roff : nullptr,
                          f32(s.weff[d]), f32(s.g0[d]), f32(s.xproj[d]), s.es != 4 ? f32(s.whr[d]) : nullptr, lens, T_,
                          B, G, H, Hc, P, d == 1);
      la.xproj[d] = f32(s.xproj[d]);
      la.whh[d] = proj ? static_cast<const void*>(f32(s.weff[d])) : static_cast<const void*>(w + o_hh);
      la.bx[d] = f32(s.bx[d]);
      la.bh[d] = f32(s.bh[d]);
      if (direct) {
        la.h0[d] = hx ? reinterpret_cast<const float*>(hx + soff) : nullptr;
        la.c0[d] = q.cx ? reinterpret_cast<const float*>(q.cx) : nullptr;
      } else {
        la.h0[d] = f32(s.h0[d]);
        la.c0[d] = f32(s.c0[d]);
      }
      // An output that is also the input (a caller updating its state in place) goes through the workspace.
      la.hn[d] = direct && a.hy && a.hy != a.hx ? reinterpret_cast<float*>(static_cast<T*>(a.hy) + soff) : f32(s.hn[d]);
      la.cn[d] = direct && a.cy && a.cy != a.cx ? reinterpret_cast<float*>(static_cast<T*>(a.cy) + soff) : f32(s.cn[d]);
      // 16-bit storage without the projection: the kernel rounds its final states into hy / cy itself (no
      // conversion kernel after it; session 21). It reads its float32 copies of hx / cx (the prep kernel's, complete
      // before the last step's stores: pdl_wait), so hy may alias hx.
      if (!direct && !proj) {
        la.hy[d] = a.hy ? static_cast<void*>(static_cast<T*>(a.hy) + soff) : nullptr;
        la.cy[d] = lstm && a.cy ? static_cast<void*>(static_cast<T*>(a.cy) + soff) : nullptr;
      }
      la.hg[d] = f32(s.hg[d]);
      la.flags[d] = q.flags;
    }
    if (training) {
      // The reserve (STANDARD's layout); without the projection the prep kernel also writes its state slots that the
      // kernel does not (persist_io::reserve_slots).
      prep.lens = lens;
      prep.steps = T_;
      prep.B = B;
      for (int d = 0; d < D; ++d) {
        const StdReserveDir& q = sl.rsv[static_cast<size_t>(l * D + d)];
        la.rs_acts[d] = reinterpret_cast<float*>(rsv(q.acts));
        la.rs_hs[d] = proj ? static_cast<void*>(f32(s.hsx[d])) : rsv(q.hs);
        la.rs_cs[d] = reinterpret_cast<float*>(rsv(q.cs));
        la.rs_hn[d] = reinterpret_cast<float*>(rsv(q.hn));
        la.rs_rh[d] = rsv(q.rh);
        if (!proj) {
          prep.d[d].rs_hs = static_cast<T*>(la.rs_hs[d]);
          prep.d[d].rs_cs = la.rs_cs[d];
        }
      }
    }
    layer_prep_kernel<T><<<dim3(prep_blocks(prep.n), D), 256, 0, st>>>(prep);
    OPENRNN_LAUNCH_CHECK("layer_prep_kernel");
    // The programmatic dependent launch after the prep kernel, for every grid of at most one CTA per SM (session 44,
    // run 10, H100: up to 128 CTAs measured; before, at most half the SMs). Grids of 96-112 CTAs gain with it (v9
    // 16-bit H = 256 B = 64, 104 CTAs: -2.2 to -2.8%; H = 512 B = 16, 96 CTAs: -0.6 to -1.4%), 128-CTA v10 grids move
    // within +-0.5%. (Session 19 had measured v10 LSTM float16 H = 1024 B = 16, 128 CTAs, slower with it: 3.80-4.14
    // µs/step against 3.64-3.77; run 10 measured 3.344 against 3.354.)
    const long long ctas = static_cast<long long>(ch.plan.C) * ch.plan.groups * D;
    // Training too (session 20), except with the projection, whose reserve initialisation runs between the two.
    // OPENRNN_PERSIST_PDL_MAX_CTAS=n (developer switch, session 44, read once): the grid limit, in place of the SMs.
    static const int pdl_max = env_int("OPENRNN_PERSIST_PDL_MAX_CTAS");
    const bool use_pdl =
        pdl && !(training && proj) && ctas <= (pdl_max > 0 ? pdl_max : ctx.props.multiProcessorCount);
    la.prep = persist::kPrepFlags | (hg_words ? persist::kPrepHg : 0u) | (use_pdl ? persist::kPrepPdl : 0u);
    if (training && proj)
      for (int d = 0; d < D; ++d) {  // the kernel's float32 state slots (unread) and the cell slots; proj_post_kernel
                                     // writes the reserve's hs
        reserve_init_kernel<float><<<grid_for(static_cast<long long>(B) * H, 256), 256, 0, st>>>(
            la.h0[d], la.c0[d], f32(s.hsx[d]), la.rs_cs[d], lens, T_, B, H, d == 1);
        OPENRNN_LAUNCH_CHECK("reserve_init_kernel");
      }
    ch.k->launch(la, ch.plan, st);
    PostArgs<T> post;
    post.BH = static_cast<long long>(B) * H;
    bool any_post = false;
    for (int d = 0; d < D; ++d) {
      const size_t soff = (size_t(l) * D + d) * B * H, roff = (size_t(l) * D + d) * B * Hout;
      if (proj) {
        const StdReserveDir* q = training ? &sl.rsv[static_cast<size_t>(l * D + d)] : nullptr;
        const T* hx = static_cast<const T*>(a.hx);
        proj_fwd_end<T>(ctx, g32, w + rnn.weights.offset(l, d, OPENRNN_WEIGHT_HR, D),
                        s.es != 4 ? f32(s.whr[d]) : nullptr, f32(s.htil), D, d, f32(s.hp[d]), hx ? hx + roff : nullptr,
                        static_cast<T*>(out), q ? reinterpret_cast<T*>(rsv(q->hs)) : nullptr,
                        q ? reinterpret_cast<T*>(rsv(q->htil)) : nullptr,
                        a.hy ? static_cast<T*>(a.hy) + roff : nullptr, lens, T_, B, H, P);
      } else if (a.hy && !la.hy[d] && la.hn[d] == f32(s.hn[d])) {
        post.hn[d] = f32(s.hn[d]);
        post.hy[d] = static_cast<T*>(a.hy) + soff;
      }
      if (lstm && a.cy && !la.cy[d] && la.cn[d] == f32(s.cn[d])) {
        post.cn[d] = f32(s.cn[d]);
        post.cy[d] = static_cast<T*>(a.cy) + soff;
      }
      any_post = any_post || post.hy[d] || post.cy[d];
    }
    if (any_post) {
      layer_post_kernel<T><<<dim3(prep_blocks(post.BH), D), 256, 0, st>>>(post);
      OPENRNN_LAUNCH_CHECK("layer_post_kernel");
    }
  }
  if (s.stage_y)
    copy_rows<T, T>(reinterpret_cast<const T*>(ws + s.ys), seq_major_rows(B), static_cast<T*>(a.y),
                    layout_rows(x.layout, T_, B), T_, B, D * Hout, lens, x.fill, st);
}

// The storage type of the forward kernel: the problem's, except for the LSTM projection, which runs the float32
// kernels in every storage type (W_eff = W_hh W_hr is a float32 product, kept unrounded; see above).
openrnn_data_type kernel_dtype(const openrnn_rnn_desc& rnn) {
  return rnn.has_proj() ? OPENRNN_DATA_FLOAT : rnn.cfg.data_type;
}

// The persistent backward kernel of a problem, or none (STANDARD's per-step loop runs). The LSTM projection takes the
// float32 kernels, as its forward (PersistentProjRecurrence).
BwdChoice bwd_choice(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x) {
  return choose_bwd(ctx.props, rnn.cfg.cell, kernel_dtype(rnn), rnn.cfg.hidden_size, x.B, rnn.D);
}

class PersistentAlgo final : public CudaAlgo {
 public:
  openrnn_algo id() const override { return OPENRNN_ALGO_PERSISTENT; }

  AlgoQuery supports(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                     openrnn_fwd_mode mode) const override {
    AlgoQuery q;
    q.chosen = OPENRNN_ALGO_PERSISTENT;
    q.supported = false;
    const openrnn_rnn_config& c = rnn.cfg;
    const int H = c.hidden_size;
    if (c.data_type == OPENRNN_DATA_DOUBLE) {
      q.reason = "PERSISTENT supports float32, float16 and bfloat16; float64 runs on STANDARD";
    } else if (c.cell == OPENRNN_CELL_GRU_RESET_BEFORE && persist::padded_hidden(H) > 512) {
      // The reset gate multiplies h before W_hn: the n rows' product needs r of the same step, a second exchange per
      // step. Built for the cluster kernels (W_hh in one cluster); at H = 1024 it would be a second grid round trip.
      q.reason = "PERSISTENT runs the reset-before GRU up to hidden size 512 (W_hh in one thread-block cluster: its "
                 "second exchange per step, r * h before W_hn, stays on chip); H=" + std::to_string(H) +
                 " runs on STANDARD";
    } else if (persist::padded_hidden(H) == 0) {
      q.reason = "PERSISTENT holds W_hh on chip up to hidden size 1024 in this build; H=" + std::to_string(H) +
                 " runs on STANDARD";
    } else if (static_cast<long long>(x.T) * x.B > INT_MAX / (rnn.G * persist::padded_hidden(H))) {
      q.reason = "PERSISTENT: T*B*G*H exceeds the 32-bit GEMM dimensions";
    } else {
      const Choice ch = choose(ctx.props, c.cell, kernel_dtype(rnn), H, x.B, rnn.D);
      if (!ch.k) {
        q.reason = std::string("PERSISTENT: ") + (rnn.has_proj() ? "the LSTM projection runs the float32 LSTM "
                                                                   "kernels (W_hh W_hr, [4H, H] float32); " : "") +
                   ch.why;
      } else {
        q.supported = true;
      }
    }
    return q;
  }

  TempSizes sizes(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                  openrnn_fwd_mode mode) const override {
    const size_t own = make_layout(rnn, x, mode == OPENRNN_FWD_TRAINING).bytes;
    if (mode != OPENRNN_FWD_TRAINING) return TempSizes{own, 0};
    // Training: the reserve is STANDARD's (backward data and weights run its code), the workspace serves both.
    const TempSizes st = standard_->sizes(ctx, rnn, x, mode);
    size_t ws = st.workspace;
    const BwdChoice ch = bwd_choice(ctx, rnn, x);
    if (ch.k) {
      // past STANDARD's backward workspace: the grid kernels' buffers, then the projection's scratch
      const size_t end = persist::bwd_grid_end(ch.k, make_std_layout(rnn, x, true).workspace_bytes, x.B, rnn.D);
      ws = std::max(ws, rnn.has_proj() ? proj_bwd_layout(rnn, x, end).end : end);
    }
    return TempSizes{std::max(own, ws), st.reserve};
  }

  void forward(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
               const ForwardArgs& a) override {
    const Choice ch = choose(ctx.props, rnn.cfg.cell, kernel_dtype(rnn), rnn.cfg.hidden_size, x.B, rnn.D);
    if (!ch.k) not_supported("PERSISTENT: " + ch.why);
    trace_choice(ch, x.B, rnn.D);
    switch (rnn.cfg.data_type) {
      case OPENRNN_DATA_FLOAT: return forward_typed<float>(ctx, rnn, x, ch, a);
      case OPENRNN_DATA_HALF: return forward_typed<__half>(ctx, rnn, x, ch, a);
      case OPENRNN_DATA_BFLOAT16: return forward_typed<__nv_bfloat16>(ctx, rnn, x, ch, a);
      default: not_supported("PERSISTENT supports float32, float16 and bfloat16");
    }
  }

  // The reserve written by forward(TRAINING) is STANDARD's: its backward_data runs, each layer's recurrence in the
  // persistent backward kernel where one takes the problem.
  void backward_data(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                     const BackwardDataArgs& a) override {
    const BwdChoice ch = bwd_choice(ctx, rnn, x);
    if (!ch.k) return standard_->backward_data(ctx, rnn, x, a);
    trace_line("backward", ch.k->name(), ch.plan, x.B, rnn.D);
    const StdLayout s = make_std_layout(rnn, x, true);
    std::unique_ptr<BwdRecurrence> rec;
    if (rnn.has_proj())
      rec = make_proj_recurrence(
          rnn.cfg.data_type, *ch.k, ch.plan, a.workspace,
          proj_bwd_layout(rnn, x, persist::bwd_grid_end(ch.k, s.workspace_bytes, x.B, rnn.D)));
    else
      rec = std::make_unique<PersistentRecurrence>(ch, a.workspace);
    switch (rnn.cfg.data_type) {
      case OPENRNN_DATA_FLOAT: return std_backward_data<float>(ctx, rnn, x, s, a, rec.get());
      case OPENRNN_DATA_HALF: return std_backward_data<__half>(ctx, rnn, x, s, a, rec.get());
      case OPENRNN_DATA_BFLOAT16: return std_backward_data<__nv_bfloat16>(ctx, rnn, x, s, a, rec.get());
      default: return standard_->backward_data(ctx, rnn, x, a);
    }
  }
  void backward_weights(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x,
                        const BackwardWeightsArgs& a) override {
    standard_->backward_weights(ctx, rnn, x, a);
  }

 private:
  std::unique_ptr<CudaAlgo> standard_ = make_standard_algo();
};

}  // namespace

// Padded sizes (PERSISTENT runs the kernels of padded_hidden(H) with the units past H exact-zero padding). Session 61
// timed one layer and direction, LSTM / GRU / RNN cells without projection (run 5, H200, float16 and float32, T = 100,
// graph, best of two processes; ratios STANDARD / PERSISTENT, inference and training alike unless named): at B <= 16
// PERSISTENT is 1.2-4.3x faster at every size timed (H = 64-224 step 32, 384, 768). Beyond, where it stays faster in
// both modes:
// - H = 64-224: 16-bit LSTM / GRU up to B = 128 at H = 64 (1.12-1.51; B = 256 0.88-1.01) and 256 from H = 96
//   (1.08-2.02); 16-bit RNN up to B = 16 at H = 64 (B = 64 0.93) and 64 from H = 96 (1.09-1.47; B = 128 0.83-1.09);
//   float32: session 62's edges below.
// - H = 384: 16-bit LSTM / GRU up to B = 128 (1.27-1.44; B = 256 0.80-0.85), float32 up to 64 (1.04-1.17; B = 128
//   0.73-0.94); RNN up to B = 16 in 16 bits (B = 64 0.95 / 1.00), 128 in float32 (1.06-1.70; B = 256 0.95 / 1.01).
// - H = 768: 16-bit LSTM / GRU up to B = 64 (1.01-1.07; B = 128 0.57-0.84), the rest up to B = 16 (1.19-1.48).
// PERSISTENT's cost is its padded size's whatever H, STANDARD's grows with H: the edges timed at H = 384 and 768 hold
// above them (up to 511 and 1023).
// Session 62 (run 1, H200, the same method; `training`: the call is forward(TRAINING) or a backward):
// - float32 at H = 64-255 after STANDARD's fused steps past B = 64 (run 4, one process per algorithm and mode): LSTM /
//   GRU at H = 64 inference up to B = 16 (LSTM) / 96 (GRU), training up to 96 (LSTM B = 64 8.57 / 7.54; B = 128
//   STANDARD 10.1 / 13.3); H = 96 up to B = 96 (LSTM B = 128 5.03 / 5.54); H = 128-159 up to 128; RNN up to B = 96 /
//   128 (inference / training) at H = 64-95, 128 at 96-159 (B = 256 STANDARD 3.5-3.6 / 4.8), 256 from 160.
// - H = 32-63: 16-bit LSTM / GRU up to B = 128 (1.89-3.96), RNN up to 16 (B = 64 0.91; training to 96: session 63,
//   runs 1-2, B = 96 1.19, 128 0.85); float32 LSTM / GRU up to 16 (B = 64 0.95-0.99 / 1.10-1.26: training up to 64),
//   RNN up to 64 (1.32-1.58; training to 180: sessions 64-65, B = 144-180 1.08-1.13; B = 181-184 0.85-0.89).
// - H = 257-383 (272, 320, 352): 16-bit LSTM / GRU up to B = 128 (1.17-1.47), RNN up to 16 (B = 64 0.86-1.00); float32
//   up to 64 (1.03-1.20).
// - H = 513-767 (544, 600, 700): up to B = 16 (1.09-2.25); 16-bit LSTM / GRU up to 64 at H <= 640 (H = 600 B = 64
//   1.12-1.15, training 1.05-1.06; H = 544 / 640 within 4% either way), above H = 640 inference only B = 1.
// - Two directions or two layers (not both) at H = 128-255 (timed at 128 and 192): 16-bit LSTM / GRU up to B = 128
//   (1.33-3.09); 16-bit RNN up to 16 at H < 192 with two directions (B = 64 0.87 / 0.91), else 64 (two layers at
//   H >= 192: 128); float32 LSTM / GRU up to 16 (B = 64 0.91-1.31), RNN up to 64 (1.07-1.43).
// - GRU reset-before (H = 128 / 384, float16 and float32): up to B = 128 at H = 64-255 (1.13-1.91), 64 at H = 384-511
//   (1.07-1.45; B = 128 0.75-0.99). LSTM projection (H = 128 P = 64, H = 384 P = 128): up to B = 128 at H = 64-255
//   (1.49-7.0x), 64 at H = 384-511 (1.50-2.17; float16 training a tie, 0.99).
// Three or more layers, two layers with two directions, H < 32 and other sizes keep STANDARD (not timed).
static bool padded_preferred(const openrnn_rnn_desc& rnn, int H, int B, bool w16, bool training) {
  const openrnn_cell cell = rnn.cfg.cell;
  const bool rnn_cell = cell == OPENRNN_CELL_RNN_TANH || cell == OPENRNN_CELL_RNN_RELU;
  const int L = rnn.cfg.num_layers, D = rnn.D;
  if (cell == OPENRNN_CELL_GRU_RESET_BEFORE || rnn.has_proj()) {
    if (L != 1 || D != 1) return false;
    if (H >= 64 && H < 256) return B <= 128;
    if (H >= 384 && H < 512) return B <= 64;
    return false;
  }
  if (!rnn_cell && cell != OPENRNN_CELL_LSTM && cell != OPENRNN_CELL_GRU) return false;
  if (L * D == 2) {  // two layers of one direction, or one layer of two
    if (H < 128 || H >= 256) return false;
    if (!w16) return B <= (rnn_cell ? 64 : 16);
    if (!rnn_cell) return B <= 128;
    return B <= (D == 2 ? (H >= 192 ? 64 : 16) : (H >= 192 ? 128 : 64));
  }
  if (L != 1 || D != 1) return false;
  if (H >= 32 && H < 64) {
    if (rnn_cell) return B <= (w16 ? (training ? 96 : 16) : training ? 180 : 64);
    return B <= (w16 ? 128 : training ? 64 : 16);
  }
  if (H >= 64 && H < 256) {
    if (rnn_cell) return B <= (w16 ? (H >= 96 ? 64 : 16) : H >= 160 ? 256 : H >= 96 || training ? 128 : 96);
    if (w16) return B <= (H >= 96 ? 256 : 128);
    if (H >= 128) return B <= (H >= 160 ? 256 : 128);
    if (H >= 96) return B <= 96;
    return B <= (training || cell == OPENRNN_CELL_GRU ? 96 : 16);
  }
  if (H > 256 && H < 384) return B <= (w16 ? (rnn_cell ? 16 : 128) : 64);
  if (H >= 384 && H < 512) return B <= (rnn_cell ? (w16 ? 16 : 128) : (w16 ? 128 : 64));
  if (H > 512 && H < 768) {
    if (!w16 || rnn_cell) return B <= 16;
    return B <= (H <= 640 ? 64 : training ? 16 : 1);
  }
  if (H >= 768 && H < 1024) return B <= (!rnn_cell && w16 ? 64 : 16);
  return false;
}

bool persistent_preferred(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, openrnn_fwd_mode mode,
                          const cudaDeviceProp& prop) {
  // Only what was measured: every cell at the compiled sizes (H = 256, 512, 1024); padded sizes where session 61 timed
  // them (padded_preferred). Elsewhere PERSISTENT runs only when asked for explicitly.
  const int H = rnn.cfg.hidden_size, B = x.B;
  const bool w16 = rnn.cfg.data_type == OPENRNN_DATA_HALF || rnn.cfg.data_type == OPENRNN_DATA_BFLOAT16;
  if (persist::padded_hidden(H) != H) return padded_preferred(rnn, H, B, w16, mode == OPENRNN_FWD_TRAINING);
  // LSTM projection (the recurrence through W_eff on the float32 kernels, forward and backward data). H200 2026-11-22,
  // P = 128, T = 100, one layer, µs/step, PERSISTENT vs STANDARD (docs/performance.md, "PERSISTENT with the LSTM
  // projection"): H = 256 every B <= 256 (B = 256: inference 12.9 vs 26.7 float32, 9.9 vs 23.7 float16; training
  // 39.0 vs 65.3, 27.8 vs 53.7); H = 512 / 1024 B <= 16 2.1-10.5 vs 18-32 (training 3.8-27.7 vs 45-66); H = 512
  // B = 64 10.7 vs 27.1 (training 49.8 vs 65.8); B = 256 at H = 512 STANDARD (40.3 vs 52.3, training 102.7 vs 115.9);
  // H = 1024 B = 64 STANDARD (39.6 vs 43.1, float16 23.0 vs 31.9; training float32 102.5 vs 106.3) but float16
  // training (52.9 vs 67.7; P = 256: 54.3 vs 59.4), B = 256 STANDARD (78 vs 159).
  if (rnn.has_proj()) {
    if (B > 256) return false;
    if (H <= 256) return true;
    if (B <= 16) return true;
    if (H == 512) return B <= 64;
    return B <= 64 && w16 && mode == OPENRNN_FWD_TRAINING;
  }
  // GRU reset-before (v4 cluster forward and backward, H <= 512; H100 2026-11-21, T = 100, µs/step, PERSISTENT vs
  // STANDARD, whose per-step loop is two cuBLAS GEMMs and two pointwise kernels): inference B <= 64 2.5-17.8 vs
  // 27-43, training 5.6-60.3 vs 51-85, every dtype; B = 256: H = 256 13.9-15.1 vs 32.1-32.2 (training 54-62 vs
  // 65-85), but H = 512 50-77 vs 33-45 (training 73-161 vs 57-128) (docs/performance.md, "PERSISTENT GRU
  // reset-before"). Larger B was not timed.
  if (rnn.cfg.cell == OPENRNN_CELL_GRU_RESET_BEFORE) return B <= 64 || (H == 256 && B <= 256);
  // RNN tanh / relu (session 41, runs 1-2, H100, T = 100, graph, µs/step, STANDARD against PERSISTENT;
  // docs/performance.md, "AUTO's RNN rule"). PERSISTENT is faster at H = 256 and 512 up to B = 64 in every dtype,
  // both directions and two layers (float32 inference B = 1 H = 256 2.96 vs 0.71, B = 64 H = 512 6.44 vs 4.85; float16
  // B = 64 H = 512 6.44 vs 4.09, two directions 12.51 vs 7.61; training 1.04-3.3x). At H = 1024 it is faster up to
  // B = 24 in 16 bits (float16 B = 24 6.18 vs 3.74) and loses from B = 32 (6.18 vs 6.65; B = 64 6.89 vs 9.72, two
  // directions 9.55 vs 18.74, training 14.39 vs 16.92); in float32 it is faster up to B = 64 (B = 48 16.94 vs 9.48,
  // B = 64 17.89 vs 16.91, training 39.83 vs 37.86, two directions 30.88 vs 27.10). tanh and relu timed alike.
  // Larger B was not timed until session 60 (run 5, H200, float16 tanh, one layer and direction, graph, one process,
  // µs/step, STANDARD with its 12-warp mma.sync blocks against PERSISTENT): at H = 256 PERSISTENT stays faster past
  // B = 64 (B = 96 inference 3.20 vs 2.00, training 7.53 vs 4.39; B = 128 2.96 vs 2.80, 7.31 vs 6.10; B = 192 3.82 vs
  // 3.59, 8.36 vs 7.88) and loses at B = 256 (run 4: 3.87 vs 4.40, 9.01 vs 9.73). At H = 512 the edge stays at 64
  // (B = 96 5.18 vs 5.26, 11.00 vs 11.51).
  // Session 61 (runs 2-3, H200, float16 tanh unless named, graph, best of two processes, µs/step inference /
  // training, STANDARD with its 16-warp mma.sync backward against PERSISTENT) timed two layers and two directions:
  // - H = 256, two layers: PERSISTENT up to B = 192, as one layer (B = 96 3.15 vs 1.98, 6.92 vs 4.30, bfloat16 alike;
  //   B = 160 3.54 vs 2.80, 7.71 vs 6.07; B = 192 3.80 vs 3.57, 7.76 vs 7.85). Two directions: up to B = 128 (B = 96
  //   4.02 vs 3.62, 8.10 vs 8.04; B = 128 5.35 vs 4.46, 9.61 vs 9.80; B = 160 4.29 vs 5.28, 10.17 vs 11.58).
  // - H = 512: STANDARD from B = 57 with one direction (one layer B = 56 3.86 vs 2.92, 8.39 vs 7.27; B = 60 3.86 vs
  //   4.07, 8.46 vs 8.50; B = 64 3.92 vs 4.09, and two layers 3.90 vs 4.07, 8.52 vs 8.29); two directions B = 48
  //   5.40 vs 5.31, 10.37 vs 10.28, B = 64 7.21 vs 7.68, 12.72 vs 13.31.
  // Runs 4-5 (same method) placed the edges between those sizes:
  // - H = 512, one direction: STANDARD from B = 57 (B = 57-59 3.85-3.87 vs 4.05-4.06, training within 1.3% either
  //   way). Two directions: from B = 61 (B = 50-60 7.11-7.18 vs 6.45-6.48, 12.11-12.47 vs 11.50-11.90; B = 62 7.19 vs
  //   7.63, 12.59 vs 13.19).
  // - H = 256, two directions: STANDARD from B = 129 (4.13 vs 4.45).
  // - Three and four layers follow one: H = 256 B = 65-192 (3 layers B = 96 3.16 vs 1.97, 6.89 vs 4.30; B = 192 3.78
  //   vs 3.56, 7.75 vs 7.80; 4 layers alike), H = 512 B = 56 / 57 (3.82 vs 2.88 / 3.83 vs 4.02). The edges at H = 512
  //   follow inference: training just past them is 3-4% PERSISTENT's (3 layers B = 57 8.52 vs 8.17).
  if (rnn.cfg.cell == OPENRNN_CELL_RNN_TANH || rnn.cfg.cell == OPENRNN_CELL_RNN_RELU) {
    if (w16 && H == 256) return B <= (rnn.D == 1 ? 192 : 128);
    if (w16 && H == 512) return B <= (rnn.D == 1 ? 56 : 60);
    return H <= 512 || !w16 ? B <= 64 : B <= 24;
  }
  if (rnn.cfg.cell != OPENRNN_CELL_LSTM && rnn.cfg.cell != OPENRNN_CELL_GRU) return false;
  // STANDARD's layer wavefront (one direction, L >= 2), H100 2026-11-21, float32 inference B = 64 H = 1024 per layer
  // and step: LSTM 35.6 (L=2) / 34.4 (L=4) vs PERSISTENT 41.9; GRU 31.8 / 32.8 vs 37.8. Since the float32 batch chunks
  // of v10 (session 24, H100, L = 2, per layer and step): GRU 29.4-29.6 vs STANDARD 31.7-32.0, so PERSISTENT keeps
  // GRU float32 at H = 1024 B <= 64; LSTM 36.2-36.4 vs 35.9, still STANDARD's.
  // (v10's chunks: one direction; two do not fit next to each other, v4 runs them.)
  const bool v10_chunks = rnn.cfg.data_type == OPENRNN_DATA_FLOAT && rnn.D == 1 && H == 1024 && B <= 64;
  if (rnn.D == 1 && rnn.cfg.num_layers >= 2 && B >= 64 && H >= 1024 &&
      !(v10_chunks && rnn.cfg.cell == OPENRNN_CELL_GRU))
    return false;
  // 16-bit at B >= 16: the tensor-core v7 forward (H100 2026-11-21, T = 100, µs/step, PERSISTENT vs STANDARD):
  // inference B <= 64 at H <= 512 2.5-5.4 vs 5.4-9.5; H = 1024 B = 16 5.6-6.0 vs 9.9-11.4, B = 64 11.3-11.9 vs
  // 11.8-13.0; B = 256 H = 256 5.4-5.5 vs 8.9-9.1; training B <= 64 H <= 512 5.9-17.2 vs 14.4-23.7. STANDARD keeps
  // B = 256 at H = 1024 (v7's blocks do not all fit) and, until session 25 (below), LSTM training B = 256 H = 256
  // (22.0 vs 20.8 float16).
  // Training at B = 64 H = 1024 is a tie for LSTM (28.7-28.8 vs 28.5-28.8) and PERSISTENT's for GRU (26.4 vs
  // 27.7-28.7), so the v4-era rule below (STANDARD for training at B >= 64, H >= 1024) does not apply here.
  // With the tensor-core backward (session 18, H100, T = 100, µs/step, PERSISTENT vs STANDARD, training): LSTM
  // H = 256 B = 128 6.80 vs 26.94 (float16), 6.66 vs 25.07 (bfloat16), so PERSISTENT trains LSTM H = 256 up to
  // B = 128; at B = 256 (no tensor-core tile runs it in one wave: the FFMA kernel) 22.0-22.7 vs 26.1-26.2 in that
  // run but 22.0 vs 20.8 in session 6's: STANDARD kept it until the tensor-core tiles ran in several waves.
  const bool lstm = rnn.cfg.cell == OPENRNN_CELL_LSTM;
  if (w16 && persist_v7_mode() != 0 && v7_preferred(B, H)) {
    // H = 256 above B = 256, one direction, one layer (H100, graph, µs/step, STANDARD against PERSISTENT, float16
    // and bfloat16 alike; PERSISTENT's results checked against cuDNN with --strict at every training B below):
    // - training keeps PERSISTENT up to B = 512. Session 51 (runs 10-11): B = 288 LSTM 15.85-15.97 vs 9.42-9.43, GRU
    //   13.86-13.89 vs 8.29-8.30; B = 320 LSTM 16.27-16.34 vs 13.91-13.92, GRU 14.19-14.24 vs 12.86-12.95. Session
    //   52 (run 1): B = 352-480 LSTM 16.70-19.02 vs 14.48-16.09, GRU 14.51-15.75 vs 13.41-14.97; B = 512 LSTM
    //   17.58-17.63 vs 16.54-16.59, GRU 15.80-15.81 vs 15.55-15.61.
    // - inference (session 52, run 1) kept PERSISTENT while v9's tiles of 20 run in one wave (15 clusters: B <= 300):
    //   B = 288 LSTM 7.52-7.60 vs 3.45-3.50, GRU 6.50 vs 2.90-2.91; B = 300 (run 2) LSTM 7.94-8.00 vs 3.50-3.55, GRU
    //   6.58-6.59 vs 2.92-2.94. Past it they ran in two waves: LSTM was still PERSISTENT's up to B = 512 (B = 320-512
    //   7.77-9.07 vs 6.86-8.06), GRU was STANDARD's (B = 320-448 6.62-6.92 vs 7.25-7.85).
    // - Since v9's tiles of 24-32 (session 52, runs 3 and 5), one wave reaches B = 420 (LSTM) / 480 (GRU): GRU
    //   inference at B = 320-480 6.62-7.00 vs 3.28-4.32, so it keeps PERSISTENT up to B = 480 (B = 512, two waves:
    //   7.03-7.05 vs 6.78-6.82, left to STANDARD). LSTM inference at B = 320-420 7.88-9.40 vs 3.78-4.56.
    // Several layers there (STANDARD runs them as a wavefront) and larger B were not timed: STANDARD.
    if (B > 256) {
      if (H != 256 || rnn.cfg.num_layers != 1 || B > 512) return false;
      if (mode != OPENRNN_FWD_TRAINING && B > 480 && !lstm) return false;
    }
    // Both directions need twice the blocks: at 2B*H > 131072 (e.g. B = 256, H = 512) v7's blocks no longer all fit
    // and v4 would run (3x slower); not timed against STANDARD with D = 2, so STANDARD keeps it.
    if (rnn.D == 2 && 2LL * B * H > 131072) return false;
    // Inference at B = 64 H = 1024 (B * H >= 65536): STANDARD's cuBLAS step with 32 MiB of workspace (session 34,
    // run 4, H100, graph, µs/step, STANDARD against PERSISTENT in one process beside cuDNN): float16 LSTM 9.10 vs 9.73,
    // GRU 8.91 vs 9.06, bfloat16 GRU 8.88 vs 9.04; bfloat16 LSTM stays PERSISTENT's (10.28 vs 9.75), and so does
    // training (within 1%, but bfloat16 LSTM 24.93 vs 24.47).
    // Above B = 32 at H = 1024, v10's 16-bit groups run as two launches and PERSISTENT's step doubles (session 47,
    // run 4, H100, graph, best of two processes, µs/step, STANDARD vs PERSISTENT, inference): B = 32 still
    // PERSISTENT's (7.38-8.74 vs 4.58-4.95), B = 48 STANDARD's (LSTM float16 8.45 vs 9.37, bfloat16 9.17 vs 9.41; GRU
    // 8.26-8.32 vs 8.76-8.77). Training stays PERSISTENT's (within 1-3% either way at B = 48-64).
    // Session 55: LSTM's and GRU's tiles of 32 run B = 33-64 in one launch of two groups (persistent_kernels_v10.cuh),
    // so inference keeps PERSISTENT up to B = 64 (LSTM: session 55, run 3, H100; GRU: session 56, run 2, H200; graph,
    // µs/step, PERSISTENT vs STANDARD: docs/performance.md, "v10's tile of 32 sequences for 16-bit LSTM at H = 1024
    // (session 55)" and, in session 56's section, "Change 2: GRU inference keeps PERSISTENT on the tile of 32").
    // Session 57 (run 6, H200, float16, graph, µs/step, STANDARD vs PERSISTENT): with the product of LSTM's tile of
    // 32 on wgmma, both directions too: B = 33 13.97 vs 10.90, B = 64 16.17 vs 13.58 (B = 96: 19.05 vs 20.68, out of
    // the tile's reach). GRU's two directions were not timed. Only where the wgmma tile can run (compute capability
    // 9.0, as choose() requires): the mma.sync tile of 32 with both directions was never timed against STANDARD.
    const bool wg32 = lstm && v10_wg_on() && prop.major == 9 && prop.minor == 0;
    const bool t32 = H == 1024 && v10_tile32_on() && (rnn.D == 1 || wg32);
    if (H >= 1024 && mode != OPENRNN_FWD_TRAINING && B > 32 && static_cast<long long>(B) * H < 65536 && !t32)
      return false;
    if (H >= 1024 && mode != OPENRNN_FWD_TRAINING && static_cast<long long>(B) * H >= 65536 && !t32 &&
        (!lstm || rnn.cfg.data_type == OPENRNN_DATA_HALF))
      return false;
    if (H >= 1024) return B <= 64;
    // H = 512 above B = 128: STANDARD, both cells and modes. Session 27 gave it GRU inference (H100, float16, µs/step,
    // B = 256: STANDARD 8.75 against PERSISTENT 9.44); since STANDARD's 16-bit steps and weight gradients got faster
    // (sessions 27-35) it wins the rest too (session 36, run 2, H100, float16, STANDARD against PERSISTENT): B = 128
    // still PERSISTENT's (LSTM inference 7.93 vs 7.16, training 18.46 vs 15.12; GRU 8.23 vs 7.12, 16.77 vs 14.30);
    // B = 160-256 STANDARD's (LSTM inference 8.67-9.24 vs 9.82-11.87, training 19.91-21.26 vs 20.26-23.37; GRU
    // 7.88-8.24 vs 9.39-11.50, training 16.89-18.68 vs 18.34-21.49); bfloat16 alike.
    // Session 47 moved the bound from B = 128 to 140: v9's tiles of 20 sequences run B <= 140 in one wave of the
    // H100's 7 clusters of 16 (tiles of 16 stopped at B = 112, and PERSISTENT's step doubled there: GRU inference
    // B = 120 / 128 6.65-6.84 µs/step against STANDARD's 6.54-6.64, run 1). Run 6 (H100, graph, µs/step, PERSISTENT
    // vs STANDARD, both cells and 16-bit types): B = 128-140 inference 4.36-5.43 vs 6.65-8.52, training 11.3-13.5 vs
    // 15.9-19.3; AUTO within 1.2% of the faster at B = 112-140.
    if (H == 512 && B > 140) return false;
    // LSTM training at H = 256 B = 256: STANDARD until session 25; with the reduce-scatter backward in two waves
    // (H100, float16, µs/step) PERSISTENT 12.3-13.0 against STANDARD's 20.3-23.4 (GRU 11.4-12.0 against 19.2-21.5).
    return true;
  }
  // Training at B >= 64, H >= 1024: STANDARD. (Session 24 gave float32 H = 1024 B = 64 to PERSISTENT for its chunked
  // v10 forward, LSTM 121.8-121.9 vs 124.8-125.2 µs/step; since STANDARD's cuBLAS handles got 32 MiB of workspace there,
  // session 33, H100, run 6: LSTM 104.4 vs 91.6, GRU 87.0 vs 77.5.)
  if (mode == OPENRNN_FWD_TRAINING && B >= 64 && H >= 1024) return false;
  // v4 run: 16-bit LSTM H=256 B=256 lost to cuDNN STANDARD (bf16 9.76 vs 8.95, f16 9.90 vs 8.86 µs/step). Training
  // with the persistent backward (H200 grid, docs/performance.md): 16-bit GRU H=256 B=256 lost to STANDARD too
  // (bf16 22.2 vs 19.6, f16 22.0 vs 18.7 µs/step).
  if (H <= 256)
    return !(w16 && B > 64 && (rnn.cfg.cell == OPENRNN_CELL_LSTM || mode == OPENRNN_FWD_TRAINING));
  // STANDARD's 16-bit tensor-core step (standard_mma.cuh), H100 2026-11-21, LSTM H=512 B=64 µs/step: inference
  // 8.7-8.9 vs PERSISTENT 9.8, training 20.0 vs 21.0-21.3 (GRU there: PERSISTENT still 8-17% faster).
  if (w16 && H == 512 && B > 32 && rnn.cfg.cell == OPENRNN_CELL_LSTM) return false;
  // float32 training at H = 512 above B = 64, with the reduce-scatter backward in several waves (session 25, H100,
  // µs/step, PERSISTENT against STANDARD): B = 128 LSTM 61.1-62.3 vs 64.3-64.6, GRU 48.7-49.4 vs 58.2-58.5; B = 256
  // LSTM 116.2-117.7 vs 110.5-111.2 (STANDARD's), GRU 90.7-92.4 vs 97.2-97.5. Since STANDARD's cuBLAS handles get
  // 32 MiB from B * H >= 65536 (session 33, run 10): B = 128 LSTM 61.2 vs 54.7 (STANDARD's now), GRU 48.1 vs 48.6;
  // B = 256 GRU 90.8 vs 79.1 (STANDARD's now).
  if (mode == OPENRNN_FWD_TRAINING && !w16 && H == 512 && B > 64) return !lstm && B <= 128;
  if (B > 64) return false;
  return !(w16 && H >= 1024 && B > 16);
}

std::unique_ptr<CudaAlgo> make_persistent_algo() { return std::make_unique<PersistentAlgo>(); }

}  // namespace cuda
}  // namespace openrnn
