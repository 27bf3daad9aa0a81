// STANDARD forward: per layer, per direction (direction 1 on an aux stream), one input GEMM over all steps
// [T*B, I_l] x W_ih^T, then per step the recurrent GEMM [B, Hout] x W_hh^T and one pointwise kernel (GRU reset-before:
// two GEMMs and two kernels; LSTM projection: one more GEMM and a fix-up kernel). Bidirectional stacks join the
// layers before the next layer's input GEMM (a bidirectional layer needs both halves of its input).
//
// Layer wavefront (one direction, L >= 2; StdLayout::wave, rule in standard_algo.cu): groups of up to kStdLanes
// layers run at once, layer g0 + j on lane j, in chunks of `chunk` steps. For chunk [t0, t1) lane j waits for lane
// j - 1's event (layer g0 + j - 1 has written its output rows of these steps), computes the input projection of those
// steps only ([(t1-t0)*B, I_l] x W_ih^T into its chunk buffer), runs the steps, and records its own event. The host
// issues chunk-major (every lane's chunk k before any lane's chunk k + 1), so each wait binds to the record of the
// same chunk: an event re-recorded later does not disturb a wait already issued (CUDA's rule, also under graph
// capture). Groups run one after another.
#include "cuda_ops.h"
#include "philox.h"
#include "standard_impl.h"
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>
#include <algorithm>

#include "standard_fused.cuh"
#include "standard_mma.cuh"
#include "standard_kernels.cuh"
#include "standard_wgmma.cuh"

namespace openrnn {
namespace cuda {

namespace {
constexpr int kBlock = 256;

// float32 recurrent GEMM with its K range split in two (one strided-batched call writing [B, 2, GH], summed by the
// pointwise kernel through gh_lo). At B of 32-128 the product [B, Hout] x [Hout, GH] has too few output tiles to fill
// the GPU's SMs; two K halves double the tiles. OPENRNN_STD_KSPLIT=0/1 (developer switch, read once) overrides the
// rule. Measured rule: docs/performance.md.
int ksplit_override() {
  static const int v = env_switch01("OPENRNN_STD_KSPLIT");
  return v;
}
bool use_ksplit(const StdDims& d, openrnn_data_type dt, bool fused) {
  if (dt != OPENRNN_DATA_FLOAT || fused || d.gru_rb || d.proj || d.Hout % 2 != 0) return false;
  const int o = ksplit_override();
  if (o >= 0) return o == 1;
  // H100, 2026-11-21 (float32 inference, T=100, split vs one GEMM, µs/step): B=64 H=1024 LSTM 37.6 vs 44.6,
  // H=2048 114.5 vs 140.3; B=256 H=1024 102.2 vs 111.0, GRU 85.2 vs 97.7; B=32 H=2048 80.6 vs 99.1; B=256
  // H=2048 GRU 311 vs 306 (the one row it lost, within noise); H=512: B=64 19.7 vs 21.0.
  // Beyond H = 1024 the handles' workspace is 32 MiB (blas_ws_per_handle), and there cuBLAS's own split-K kernels for
  // the one GEMM beat the two halves (session 33 run 4, inference, split vs one GEMM, both with 32 MiB: B = 64 H = 2048
  // LSTM 111.4 vs 106.4, GRU 99.7 vs 86.4; B = 256 H = 2048 GRU 308.6 vs 283.7), but for LSTM at B = 256 (350.5 vs
  // 354.9; training 1034 vs 1040). At H = 1024 the halves still win with 32 MiB (B = 64 LSTM 34.8 vs 36.5; B = 256
  // LSTM 100.9 vs 106.9, GRU 83.2 vs 86.6).
  if (d.Hout > 1024) return d.lstm && d.B >= 256;
  return d.B >= 32 && d.Hout >= 512;
}


// The 16-bit split state's cuBLAS step (m2_: gh [2B, GH] = [hi; lo] W_hh^T, K = Hout) on cuBLASLt with the tile this
// returns (a cublasLtMatmulTile_t; 0 = cuBLAS's default pick). Session 68 (H200, step_chain_probe's plain chain of the
// step GEMM and a pointwise kernel, float16, µs per step, two processes, each of cuBLASLt's first 8 heuristic picks
// against the default): LSTM B = 16 H = 2048 10.41-10.46 -> 9.68-9.81 on the 128 x 16 tile (-6% to -7%; two CTAs per
// 128 rows of W), GRU B = 16 H = 2048 8.90-8.91 -> 8.76-8.77 (the same tile, -1.5%); at B = 16 H = 1024 and
// B = 64 H = 1024 / 2048 the default was fastest or within 1.3% (LSTM B = 64 H = 1024 80 x 64: -0.6% to -1.3%).
// So the rule is that tile at B = 9-16, H = 2048, LSTM and GRU. OPENRNN_STD_STEP_LT_TILE (developer switch, read
// once): -1 never; a tile id: that tile for every such step where cuBLASLt offers it. OPENRNN_STD_TRACE=1: one line
// per distinct choice on stderr.
int std_step_lt_tile(const StdDims& d) {
  static const int forced = env_int("OPENRNN_STD_STEP_LT_TILE");
  if (forced != 0) return forced;
  return d.B > 8 && d.B <= 16 && d.Hout == 2048 && (d.lstm || d.gru_lbr) ? CUBLASLT_MATMUL_TILE_128x16 : 0;
}

void step_lt_trace(const StdDims& d, int tile, bool ok) {
  static const bool on = env_switch01("OPENRNN_STD_TRACE") == 1;
  if (!on) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  char b[160];
  snprintf(b, sizeof b, "openrnn STANDARD step GEMM: B=%d H=%d G=%d on cuBLASLt tile %d: %s", d.B, d.H, d.G, tile,
           ok ? "taken" : "not offered, cuBLAS's default");
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(b).second) std::fprintf(stderr, "%s\n", b);
}

// One call's problem and buffers, and the layer-level pieces (input, output, dropout) that FwdRun uses.
template <typename T>
struct FwdCall {
  using S = typename Arith<T>::type;
  const Context& ctx;
  const openrnn_rnn_desc& rnn;
  const openrnn_seq_desc& x;
  const StdLayout& s;
  const ForwardArgs& a;
  const StdDims& d;
  GemmSpec g;
  void* ws;
  void* rs;
  int32_t* lens;
  RowMap seq_rows, user_rows;

  FwdCall(const Context& c, const openrnn_rnn_desc& r, const openrnn_seq_desc& xs, const StdLayout& sl,
          const ForwardArgs& args)
      : ctx(c), rnn(r), x(xs), s(sl), a(args), d(sl.d), g(gemm_spec(r.cfg.data_type, r.cfg.math_mode)),
        ws(args.workspace), rs(args.reserve), lens(region<int32_t>(args.workspace, sl.f_lens)),
        seq_rows(seq_major_rows(sl.d.B)), user_rows(layout_rows(xs.layout, sl.d.T, sl.d.B)) {}

  const T* wptr(int l, int dir, openrnn_weight_kind k) const {
    const size_t off = rnn.weights.offset(l, dir, k, d.D);
    return off == SIZE_MAX ? nullptr : static_cast<const T*>(a.w) + off;
  }
  // The previous layer's output [T, B, D*Hout] (l >= 1).
  T* prev_y(int l) const {
    return s.training ? region<T>(rs, s.rsv_y[static_cast<size_t>(l - 1)]) : region<T>(ws, s.f_y[(l - 1) % 2]);
  }
  // Layer l's input and its rows: the user's x (l = 0), else the previous layer's output or, training with dropout,
  // the dropped copy kept in the reserve (drop_input writes it).
  const T* layer_x(int l) const {
    if (l == 0) return static_cast<const T*>(a.x);
    return s.dropout ? region<T>(rs, s.rsv_x[static_cast<size_t>(l)]) : prev_y(l);
  }
  RowMap layer_x_rows(int l) const { return l == 0 ? user_rows : seq_rows; }
  // Writes the dropped input of layer l for steps [t0, t1) (sequence-major rows, so one contiguous range).
  void drop_input(int l, int t0, int t1, cudaStream_t st) const {
    if (l == 0 || !s.dropout) return;
    const long long rowW = static_cast<long long>(d.B) * d.D * d.Hout, e0 = t0 * rowW;
    dropout_apply(prev_y(l) + e0, region<T>(rs, s.rsv_x[static_cast<size_t>(l)]) + e0, (t1 - t0) * rowW,
                  rnn.cfg.dropout_seed, rnn.dropout_offset, l, dropout_threshold(rnn.cfg.dropout),
                  1.0 / (1.0 - rnn.cfg.dropout), st, e0);
  }
  bool last(int l) const { return l == d.L - 1; }
  T* layer_y(int l) const {
    if (last(l)) return static_cast<T*>(a.y);
    return s.training ? region<T>(rs, s.rsv_y[static_cast<size_t>(l)]) : region<T>(ws, s.f_y[l % 2]);
  }
};

// One layer and direction, run on lane j with lane j's buffers: begin() (initial state), then for each range of
// steps input() (their input projection) and steps(), then end() (final state).
template <typename T>
class FwdRun {
 public:
  using S = typename Arith<T>::type;

  FwdRun(const FwdCall<T>& c, int l, int dir, int lane)
      : c_(c), d_(c.d), dir_(dir), st_(c.ctx.lane(lane)), bh_(c.ctx.lane_blas(lane)),
        blas_slice_(static_cast<char*>(c.ws) + c.s.blas_ws * static_cast<size_t>(lane)) {
    const StdDims& d = d_;
    const StdLayout& s = c.s;
    const auto& cfg = c.rnn.cfg;
    void* ws = c.ws;
    void* rs = c.rs;
    const int B = d.B, H = d.H, GH = d.GH;
    Wih_ = c.wptr(l, dir, OPENRNN_WEIGHT_IH);
    Whh_ = c.wptr(l, dir, OPENRNN_WEIGHT_HH);
    Whr_ = c.wptr(l, dir, OPENRNN_WEIGHT_HR);
    X_ = c.layer_x(l);
    x_rows_ = c.layer_x_rows(l);
    I_l_ = d.layer_in(l);
    gx_ = region<S>(ws, s.f_gx[lane]);
    gh_ = region<S>(ws, s.f_gh[lane]);
    ghn_ = d.gru_rb ? region<S>(ws, s.f_ghn[lane]) : nullptr;
    if (s.training) {
      const StdReserveDir& q = s.rsv[static_cast<size_t>(l * d.D + dir)];
      hs_ = region<T>(rs, q.hs);
      cs_ = region<S>(rs, q.cs);
      acts_ = region<S>(rs, q.acts);
      htil_ = region<T>(rs, q.htil);
      hn_ = region<S>(rs, q.hn);
      rh_ = region<T>(rs, q.rh);
      acts_t_ = static_cast<long long>(B) * GH;
      hn_t_ = static_cast<long long>(B) * H;
      htil_t_ = rh_t_ = static_cast<long long>(B) * d.us_ld();
    } else {
      hs_ = region<T>(ws, s.f_hs[lane]);
      cs_ = region<S>(ws, s.f_cs[lane]);
      acts_ = region<S>(ws, s.f_acts[lane]);
      htil_ = region<T>(ws, s.f_htil[lane]);
      rh_ = region<T>(ws, s.f_rh[lane]);
    }
    hB_ = static_cast<long long>(B) * d.Hout;
    cB_ = static_cast<long long>(B) * H;
    sidx_ = static_cast<size_t>(l * d.D + dir);

    FwdStep<T, S>& p = p_;
    p.B = B;
    p.H = H;
    p.Hout = d.Hout;
    p.hsp = d.Hout;  // the padded pitch below, where the Hopper step takes it
    p.lens = c.lens;
    p.gx = gx_;
    p.gx_rows = x_rows_;
    p.bih = c.wptr(l, dir, OPENRNN_BIAS_IH);
    p.bhh = c.wptr(l, dir, OPENRNN_BIAS_HH);
    p.y = c.layer_y(l);
    p.y_rows = c.last(l) ? c.user_rows : c.seq_rows;
    p.y_width = d.D * d.Hout;
    p.y_col = dir * d.Hout;
    p.fill = c.last(l) ? static_cast<S>(c.x.fill) : S(0);  // internal layer outputs: 0 at padding (GEMM-safe)
    p.clip = static_cast<S>(cfg.cell_clip);
    p.relu = cfg.cell == OPENRNN_CELL_RNN_RELU;
    p.hp = d.proj ? region<S>(ws, s.f_hp[lane]) : nullptr;

    // Step kernels that replace cuBLAS GEMM + pointwise: for 16-bit types the Hopper one (standard_wgmma.cuh, where
    // its rule takes it and the driver encodes its tensor maps) or the mma.sync one (standard_mma.cuh); both need
    // W_hh and the state slots 16-byte aligned (the caller's weight, workspace and reserve pointers need not be).
    // Else the CUDA-core fused one at small B (standard_fused.cuh).
    const bool fused = use_fused_fwd(d, cfg.data_type);
    const bool aligned = reinterpret_cast<uintptr_t>(Whh_) % 16 == 0 && reinterpret_cast<uintptr_t>(hs_) % 16 == 0;
    reduced_ = d.split == 2 && !d.gru_rb && !d.proj && cfg.math_mode == OPENRNN_MATH_ALLOW_REDUCED_STATE;
    // The reduced state (M = B) has its own measured rule (use_mma_step_reduced): no Hopper step unless forced.
    const bool mma_rule = reduced_ ? use_mma_step_reduced(d, cfg.data_type) : use_mma_step(d, cfg.data_type);
    if constexpr (sizeof(T) == 2) {
      maps_.sms = c.ctx.props.multiProcessorCount;  // before wgmma_prepare, whose shape may depend on it
      // The Hopper step's register cell (wg::RegCell, on its folded tiles) loads and stores unit pairs as vectors: gx,
      // c, the activations and GRU's hn 8-byte aligned, y 4-byte aligned (every step's rows keep their base's
      // alignment: the row strides are even). Elsewhere the step does not fold.
      const auto al = [](const void* q, uintptr_t a) { return reinterpret_cast<uintptr_t>(q) % a == 0; };
      const bool cell_aligned = al(gx_, 8) && al(cs_, 8) && al(acts_, 8) && al(hn_, 8) && al(p.y, 4);
      // With the permuted W box (wg::Maps::perm) it moves each thread's run of units as 16-byte vectors.
      const bool perm_aligned = al(gx_, 16) && al(cs_, 16) && al(acts_, 16) && al(hn_, 16) && al(p.y, 16);
      const bool want = aligned && (!reduced_ || wgmma_override() == 1) &&
                        use_wgmma_step(d, cfg.data_type, c.ctx.props.major, c.ctx.props.minor, mma_rule, s.training);
      // At H % 64 != 0 (StdDims::wpad) the Hopper step reads W_hh from a copy at the padded pitch (begin() makes it)
      // and, in inference, keeps the state slots at it (the reserve of a training call keeps Hout).
      T* wp = want && d.wpad > 0 ? region<T>(ws, s.f_wp[lane]) : nullptr;
      const int hp = wp && !s.training ? d.wpad : d.Hout;
      wgmma_ = want && wgmma_prepare(d, wp ? wp : Whh_, wp ? d.wpad : d.Hout, hs_, hp, c.s.slots, reduced_ ? 1 : 2,
                                     cell_aligned, perm_aligned, s.training, maps_);
      if (wgmma_) {
        wpad_ = wp;
        p.hsp = hp;
      }
    }
    hsB_ = static_cast<long long>(B) * p.hsp * d.split;  // one state slot
    mma_ = !wgmma_ && mma_rule && aligned;
    fused_ = fused && !mma_ && !wgmma_;
    // Recurrent GEMM operands for split states (standard_kernels.cuh): LSTM without projection, GRU
    // linear-before-reset and RNN multiply the [2B, Hout] view of the slot by W_hh (M doubled, gh_lo); GRU
    // reset-before and projection multiply [hi | lo] by [W | W] (K doubled).
    m2_ = d.split == 2 && !d.gru_rb && !d.proj;
    ks_ = use_ksplit(d, cfg.data_type, fused_);
    // OPENRNN_MATH_ALLOW_REDUCED_STATE (16-bit types): the product takes hi = round(h) only, M = B, as cuDNN's
    // does. LSTM and RNN accumulate it into step t's rows of gx in place (beta = 1: no [B, GH] buffer written
    // and read back); GRU keeps W_hn h apart from W_in x (r multiplies it), so it writes gh.
    in_place_ = reduced_ && !d.gru_lbr;  // also needs gx's row stride within int: checked in steps()
    if constexpr (sizeof(T) == 2) {
      const int tile = m2_ && !reduced_ && !mma_ && !wgmma_ && !fused_ ? std_step_lt_tile(d) : 0;
      if (tile > 0) {
        // Every slot's h: hs_ + slot * hsB_ elements; the plan must accept the alignment they all share.
        uint32_t al_h = align_of(hs_);
        while (al_h > 1 && (static_cast<unsigned long long>(hsB_) * sizeof(T)) % al_h != 0) al_h /= 2;
        const LtShape sh{c.g.ab, CudaType<S>::value, false, true, 2 * B, GH, d.Hout, d.Hout, d.Hout, GH,
                         {al_h, align_of(Whh_), align_of(gh_)}};
        step_lt_ws_ = std::min(s.blas_ws, s.blas_step_ws);
        const LtPlan& pl = lt_plan(bh_, c.ctx.device, sh, step_lt_ws_, tile, 0);
        step_lt_ = pl.ok ? &pl : nullptr;
        step_lt_trace(d, tile, pl.ok);
      }
    }
    Wrec_ = Whh_;
    Wproj_ = Whr_;
    if (d.split == 2 && !fused_ && !m2_) {
      w2_ = region<T>(ws, s.f_w2[lane]);
      Wrec_ = w2_;
      if (d.proj) Wproj_ = w2_ + static_cast<size_t>(GH) * 2 * d.Hout;
    }
  }

  // Initial state (hx, cx or zeros) into the entering slot; the K-doubled weights of split states.
  void begin() const {
    const StdDims& d = d_;
    const int first = slot_first(d.T, dir_, c_.s.slots);
    const T* hx = c_.a.hx ? static_cast<const T*>(c_.a.hx) + sidx_ * hB_ : nullptr;
    state_in(hx, hs_ + first * hsB_, d.B, d.Hout, p_.hsp * d.split, st_);
    if (d.lstm) {
      const T* cx = c_.a.cx ? static_cast<const T*>(c_.a.cx) + sidx_ * cB_ : nullptr;
      convert_or_zero(cx, cs_ + first * cB_, cB_, st_);
    }
    if (wpad_)  // W_hh's rows at the padded pitch; the pad columns are never read (the Hopper step's W map is H wide)
      OPENRNN_CUDA_CHECK(cudaMemcpy2DAsync(wpad_, sizeof(T) * d.wpad, Whh_, sizeof(T) * d.Hout, sizeof(T) * d.Hout,
                                           static_cast<size_t>(d.GH), cudaMemcpyDeviceToDevice, st_));
    if (w2_) {
      dup_cols(Whh_, w2_, d.GH, d.Hout, st_);
      if (d.proj) dup_cols(Whr_, w2_ + static_cast<size_t>(d.GH) * 2 * d.Hout, d.Hout, d.H, st_);
    }
  }

  // gx = X W_ih^T for the steps [t0, t1). The whole sequence: one GEMM, rows in X's order. A chunk: only its rows,
  // in a buffer of (t1 - t0) * B rows that the step kernels address through gx_rows' base.
  void input(int t0, int t1) {
    const StdDims& d = d_;
    const int GH = d.GH, B = d.B, n = t1 - t0;
    const cudaDataType_t tS = CudaType<S>::value;
    if (t0 == 0 && t1 == d.T) {
      gemm_rm(bh_, c_.g, false, true, static_cast<int>(d.TB()), GH, I_l_, 1.0, X_, I_l_, Wih_, I_l_, 0.0, gx_, tS,
              GH);
      p_.gx_rows = x_rows_;
    } else if (x_rows_.row_b == 1) {  // sequence-major: the chunk's rows are contiguous
      gemm_rm(bh_, c_.g, false, true, n * B, GH, I_l_, 1.0, X_ + x_rows_.row(t0, 0) * I_l_, I_l_, Wih_, I_l_, 0.0,
              gx_, tS, GH);
      p_.gx_rows = RowMap{B, 1, -static_cast<long long>(t0) * B};
    } else {  // batch-major user x: per sequence b, rows b*T + t0 .. t1-1 (one strided-batched call)
      gemm_rm_batched(bh_, c_.g, false, true, n, GH, I_l_, 1.0, X_ + x_rows_.row(t0, 0) * I_l_, I_l_,
                      x_rows_.row_b * I_l_, Wih_, I_l_, 0, 0.0, gx_, tS, GH, static_cast<long long>(n) * GH, B);
      p_.gx_rows = RowMap{1, n, -static_cast<long long>(t0)};
    }
  }

  // Steps k in [k0, k1) of this direction (t = k forward, T - 1 - k reverse).
  void steps(int k0, int k1) {
    const StdDims& d = d_;
    const int T_ = d.T, B = d.B, H = d.H, Hout = d.Hout, GH = d.GH, hs_ld = d.hs_ld(), us_ld = d.us_ld();
    const cudaDataType_t tS = CudaType<S>::value;
    const int slots = c_.s.slots;
    FwdStep<T, S>& p = p_;
    const unsigned grid_h = grid_for(cB_, kBlock), grid_p = grid_for(hB_, kBlock);
    const long long gx_ldc = p.gx_rows.row_b * GH;
    const bool in_place = in_place_ && gx_ldc <= INT_MAX;
    const BlasWorkspaceLimit step_ws(bh_, blas_slice_, c_.s.blas_ws, c_.s.blas_step_ws);  // the steps' GEMMs
    for (int k = k0; k < k1; ++k) {
      const int t = dir_ == 0 ? k : T_ - 1 - k;
      p.t = t;
      p.t_next = k + 1 < k1 ? (dir_ == 0 ? t + 1 : t - 1) : -1;  // gx holds the steps [k0, k1) only (a chunk)
      p.pf = std_prefetch(d, false);
      p.hin = hs_ + slot_in(t, dir_, slots) * hsB_;
      p.hout = hs_ + slot_out(t, dir_, slots) * hsB_;
      if (d.lstm) {
        p.cin = cs_ + slot_in(t, dir_, slots) * cB_;
        p.cout = cs_ + slot_out(t, dir_, slots) * cB_;
      }
      p.acts = acts_ ? acts_ + t * acts_t_ : nullptr;
      p.hn = hn_ ? hn_ + t * hn_t_ : nullptr;
      p.htil = htil_ ? htil_ + t * htil_t_ : nullptr;
      p.rh = rh_ ? rh_ + t * rh_t_ : nullptr;
      if (d.gru_rb) {
        // [r z] part: gh [B, 2H] = h W_h{r,z}^T; then n part on r*h.
        gemm_rm(bh_, c_.g, false, true, B, 2 * H, hs_ld, 1.0, p.hin, hs_ld, Wrec_, hs_ld, 0.0, gh_, tS, 2 * H);
        p.gh = gh_;
        p.gh_ld = 2 * H;
        gru_rb1_kernel<T, S><<<grid_h, kBlock, 0, st_>>>(p);
        OPENRNN_LAUNCH_CHECK("gru_rb1_kernel");
        gemm_rm(bh_, c_.g, false, true, B, H, us_ld, 1.0, p.rh, us_ld, Wrec_ + static_cast<size_t>(2) * H * us_ld,
                us_ld, 0.0, ghn_, tS, H);
        p.gh = ghn_;
        p.gh_ld = H;
        gru_rb2_kernel<T, S><<<grid_h, kBlock, 0, st_>>>(p);
        OPENRNN_LAUNCH_CHECK("gru_rb2_kernel");
        continue;
      }
      if constexpr (sizeof(T) == 2) {
        // A programmatic dependent launch after this loop's first step: the kernel before it on st_ is then the
        // previous step of this layer and direction (std_step_pdl, standard_plan.h).
        const bool pdl = k > k0 && std_step_pdl();
        if (wgmma_) {
          wgmma_forward_step(d, p, maps_, slot_in(t, dir_, slots), reduced_ ? 1 : 2, pdl, c_.ctx.device, st_);
          continue;
        }
        if (mma_) {
          mma_forward_step(d, p, Whh_, reduced_ ? 1 : 2, pdl, c_.ctx.device, c_.ctx.props.multiProcessorCount,
                           st_);
          continue;
        }
      }
      if constexpr (!std::is_same<T, double>::value) {
        if (fused_) {
          fused_forward_step(d, p, Whh_, c_.ctx.device, c_.ctx.props.multiProcessorCount, st_);
          continue;
        }
      }
      if (in_place) {
        S* gxt = const_cast<S*>(p.gx) + p.gx_rows.row(t, 0) * GH;  // rows b at gxt + b * gx_ldc
        gemm_rm(bh_, c_.g, false, true, B, GH, Hout, 1.0, p.hin, hs_ld, Whh_, Hout, 1.0, gxt, tS, gx_ldc);
        p.gh_ld = 0;
        p.gh_lo = 0;
        p.gh = nullptr;
      } else if (reduced_) {
        gemm_rm(bh_, c_.g, false, true, B, GH, Hout, 1.0, p.hin, hs_ld, Whh_, Hout, 0.0, gh_, tS, GH);
        p.gh_ld = GH;
        p.gh_lo = 0;
      } else if (m2_) {
        // gh [2B, GH]: row 2b = hi_b W_hh^T, row 2b+1 = lo_b W_hh^T.
        if (step_lt_)
          lt_gemm_rm(bh_, *step_lt_, 1.f, p.hin, Whh_, 0.f, gh_, blas_slice_, step_lt_ws_, st_);
        else
          gemm_rm(bh_, c_.g, false, true, 2 * B, GH, Hout, 1.0, p.hin, Hout, Whh_, Hout, 0.0, gh_, tS, GH);
        p.gh_ld = 2 * GH;
        p.gh_lo = GH;
      } else if (ks_) {
        // gh [B, 2, GH]: part k = h[:, k*Hout/2 ..] W_hh[:, k*Hout/2 ..]^T over Hout/2 columns.
        const int K2 = Hout / 2;
        gemm_rm_batched(bh_, c_.g, false, true, B, GH, K2, 1.0, p.hin, hs_ld, K2, Whh_, Hout, K2, 0.0, gh_, tS,
                        2 * GH, GH, 2);
        p.gh_ld = 2 * GH;
        p.gh_lo = GH;
      } else {
        gemm_rm(bh_, c_.g, false, true, B, GH, hs_ld, 1.0, p.hin, hs_ld, Wrec_, hs_ld, 0.0, gh_, tS, GH);
        p.gh_ld = GH;
      }
      if (!in_place) p.gh = gh_;
      // A programmatic dependent of the GEMM just above (pw_enter, standard_kernels.cuh).
      const StepLaunch pw{k > k0 && (std_pw_pdl(d, c_.s.training) & 1)};
      if (d.lstm) {
        launch_step_ex(lstm_fwd_kernel<T, S>, grid_h, kBlock, 0, st_, pw, p);
        OPENRNN_LAUNCH_CHECK("lstm_fwd_kernel");
        if (d.proj) {
          // hp [B, P] = htil [B, H] W_hr^T for every row; proj_post makes it the state of active rows and y.
          gemm_rm(bh_, c_.g, false, true, B, Hout, us_ld, 1.0, p.htil, us_ld, Wproj_, us_ld, 0.0,
                  const_cast<S*>(p.hp), tS, Hout);
          proj_post_kernel<T, S><<<grid_p, kBlock, 0, st_>>>(p);
          OPENRNN_LAUNCH_CHECK("proj_post_kernel");
        }
      } else if (d.gru_lbr) {
        launch_step_ex(gru_fwd_kernel<T, S>, grid_h, kBlock, 0, st_, pw, p);
        OPENRNN_LAUNCH_CHECK("gru_fwd_kernel");
      } else {
        launch_step_ex(rnn_fwd_kernel<T, S>, grid_h, kBlock, 0, st_, pw, p);
        OPENRNN_LAUNCH_CHECK("rnn_fwd_kernel");
      }
    }
  }

  // Final state into hy / cy.
  void end() const {
    const StdDims& d = d_;
    const int lastslot = slot_last(d.T, dir_, c_.s.slots);
    if (c_.a.hy)
      state_out(hs_ + lastslot * hsB_, static_cast<T*>(c_.a.hy) + sidx_ * hB_, d.B, d.Hout, p_.hsp * d.split, st_);
    if (c_.a.cy && d.lstm) convert_or_zero(cs_ + lastslot * cB_, static_cast<T*>(c_.a.cy) + sidx_ * cB_, cB_, st_);
  }

 private:
  const FwdCall<T>& c_;
  const StdDims& d_;
  int dir_;
  cudaStream_t st_;
  cublasHandle_t bh_;
  void* blas_slice_;  // bh_'s slice of the workspace (Context::bind_blas_workspace)
  const T *Wih_ = nullptr, *Whh_ = nullptr, *Whr_ = nullptr, *Wrec_ = nullptr, *Wproj_ = nullptr;
  T* w2_ = nullptr;
  const T* X_ = nullptr;
  RowMap x_rows_;
  int I_l_ = 0;
  S *gx_ = nullptr, *gh_ = nullptr, *ghn_ = nullptr;
  T* hs_ = nullptr;
  T* wpad_ = nullptr;  // the Hopper step's copy of W_hh at StdDims::wpad (null: it reads W_hh)
  S *cs_ = nullptr, *acts_ = nullptr, *hn_ = nullptr;
  T *htil_ = nullptr, *rh_ = nullptr;
  long long acts_t_ = 0, htil_t_ = 0, hn_t_ = 0, rh_t_ = 0;  // per-step strides (0: one reused slot)
  long long hB_ = 0, cB_ = 0, hsB_ = 0;  // one user state [B, Hout], one cell state [B, H], one state slot
  size_t sidx_ = 0;                      // this layer and direction's index in hx / cx / hy / cy
  bool mma_ = false, wgmma_ = false, fused_ = false, m2_ = false, ks_ = false, reduced_ = false, in_place_ = false;
  wg::Maps maps_{};  // the Hopper step kernel's tensor maps and block shape (wgmma_)
  const LtPlan* step_lt_ = nullptr;  // m2_'s step GEMM on cuBLASLt (std_step_lt_tile); null: gemm_rm
  size_t step_lt_ws_ = 0;            // its workspace: the first bytes of blas_slice_
  FwdStep<T, S> p_{};
};

}  // namespace

template <typename T>
void std_forward(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const StdLayout& s,
                 const ForwardArgs& a) {
  const StdDims& d = s.d;
  ctx.bind_blas_workspace(a.workspace, s.blas_ws);
  const FwdCall<T> c(ctx, rnn, x, s, a);
  if (c.lens) upload_lengths(x, c.lens, ctx.stream);

  if (s.wave == 0) {
    for (int l = 0; l < d.L; ++l) {
      c.drop_input(l, 0, d.T, ctx.stream);
      ctx.fork(d.D);
      for (int dir = 0; dir < d.D; ++dir) {
        FwdRun<T> r(c, l, dir, dir);
        r.begin();
        r.input(0, d.T);
        r.steps(0, d.T);
        r.end();
      }
      ctx.join(d.D);
    }
    return;
  }

  // Layer wavefront (see the top of this file).
  for (int g0 = 0; g0 < d.L; g0 += s.wave) {
    const int n = std::min(s.wave, d.L - g0);
    ctx.fork(n);
    std::vector<FwdRun<T>> runs;
    runs.reserve(static_cast<size_t>(n));
    for (int j = 0; j < n; ++j) {
      runs.emplace_back(c, g0 + j, 0, j);
      runs.back().begin();
    }
    for (int t0 = 0; t0 < d.T; t0 += s.chunk) {
      const int t1 = std::min(d.T, t0 + s.chunk);
      for (int j = 0; j < n; ++j) {
        const cudaStream_t st = ctx.lane(j);
        if (j > 0) OPENRNN_CUDA_CHECK(cudaStreamWaitEvent(st, ctx.events[kFreeEvent0 + j - 1], 0));
        c.drop_input(g0 + j, t0, t1, st);
        runs[static_cast<size_t>(j)].input(t0, t1);
        runs[static_cast<size_t>(j)].steps(t0, t1);
        if (j < n - 1) OPENRNN_CUDA_CHECK(cudaEventRecord(ctx.events[kFreeEvent0 + j], st));
      }
    }
    for (int j = 0; j < n; ++j) runs[static_cast<size_t>(j)].end();
    ctx.join(n);
  }
}

template void std_forward<float>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&, const StdLayout&,
                                 const ForwardArgs&);
template void std_forward<double>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&, const StdLayout&,
                                  const ForwardArgs&);
template void std_forward<__half>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&, const StdLayout&,
                                  const ForwardArgs&);
template void std_forward<__nv_bfloat16>(const Context&, const openrnn_rnn_desc&, const openrnn_seq_desc&,
                                         const StdLayout&, const ForwardArgs&);

}  // namespace cuda
}  // namespace openrnn
