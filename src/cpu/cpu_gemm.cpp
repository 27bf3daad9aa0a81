#include "cpu/cpu_gemm.h"

#include <cblas.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <string>

#include "cpu_internal.h"
#include "error.h"

namespace openrnn {
namespace cpu {

namespace {

void check_gemm(const char* name, bool ta, bool tb, int M, int N, int K, int lda, int ldb, int ldc) {
  const int a_cols = ta ? M : K, b_cols = tb ? K : N;
  if (M < 0 || N < 0 || K < 0 || lda < std::max(1, a_cols) || ldb < std::max(1, b_cols) || ldc < std::max(1, N))
    fail(OPENRNN_STATUS_INTERNAL_ERROR, std::string("CPU backend: invalid ") + name + " shape M=" + std::to_string(M) +
                                            " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                                            " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) +
                                            " ldc=" + std::to_string(ldc));
}

// ---- vector traits for the kernel --------------------------------------------------------------------------------
template <typename S>
struct KV;
template <>
struct KV<float> {
  using V = __m256;
  static constexpr int W = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V mload(const float* p, int n) { return n >= W ? load(p) : n <= 0 ? zero() : _mm256_maskload_ps(p, mask(n)); }
  static void mstore(float* p, V v, int n) {
    if (n >= W)
      store(p, v);
    else if (n > 0)
      _mm256_maskstore_ps(p, mask(n), v);
  }
};
template <>
struct KV<double> {
  using V = __m256d;
  static constexpr int W = 4;
  static V zero() { return _mm256_setzero_pd(); }
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static V bcast(const double* p) { return _mm256_broadcast_sd(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static V mload(const double* p, int n) {
    return n >= W ? load(p) : n <= 0 ? zero() : _mm256_maskload_pd(p, mask(n));
  }
  static void mstore(double* p, V v, int n) {
    if (n >= W)
      store(p, v);
    else if (n > 0)
      _mm256_maskstore_pd(p, mask(n), v);
  }
};

// MR rows of A times NP column blocks of B, each block two vectors wide: MR * NP * 2 accumulators (at most 12 of the
// 16 ymm registers, leaving room for the B loads and the A broadcast). Full blocks only.
template <typename S, int MR, int NP>
inline void kernel_full(int K, const S* A, size_t lda, const S* B, size_t ldb, size_t bstride, S* C, size_t ldc,
                        bool acc) {
  using T = KV<S>;
  using V = typename T::V;
  // A flat accumulator array with fully unrolled loops: GCC keeps it in registers (a [MR][NP][2] array was
  // written back to the stack every iteration, halving the kernel's speed).
  constexpr int NA = MR * NP * 2;
  V c[NA];
#pragma GCC unroll 12
  for (int i = 0; i < NA; ++i) c[i] = T::zero();
  for (int k = 0; k < K; ++k) {
    V b[NP * 2];
#pragma GCC unroll 6
    for (int p = 0; p < NP; ++p) {
      const S* bp = B + p * bstride + static_cast<size_t>(k) * ldb;
      b[2 * p] = T::load(bp);
      b[2 * p + 1] = T::load(bp + T::W);
    }
#pragma GCC unroll 6
    for (int m = 0; m < MR; ++m) {
      const V a = T::bcast(A + m * lda + k);
#pragma GCC unroll 6
      for (int p = 0; p < NP; ++p) {
        c[(m * NP + p) * 2] = T::fma(a, b[2 * p], c[(m * NP + p) * 2]);
        c[(m * NP + p) * 2 + 1] = T::fma(a, b[2 * p + 1], c[(m * NP + p) * 2 + 1]);
      }
    }
  }
#pragma GCC unroll 6
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 6
    for (int p = 0; p < NP; ++p) {
      S* cp = C + m * ldc + p * 2 * T::W;
      V c0 = c[(m * NP + p) * 2], c1 = c[(m * NP + p) * 2 + 1];
      if (acc) {
        c0 = T::add(c0, T::load(cp));
        c1 = T::add(c1, T::load(cp + T::W));
      }
      T::store(cp, c0);
      T::store(cp + T::W, c1);
    }
}

// One block with only `nv` (< NR) valid columns: masked loads of B (the canonical storage has no padding) and
// masked stores of C.
template <typename S, int MR>
inline void kernel_tail(int K, const S* A, size_t lda, const S* B, size_t ldb, S* C, size_t ldc, bool acc, int nv) {
  using T = KV<S>;
  using V = typename T::V;
  const int n0 = nv, n1 = nv - T::W;
  V c[MR][2];
  for (int m = 0; m < MR; ++m) c[m][0] = c[m][1] = T::zero();
  for (int k = 0; k < K; ++k) {
    const S* bp = B + static_cast<size_t>(k) * ldb;
    const V b0 = T::mload(bp, n0), b1 = T::mload(bp + T::W, n1);
    for (int m = 0; m < MR; ++m) {
      const V a = T::bcast(A + m * lda + k);
      c[m][0] = T::fma(a, b0, c[m][0]);
      c[m][1] = T::fma(a, b1, c[m][1]);
    }
  }
  for (int m = 0; m < MR; ++m) {
    S* cp = C + m * ldc;
    if (acc) {
      c[m][0] = T::add(c[m][0], T::mload(cp, n0));
      c[m][1] = T::add(c[m][1], T::mload(cp + T::W, n1));
    }
    T::mstore(cp, c[m][0], n0);
    T::mstore(cp + T::W, c[m][1], n1);
  }
}

// Blocks nb0..nb1-1 for MR rows: NP blocks at a time, the remaining full blocks in one narrower pass (a thread at
// B = 1, H = 128 owns 4 blocks per gate: they must not fall back to one block, i.e. two FMA chains, at a time), and
// the partial last block masked.
template <typename S, int MR, int NP>
void row_block(int K, const S* A, size_t lda, const S* B, size_t ldb, size_t bstride, int nb0, int nb1, int N, S* C,
               size_t ldc, bool acc) {
  constexpr int NR = kNR<S>;
  const int full_end = std::min(nb1, N / NR);  // blocks below this are full
  int j = nb0;
  for (; j + NP <= full_end; j += NP)
    kernel_full<S, MR, NP>(K, A, lda, B + j * bstride, ldb, bstride, C + static_cast<size_t>(j) * NR, ldc, acc);
  const S* Bj = B + j * bstride;
  S* Cj = C + static_cast<size_t>(j) * NR;
  switch (full_end - j) {  // < NP
    case 1: kernel_full<S, MR, 1>(K, A, lda, Bj, ldb, bstride, Cj, ldc, acc); break;
    case 2: kernel_full<S, MR, (NP > 2 ? 2 : 1)>(K, A, lda, Bj, ldb, bstride, Cj, ldc, acc); break;
    case 3: kernel_full<S, MR, (NP > 3 ? 3 : 1)>(K, A, lda, Bj, ldb, bstride, Cj, ldc, acc); break;
    case 4: kernel_full<S, MR, (NP > 4 ? 4 : 1)>(K, A, lda, Bj, ldb, bstride, Cj, ldc, acc); break;
    case 5: kernel_full<S, MR, (NP > 5 ? 5 : 1)>(K, A, lda, Bj, ldb, bstride, Cj, ldc, acc); break;
    default: break;
  }
  j = std::max(j, full_end);
  for (; j < nb1; ++j) {
    const int nv = N - j * NR;
    if (nv <= 0) break;
    kernel_tail<S, MR>(K, A, lda, B + j * bstride, ldb, C + static_cast<size_t>(j) * NR, ldc, acc, nv);
  }
}

}  // namespace

void blas_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
               float beta, float* C, int ldc) {
  check_gemm("sgemm", ta, tb, M, N, K, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
              B, ldb, beta, C, ldc);
}

void blas_gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
               int ldb, double beta, double* C, int ldc) {
  check_gemm("dgemm", ta, tb, M, N, K, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
              B, ldb, beta, C, ldc);
}

template <typename S>
void par_gemm(int nt, bool ta, bool tb, int M, int N, int K, S alpha, const S* A, int lda, const S* B, int ldb, S beta,
              S* C, int ldc) {
  nt = std::min(nt, threads_for(static_cast<size_t>(M) * N * K, nt));
  if (nt <= 1 || M < 2 * nt) {
    blas_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  check_gemm(sizeof(S) == 4 ? "sgemm" : "dgemm", ta, tb, M, N, K, lda, ldb, ldc);
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const int m0 = static_cast<int>(static_cast<long long>(M) * tid / nth);
    const int m1 = static_cast<int>(static_cast<long long>(M) * (tid + 1) / nth);
    // Row m of op(A) is row m of A (ta false) or column m of A (ta true).
    const S* Am = ta ? A + m0 : A + static_cast<size_t>(m0) * lda;
    if (m1 > m0) blas_gemm(ta, tb, m1 - m0, N, K, alpha, Am, lda, B, ldb, beta, C + static_cast<size_t>(m0) * ldc, ldc);
  }
}

template void par_gemm<float>(int, bool, bool, int, int, int, float, const float*, int, const float*, int, float,
                              float*, int);
template void par_gemm<double>(int, bool, bool, int, int, int, double, const double*, int, const double*, int, double,
                               double*, int);

template <typename S>
void small_gemm(int M, int K, const S* A, size_t lda, const S* B, size_t ldb, size_t bstride, int nb0, int nb1, int N,
                S* C, size_t ldc, bool acc) {
  if (M <= 0 || nb1 <= nb0) return;
  // M <= 6 (the common small batch): one row block, several column blocks per pass so that at M = 1 there are
  // still 12 independent FMA chains. Larger M: row blocks of 6 over one column block at a time, so the K x NR
  // slice of B stays in L1 while all rows stream past it.
  switch (M) {
    case 1: row_block<S, 1, 6>(K, A, lda, B, ldb, bstride, nb0, nb1, N, C, ldc, acc); return;
    case 2: row_block<S, 2, 3>(K, A, lda, B, ldb, bstride, nb0, nb1, N, C, ldc, acc); return;
    case 3: row_block<S, 3, 2>(K, A, lda, B, ldb, bstride, nb0, nb1, N, C, ldc, acc); return;
    case 4: row_block<S, 4, 1>(K, A, lda, B, ldb, bstride, nb0, nb1, N, C, ldc, acc); return;
    case 5: row_block<S, 5, 1>(K, A, lda, B, ldb, bstride, nb0, nb1, N, C, ldc, acc); return;
    case 6: row_block<S, 6, 1>(K, A, lda, B, ldb, bstride, nb0, nb1, N, C, ldc, acc); return;
    default: break;
  }
  // M > 6: K is cut into slices of KC so that the slices of a few column blocks of B (JC blocks of KC x NR, 72 KB of
  // float) stay in L2 while the row blocks of A pass over them, and rows into groups of MC whose KC slice of A
  // (72 KB) stays in L2 too. Row blocks are 6 rows; the last rows of M go in blocks of 3, 2 or 1 rows over 2, 3 or
  // 6 column blocks, so that every pass keeps 12 independent FMA chains (10 are needed to hide the FMA latency at
  // two FMAs per cycle; a 4-row, 1-block pass has only 8: measured 1.45x slower than OpenBLAS at M = 8 with it).
  constexpr int KC = 192, MC = 96, JC = 6;
  for (int k0 = 0; k0 < K; k0 += KC) {
    const int kc = std::min(KC, K - k0);
    const bool a = acc || k0 > 0;
    const S* Bk = B + static_cast<size_t>(k0) * ldb;
    for (int mc0 = 0; mc0 < M; mc0 += MC) {
      const int mc_end = std::min(M, mc0 + MC);
      for (int j0 = nb0; j0 < nb1; j0 += JC) {
        const int j1 = std::min(nb1, j0 + JC);
        for (int m = mc0; m < mc_end;) {
          const int rem = mc_end - m;
          const int mr = rem >= 6 ? 6 : rem == 5 ? 3 : rem == 4 ? 2 : rem;
          const S* Am = A + m * lda + k0;
          S* Cm = C + m * ldc;
          switch (mr) {
            case 1: row_block<S, 1, 6>(kc, Am, lda, Bk, ldb, bstride, j0, j1, N, Cm, ldc, a); break;
            case 2: row_block<S, 2, 3>(kc, Am, lda, Bk, ldb, bstride, j0, j1, N, Cm, ldc, a); break;
            case 3: row_block<S, 3, 2>(kc, Am, lda, Bk, ldb, bstride, j0, j1, N, Cm, ldc, a); break;
            default: row_block<S, 6, 1>(kc, Am, lda, Bk, ldb, bstride, j0, j1, N, Cm, ldc, a); break;
          }
          m += mr;
        }
      }
    }
  }
}

template <typename S>
void pack_transposed(const S* W, size_t ldw, int N, int K, S* out, int nb0, int nb1) {
  constexpr int NR = kNR<S>;
  for (int j = nb0; j < nb1; ++j) {
    S* panel = out + static_cast<size_t>(j) * K * NR;
    const int nv = std::min(NR, N - j * NR);
    // Read NR rows of W (each contiguous in k), write the panel contiguously.
    for (int k = 0; k < K; ++k) {
      S* dst = panel + static_cast<size_t>(k) * NR;
      for (int n = 0; n < nv; ++n) dst[n] = W[(static_cast<size_t>(j) * NR + n) * ldw + k];
      for (int n = nv; n < NR; ++n) dst[n] = S(0);
    }
  }
}

template void small_gemm<float>(int, int, const float*, size_t, const float*, size_t, size_t, int, int, int, float*,
                                size_t, bool);
template void small_gemm<double>(int, int, const double*, size_t, const double*, size_t, size_t, int, int, int,
                                 double*, size_t, bool);
template void pack_transposed<float>(const float*, size_t, int, int, float*, int, int);
template void pack_transposed<double>(const double*, size_t, int, int, double*, int, int);

}  // namespace cpu
}  // namespace openrnn
