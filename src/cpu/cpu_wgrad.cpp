// backward_weights of the CPU backend: every weight gradient is a product over all T*B rows at once (BLAS), from the
// pre-activation gradients backward_data left in the reserve:
//   dW_ih [G*H, I_l] = dG^T [G*H, T*B] x X_l [T*B, I_l]        X_l: x, or the layer below's output (after dropout)
//   dW_hh [G*H, Hout] = dGrec^T x H_prev                          H_prev of step t: Y of the previous processed step,
//                                                                 H0 at the first; two GEMMs (the shifted rows and
//                                                                 the boundary step)
//   dW_hr [P, H] = dh_proj^T x h~
//   db = column sums of dG (GRU-LBR: b_hn's from d(hn)).
// GRU linear-before-reset: dGrec is d(xr), d(xz) for the r, z rows and d(hn) for the n rows. GRU reset-before: the n
// rows multiply r * h_prev (the reserve's RH) instead of h_prev.
// Padding steps contribute nothing: their gradient rows are zero and their inputs finite (x is copied with zeros
// there when it has padding).
#include <algorithm>
#include <cstring>

#include "cpu_gemm.h"
#include "cpu_internal.h"

namespace openrnn {
namespace cpu {

namespace {

// dst[c] (+)= sum over rows of A[r * lda + c], c < cols; threads split the columns.
template <typename S>
void column_sums(const S* A, size_t lda, size_t rows, int cols, S* dst, bool add, int nt) {
#pragma omp parallel num_threads(threads_for(rows * cols, nt))
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const int c0 = static_cast<int>(static_cast<long long>(cols) * tid / nth);
    const int c1 = static_cast<int>(static_cast<long long>(cols) * (tid + 1) / nth);
    if (!add)
      for (int c = c0; c < c1; ++c) dst[c] = S(0);
    for (size_t r = 0; r < rows; ++r) {
      const S* a = A + r * lda;
      for (int c = c0; c < c1; ++c) dst[c] += a[c];
    }
  }
}

// dst [rows, Hout] (+)= A^T [rows, T*B] x H_prev [T*B, Hout] where H_prev of step t is Y (row stride W) of the
// previous step in processing order, or H0 (row stride Hout) at the first step.
template <typename S>
void grad_hh_group(const Dims& d, int dir, const S* A, int lda, int rows, const S* Ydir, const S* H0ld, S* dst,
                   S beta, int nt) {
  const int T = d.T, B = d.B, Hout = d.Hout, W = d.W;
  const int tfirst = dir == 0 ? 0 : T - 1;
  par_gemm<S>(nt, true, false, rows, Hout, B, S(1), A + static_cast<size_t>(tfirst) * B * lda, lda, H0ld, Hout,
              beta, dst, Hout);
  if (T > 1) {
    // Forward: rows of steps 1..T-1 against Y of steps 0..T-2; reverse: steps 0..T-2 against Y of 1..T-1.
    const S* Arows = A + (dir == 0 ? static_cast<size_t>(B) * lda : 0);
    const S* Hrows = Ydir + (dir == 0 ? 0 : static_cast<size_t>(B) * W);
    par_gemm<S>(nt, true, false, rows, Hout, (T - 1) * B, S(1), Arows, lda, Hrows, W, S(1), dst, Hout);
  }
}

}  // namespace

template <typename S>
void backward_weights_pass(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& xs, const BackwardWeightsArgs& a,
                           int nt) {
  const Dims d = make_dims(rnn, xs);
  nt = call_threads(d, nt);
  const WgWs Wg = wgrad_ws(d);
  char* ws = align64(a.workspace);
  const void* rs = a.reserve;
  const ResHeader rh = reserve_header(d);
  const int TB = static_cast<int>(d.TB());
  const int H = d.H, GH = d.GH, Hout = d.Hout, P = d.P;

  const S* X = static_cast<const S*>(a.x);
  if (Wg.X0 != kNone) {
    S* X0 = at<S>(ws, Wg.X0);
    gather_seq<S>(d, xs, a.x, d.I, X0, nt);
    X = X0;
  }

  // Target: the caller's dweights in place (native type; ADD = GEMM beta 1), or a float32 gradient that is then
  // combined with the caller's float16/bfloat16 dweights element by element.
  const bool direct = native<S>(d.dt);
  S* dw = direct ? static_cast<S*>(a.dw) : at<S>(ws, Wg.Gw);
  const bool add = direct && a.mode == OPENRNN_WGRAD_ADD;
  const S beta = add ? S(1) : S(0);
  const S* H0 = at<S>(rs, rh.H0);

  for (int l = 0; l < d.L; ++l) {
    const ResLayer RL = reserve_layer(d, l);
    const S* Xin = X;
    if (l > 0) {
      const ResLayer below = reserve_layer(d, l - 1);
      Xin = RL.Xd != kNone ? at<S>(rs, RL.Xd) : at<S>(rs, below.Y);
    }
    const int Il = d.in_size(l);
    const S* Y = at<S>(rs, RL.Y);
    for (int dir = 0; dir < d.D; ++dir) {
      const ResDir& r = RL.dir[dir];
      const S* G = at<S>(rs, r.G);
      auto dst = [&](openrnn_weight_kind k) -> S* {
        const size_t off = rnn.weights.offset(l, dir, k, d.D);
        return off == SIZE_MAX ? nullptr : dw + off;
      };
      S* dih = dst(OPENRNN_WEIGHT_IH);
      S* dhh = dst(OPENRNN_WEIGHT_HH);
      S* dbih = dst(OPENRNN_BIAS_IH);
      S* dbhh = dst(OPENRNN_BIAS_HH);
      S* dhr = dst(OPENRNN_WEIGHT_HR);

      par_gemm<S>(nt, true, false, GH, Il, TB, S(1), G, GH, Xin, Il, beta, dih, Il);

      const S* Ydir = Y + static_cast<size_t>(dir) * Hout;
      const S* H0ld = H0 + static_cast<size_t>(l * d.D + dir) * d.B * Hout;
      if (d.gru_lbr) {
        const S* DHN = at<S>(rs, r.HN);
        grad_hh_group<S>(d, dir, G, GH, 2 * H, Ydir, H0ld, dhh, beta, nt);
        grad_hh_group<S>(d, dir, DHN, H, H, Ydir, H0ld, dhh + static_cast<size_t>(2) * H * Hout, beta, nt);
      } else if (d.gru_rb) {
        const S* RH = at<S>(rs, r.RH);
        grad_hh_group<S>(d, dir, G, GH, 2 * H, Ydir, H0ld, dhh, beta, nt);
        par_gemm<S>(nt, true, false, H, H, TB, S(1), G + 2 * H, GH, RH, H, beta,
                    dhh + static_cast<size_t>(2) * H * H, H);
      } else {
        grad_hh_group<S>(d, dir, G, GH, GH, Ydir, H0ld, dhh, beta, nt);
      }

      if (dbih) column_sums<S>(G, GH, d.TB(), GH, dbih, add, nt);
      if (dbhh) {
        if (d.gru_lbr) {
          column_sums<S>(G, GH, d.TB(), 2 * H, dbhh, add, nt);
          column_sums<S>(at<S>(rs, r.HN), H, d.TB(), H, dbhh + 2 * H, add, nt);
        } else {
          column_sums<S>(G, GH, d.TB(), GH, dbhh, add, nt);
        }
      }
      if (dhr)
        par_gemm<S>(nt, true, false, P, H, TB, S(1), at<S>(rs, r.DHP), P, at<S>(rs, r.HP), H, beta, dhr, H);
    }
  }

  if (!direct) {
    // float16 / bfloat16: dw = round(g) (SET) or round(float(dw) + g) (ADD), round-to-nearest-even.
    const long long n = static_cast<long long>(d.nweights);
    const bool acc = a.mode == OPENRNN_WGRAD_ADD;
#pragma omp parallel for num_threads(threads_for(d.nweights, nt)) schedule(static)
    for (long long i = 0; i < n; ++i) {
      const float g = static_cast<float>(dw[i]);
      const float v = acc ? load_elem<float>(a.dw, d.dt, static_cast<size_t>(i)) + g : g;
      store_elem<float>(a.dw, d.dt, static_cast<size_t>(i), v);
    }
  }
}

template void backward_weights_pass<float>(const openrnn_rnn_desc&, const openrnn_seq_desc&,
                                           const BackwardWeightsArgs&, int);
template void backward_weights_pass<double>(const openrnn_rnn_desc&, const openrnn_seq_desc&,
                                            const BackwardWeightsArgs&, int);

}  // namespace cpu
}  // namespace openrnn
