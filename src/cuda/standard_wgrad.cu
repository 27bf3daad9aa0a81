// STANDARD backward_weights: every weight gradient is one GEMM over all T*B rows (padding rows hold 0 gradients and
// finite saved values, so they add exactly 0): dW_ih = dG^T X_l, dW_hh = dGh^T H_in, dW_hr = dhtot^T htil, biases
// dG^T 1 (a column-sum kernel up to kBiasRowsMax rows). SET writes with beta = 0, ADD accumulates with beta = 1.
// Directions run on separate lanes (disjoint dw); one direction spreads its parts over three lanes (below).
#include <cstdint>

#include "cuda_ops.h"
#include "standard_impl.h"

namespace openrnn {
namespace cuda {

namespace {

// Bias gradient for small T*B: db[j] = sum over the rows r < rows of dG[r][j] (row stride ld) (+ db[j] when
// accumulate). cuBLAS runs dG^T 1 as a gemv that took ~15 us at rows = 100, cols = 4096 on an H100 (ncu, session 9:
// 0.3 us of every training step at B = 1, H = 1024). Block = 32 x 32 threads over 128 columns: lane tx owns the
// columns tx + 32 i (i < 4: coalesced loads, 4 in flight), row slice ty walks rows ty, ty + 32, ...; then thread
// (tx, i) adds the 32 slices of column tx + 32 i in order. Fixed summation order: bitwise reproducible. Accumulates
// in float (double for float64), as the GEMM's compute type.
constexpr int kBiasRowsMax = 512;  // above: cuBLAS (at 1600 rows and 768 columns this kernel lost: 6 blocks)
// grid.y = 2: both biases of a layer and direction in one launch (b_ih from dG, b_hh from dGh; an absent one: null
// db, its blocks return).
template <typename T>
struct BiasGradPair {
  const T* dG[2] = {nullptr, nullptr};
  T* db[2] = {nullptr, nullptr};
};
template <typename T>
__global__ void bias_grad_kernel(BiasGradPair<T> pr, int ld, int rows, int cols, bool accumulate) {
  using A = decltype(to_f(T()));
  const T* dG = pr.dG[blockIdx.y];
  T* db = pr.db[blockIdx.y];
  if (!db) return;  // uniform over the block
  __shared__ A part[32][4][32];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int j0 = blockIdx.x * 128 + tx;
  A acc[4] = {0, 0, 0, 0};
  for (int r = ty; r < rows; r += 32) {
    const T* row = dG + static_cast<size_t>(r) * ld;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (j0 + 32 * i < cols) acc[i] += to_f(row[j0 + 32 * i]);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) part[ty][i][tx] = acc[i];
  __syncthreads();
  if (ty < 4) {
    const int j = j0 + 32 * ty;
    if (j < cols) {
      A sum = 0;
      for (int k = 0; k < 32; ++k) sum += part[k][ty][tx];
      if (accumulate) sum += to_f(db[j]);
      st(db + j, sum);
    }
  }
}

// ---- 16 bits, long K, few output tiles: cuBLASLt's 128 x 64 tile with K split (session 53) ----------------------
// At T*B = 6400 rows (B = 64) and outputs of at most 512 x 512 (H = 256), cuBLAS's default runs dW = dG^T X on a
// handful of tiles and leaves most SMs idle: GRU H = 256 11.5 µs, LSTM 16.3 µs per GEMM (H100, session 53 run 2,
// dev/lab/wgrad_lt.cu, ten back to back in a graph). cuBLASLt's 128 x 64 tile with K split 4 (M*N <= 196608) or 3
// (<= 262144), partials reduced in float32 through the workspace (a fixed order: deterministic), took 9.2 / 10.7 µs.
// At K <= 1600, or with larger outputs, no split configuration was the fastest, so the rule is K in [4096, 8192] and
// M*N <= 262144, 16-bit operands; elsewhere, or if cuBLASLt offers no such algorithm, gemm_rm (cuBLAS's default).
int wg_lt_split(int M, int N, int K, size_t es) {
  const long long mn = static_cast<long long>(M) * N;
  if (es != 2 || K < 4096 || K > 8192 || mn > 262144) return 0;
  return mn <= 196608 ? 4 : 3;
}

// OPENRNN_STD_WGRAD_SPLITK=0 (developer switch, read once): the weight gradients stay on cuBLAS's default everywhere.
bool wg_lt_on() {
  static const bool on = env_switch01("OPENRNN_STD_WGRAD_SPLITK") != 0;
  return on;
}

// OPENRNN_STD_WGRAD_LO=1 (developer switch, read once): the weight gradients of split states add dG^T lo.
bool wgrad_lo() {
  static const bool on = env_switch01("OPENRNN_STD_WGRAD_LO") == 1;
  return on;
}

template <typename T>
void wgrad(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const StdLayout& s,
           const BackwardWeightsArgs& a) {
  const StdDims& d = s.d;
  const GemmSpec g = gemm_spec(rnn.cfg.data_type, rnn.cfg.math_mode);
  const cudaDataType_t tT = CudaType<T>::value;
  void* ws = a.workspace;
  const void* rs = a.reserve;
  ctx.bind_blas_workspace(ws, s.blas_ws);

  const int B = d.B, H = d.H, Hout = d.Hout, GH = d.GH, P = d.P;
  const int TB = static_cast<int>(d.TB());
  int32_t* lens = region<int32_t>(ws, s.w_lens);
  if (lens) upload_lengths(x, lens, ctx.stream);
  T* ones = region<T>(ws, s.w_ones);
  if (TB > kBiasRowsMax) fill_value(ones, TB, 1.0, ctx.stream);  // the bias GEMMs' operand (below: column-sum kernel)
  // Layer 0's input as a sequence-major matrix with zeros at padding (x at padding may hold anything, even NaN).
  const T* X0 = static_cast<const T*>(a.x);
  if (s.w_x != kAbsent) {
    T* xs = region<T>(ws, s.w_x);
    copy_rows(X0, layout_rows(x.layout, d.T, B), xs, seq_major_rows(B), d.T, B, d.I, lens, 0.0, ctx.stream);
    X0 = xs;
  }
  const double beta = a.mode == OPENRNN_WGRAD_ADD ? 1.0 : 0.0;
  T* dw = static_cast<T*>(a.dw);
  auto dwp = [&](int l, int dir, openrnn_weight_kind k) -> T* {
    const size_t off = rnn.weights.offset(l, dir, k, d.D);
    return off == SIZE_MAX ? nullptr : dw + off;
  };

  // Lanes. Two directions: one lane each (disjoint dw). One direction: its three independent parts on three lanes,
  // part 0 dW_ih, part 1 dW_hh, part 2 the biases and dW_hr, which at small T*B are a few µs each. Measured (H100,
  // session 21): 16-bit training calls a few µs shorter; float32's cuBLAS GEMMs fill the GPU one by one and did not
  // overlap (no change). Only under graph capture (Context::overlap_lanes, session 69): eagerly, every part runs on
  // the main stream in the same order with the same kernels (the handles' workspace slices are equal, so cuBLAS picks
  // the same ones). Each output is written by one lane in a fixed order: bitwise reproducible, eager or captured.
  const bool overlap = ctx.overlap_lanes();
  const int nlanes = !overlap ? 1 : d.D == 2 ? 2 : 1 + kAuxStreams;
  auto lane_of = [&](int dir, int part) { return !overlap ? 0 : d.D == 2 ? dir : part; };
  ctx.fork(nlanes);
  for (int l = 0; l < d.L; ++l) {
    const int I_l = d.layer_in(l);
    const T* X = l == 0 ? X0
                        : region<T>(rs, s.dropout ? s.rsv_x[static_cast<size_t>(l)] : s.rsv_y[static_cast<size_t>(l - 1)]);
    for (int dir = 0; dir < d.D; ++dir) {
      const StdReserveDir& q = s.rsv[static_cast<size_t>(l * d.D + dir)];
      const T* dGx = region<T>(rs, q.dG);
      const T* dGh = d.gru_lbr ? region<T>(rs, q.dGh) : dGx;
      // States entering steps 0..T-1: slots 0..T-1 (forward) or 1..T (reverse), see standard_plan.h.
      // Split states (float16/bfloat16, h = hi + lo): the gradient takes hi only, h rounded to the storage type like
      // dG itself (docs/numerics.md). The lo term was a second GEMM as large as the first, added into the 16-bit
      // output with beta = 1 (so rounded twice), and bought little: emulated (dev/lab/wgrad_lo_emulation.py), the
      // error against the float64 product is 0.93x hi-only's (float16 3.11e-4 vs 3.36e-4, bfloat16 2.55e-3 vs
      // 2.74e-3), both within 1.7x that of rounding the exact product once. It cost the whole GEMM again
      // (docs/performance.md, session 35). OPENRNN_STD_WGRAD_LO=1 (developer switch) restores it.
      const int hs_ld = d.hs_ld(), us_ld = d.us_ld();
      const T* Hin = region<T>(rs, q.hs) + (dir == 0 ? 0 : static_cast<size_t>(B) * hs_ld);
      // dW = A^T Bm over all T*B rows on lane `lane` (its cuBLAS handle and workspace slice): cuBLASLt's split K
      // where wg_lt_split takes the shape, cuBLAS's default otherwise.
      auto wgemm = [&](int lane, int M, int N, const T* A, int lda, const T* Bm, int ldb, double b, T* C, int ldc) {
        const int split = wg_lt_on() ? wg_lt_split(M, N, TB, sizeof(T)) : 0;
        if (split > 0) {
          const LtShape sh{tT, tT, true, false, M, N, TB, lda, ldb, ldc, {align_of(A), align_of(Bm), align_of(C)}};
          const LtPlan& pl =
              lt_plan(ctx.lane_blas(lane), ctx.device, sh, s.blas_ws, CUBLASLT_MATMUL_TILE_128x64, split);
          if (pl.ok) {
            char* lane_ws = static_cast<char*>(ws) + s.blas_ws * static_cast<size_t>(lane);  // the lane's slice
            lt_gemm_rm(ctx.lane_blas(lane), pl, 1.f, A, Bm, static_cast<float>(b), C, lane_ws, s.blas_ws,
                       ctx.lane(lane));
            return;
          }
        }
        gemm_rm(ctx.lane_blas(lane), g, true, false, M, N, TB, 1.0, A, lda, Bm, ldb, b, C, tT, ldc);
      };
      auto gemm_split = [&](int lane, int M, int N, const T* A, int lda, const T* Bm, int ldb, int width, T* C,
                            int ldc) {
        wgemm(lane, M, N, A, lda, Bm, ldb, beta, C, ldc);
        if (d.split == 2 && wgrad_lo()) wgemm(lane, M, N, A, lda, Bm + width, ldb, 1.0, C, ldc);
      };

      wgemm(lane_of(dir, 0), GH, I_l, dGx, GH, X, I_l, beta, dwp(l, dir, OPENRNN_WEIGHT_IH), I_l);
      const int ln1 = lane_of(dir, 1);
      T* dWhh = dwp(l, dir, OPENRNN_WEIGHT_HH);
      if (d.gru_rb) {
        gemm_split(ln1, 2 * H, H, dGx, GH, Hin, hs_ld, H, dWhh, H);
        gemm_split(ln1, H, H, dGx + 2 * H, GH, region<T>(rs, q.rh), us_ld, H, dWhh + static_cast<size_t>(2) * H * H,
                   H);
      } else {
        gemm_split(ln1, GH, Hout, dGh, GH, Hin, hs_ld, Hout, dWhh, Hout);
      }
      const cublasHandle_t bh2 = ctx.lane_blas(lane_of(dir, 2));
      BiasGradPair<T> bias;
      bias.dG[0] = dGx;
      bias.db[0] = dwp(l, dir, OPENRNN_BIAS_IH);
      bias.dG[1] = dGh;
      bias.db[1] = dwp(l, dir, OPENRNN_BIAS_HH);
      if (TB <= kBiasRowsMax) {
        if (bias.db[0] || bias.db[1]) {
          bias_grad_kernel<T><<<dim3((GH + 127) / 128, 2), dim3(32, 32), 0, ctx.lane(lane_of(dir, 2))>>>(
              bias, GH, TB, GH, beta != 0.0);
          OPENRNN_CUDA_CHECK(cudaGetLastError());
        }
      } else {
        // b_ih and b_hh get the same gradient where dGh is dGx (all but GRU linear-before-reset): in SET mode the
        // second is a copy of the first (one dG^T 1 less; session 53, docs/performance.md). GRU linear-before-reset:
        // dGh's r and z columns [0, 2H) are dG's bit for bit (every backward kernel stores the same rounded value
        // twice), only the n columns differ (r * dxn), so in SET mode b_hh takes b_ih's r and z parts and sums only
        // its n part: H of the 3H columns read again (session 54). For 16-bit types only: float32 GRU at B = 256,
        // H = 1024 measured 0.7-0.8% slower with it in two runs (cause not found; docs/performance.md, session 54).
        static const bool copy_on = env_switch01("OPENRNN_STD_BIAS_COPY") != 0;  // developer switch: 0 sums twice
        const bool share = copy_on && beta == 0.0 && bias.db[0] && bias.db[1];
        const bool same = share && dGh == dGx;
        const bool gru_rz = share && d.gru_lbr && sizeof(T) == 2;
        const cudaStream_t st2 = ctx.lane(lane_of(dir, 2));
        for (int k = 0; k < 2; ++k) {
          if (!bias.db[k]) continue;
          if (k == 1 && same) {  // a kernel: a memcpy node measured slower (session 53, run 5)
            convert_or_zero<T, T>(bias.db[0], bias.db[1], GH, st2);
          } else if (k == 1 && gru_rz) {
            convert_or_zero<T, T>(bias.db[0], bias.db[1], 2 * H, st2);
            gemm_rm(bh2, g, true, false, H, 1, TB, 1.0, dGh + 2 * H, GH, ones, 1, 0.0, bias.db[1] + 2 * H, tT, 1);
          } else {
            gemm_rm(bh2, g, true, false, GH, 1, TB, 1.0, bias.dG[k], GH, ones, 1, beta, bias.db[k], tT, 1);
          }
        }
      }
      if (d.proj)
        gemm_split(lane_of(dir, 2), P, H, region<T>(rs, q.dhtot), P, region<T>(rs, q.htil), us_ld, H,
                   dwp(l, dir, OPENRNN_WEIGHT_HR), H);
    }
  }
  ctx.join(nlanes);
}

}  // namespace

void run_wgrad(const Context& ctx, const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, const StdLayout& s,
               const BackwardWeightsArgs& a) {
  switch (rnn.cfg.data_type) {
    case OPENRNN_DATA_FLOAT: return wgrad<float>(ctx, rnn, x, s, a);
    case OPENRNN_DATA_DOUBLE: return wgrad<double>(ctx, rnn, x, s, a);
    case OPENRNN_DATA_HALF: return wgrad<__half>(ctx, rnn, x, s, a);
    case OPENRNN_DATA_BFLOAT16: return wgrad<__nv_bfloat16>(ctx, rnn, x, s, a);
  }
}

}  // namespace cuda
}  // namespace openrnn
