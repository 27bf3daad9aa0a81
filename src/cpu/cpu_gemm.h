// Matrix products of the CPU backend.
//
// Two kinds:
//  - blas_gemm / par_gemm: row-major wrappers over OpenBLAS's cblas_sgemm / cblas_dgemm, for the products over all
//    time steps (input projections [T*B, I] x [I, G*H], input gradients, weight gradients), where OpenBLAS is the
//    fastest we measured (85-89 GFLOP/s single-threaded at [6400, 512] x [512, 1536..2048] against 66-68 for
//    small_gemm). CBLAS returns nothing; argument errors are caught here before the call (OpenBLAS's xerbla would
//    only print), so a bad shape is an INTERNAL_ERROR naming the product instead of a silent wrong answer.
//  - small_gemm: the per-step recurrent products [B, K] x [K, N] with B small. One OpenBLAS call per step costs
//    several microseconds of dispatch and thread wake-up, more than the whole product at B = 1..8, H = 128. This
//    register-blocked AVX2 kernel is called by each thread of the step loop on its own column blocks (units), so a
//    step needs no hand-off between the BLAS's threads and ours. Measured single-threaded on the 2-core AMD EPYC
//    (AVX2) build machine, GFLOP/s small_gemm / OpenBLAS: [1, 128] x [128, 512] 40-45 / 6; [8, 128] x [128, 512]
//    76-92 / 39; [64, 128] x [128, 512] 90-95 / 67-73; [64, 512] x [512, 2048] 74-84 / 66-76.
//
// Column blocks: NR = 64 bytes of S (16 floats / 8 doubles), two AVX2 vectors. B is read as column blocks: block j
// starts at B + j * bstride, row k of the block at + k * ldb. Two storages fit that:
//   canonical row-major B [K, N] (ldb = N's row stride, bstride = NR), used when the weight is already k-major
//   (backward: dG [B, G*H] x W_hh [G*H, Hout]);
//   packed panels (ldb = NR, bstride = K * NR) from pack_transposed, used when the product needs W^T
//   (forward: h [B, Hout] x W_hh^T): each panel is the K x NR slice of W^T stored contiguously, so the kernel streams
//   it with unit stride; the columns past N in the last panel are zero.
#pragma once

#include <cstddef>

namespace openrnn {
namespace cpu {

template <typename S>
constexpr int kNR = static_cast<int>(64 / sizeof(S));

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// C[M, N] = alpha * op(A) op(B) + beta * C, row-major; op = transpose when ta / tb.
void blas_gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
               float beta, float* C, int ldc);
void blas_gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
               int ldb, double beta, double* C, int ldc);

// blas_gemm with the rows of C split over nt OpenMP threads, each calling the (single-threaded) BLAS on its slice.
// The backend keeps OpenBLAS at one thread and parallelises its products this way, so that only one pool of threads
// (OpenMP's) ever runs: with two pools on a 2-core machine, OpenMP's workers still spin-waiting after a time loop
// (libgomp spins for up to a few milliseconds) would share the cores with OpenBLAS's threads.
template <typename S>
void par_gemm(int nt, bool ta, bool tb, int M, int N, int K, S alpha, const S* A, int lda, const S* B, int ldb, S beta,
              S* C, int ldc);

// For column blocks nb0..nb1-1 (columns [nb0*NR, min(nb1*NR, N))):
//   C[0:M, cols] = (acc ? C[0:M, cols] : 0) + A[0:M, 0:K] x B[0:K, cols].
// A row-major with row stride lda; B as described above; C row-major with row stride ldc (C points at column 0).
template <typename S>
void small_gemm(int M, int K, const S* A, size_t lda, const S* B, size_t ldb, size_t bstride, int nb0, int nb1, int N,
                S* C, size_t ldc, bool acc);

// Packs W^T for small_gemm: W is row-major [N, K] (row stride ldw); panel j (j in nb0..nb1-1) of out receives
// out[j*K*NR + k*NR + n] = W[(j*NR + n) * ldw + k], zero where j*NR + n >= N. out holds ceil(N/NR) * K * NR.
template <typename S>
void pack_transposed(const S* W, size_t ldw, int N, int K, S* out, int nb0, int nb1);

}  // namespace cpu
}  // namespace openrnn
