// xproj_splitk (session 38, lab; built, not yet run on a GPU): the float32 input projection at small M, with K split
// over the CTAs of a thread-block cluster and the partial tiles summed through distributed shared memory in a fixed
// order (deterministic, strict float32 FMA), against cuBLAS's default (cublasSgemm, as src/cuda/gemm.cu calls it).
//
// Why. At B = 1 the input projection C[M = T B, N = G H] = X[M, K = I] W_ih[N, K]^T is on the critical path of
// every float32 call, before the persistent kernel: cuBLAS takes 11 / 19 / 44 µs at H = 256 / 512 / 1024 (M = 100;
// session 36, ncu at boost clocks), 28% of the FFMA rate at H = 1024 (~44 of a ~190 µs call). Session 36's four
// small-M kernels split K only inside a CTA and did not beat it. Here each cluster of S CTAs owns one 128-column
// tile of C and all (<= 128) rows; CTA rank r multiplies the K range [r K / S, (r + 1) K / S); then every rank sums
// its quarter (an S-th) of the tile's rows over the S partial tiles in rank order and writes C. With N = 4096 and
// S = 4 that is 128 CTAs, each with 128 x 128 x 256 FMAs: ~16 µs at the FFMA rate on an H100 (M padded to 128),
// against cuBLAS's 44 µs.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90a dev/lab/xproj_splitk.cu -lcublas -o xproj_splitk (or the lab's CMake)
// Run:   ./xproj_splitk              M:N:K = 100:1024:256, 100:2048:512, 100:4096:1024, 400:4096:1024, 100:3072:1024
//        ./xproj_splitk M:N:K ...    given shapes (M <= 128 per row block; larger M run as several row blocks)
// Prints per shape: max relative difference against a float64 reference (both kernels) and against cuBLAS, and the
// median µs of 20 calls of each with a 64 MiB L2 flush before every call, as openrnn-bench times a layer.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lab_check.h"  // CK

namespace cg = cooperative_groups;

namespace {

constexpr int kTM = 128, kTN = 128, kKC = 16, kNT = 256;  // tile rows, tile columns, k per stage, threads
constexpr int kLDS = kTM + 4;                               // As / Bs row stride (floats): [k][m] and [k][n]

// C[m][n] = sum_k A[m][k] B[n][k] (row-major A [M][K], B [N][K], C [M][N]) for the rows [m0, m0 + 128) of one row
// block. grid (N / 128 column tiles, S, row blocks), cluster (1, S, 1): rank r = blockIdx.y. Thread (ty, tx) =
// (tid / 16, tid % 16) accumulates rows 8 ty .. 8 ty + 7 x columns 8 tx .. 8 tx + 7 in registers; each stage stages
// A[128][16] and B[128][16] transposed into shared memory (k-major rows of 128 + 4), the next stage's global values
// held in registers meanwhile. Requirements: K % (S * 16) == 0, N % 128 == 0 (the lab's shapes).
template <int S>
__global__ void __launch_bounds__(kNT, 1) splitk_gemm(const float* __restrict__ A, const float* __restrict__ B,
                                                      float* __restrict__ C, int M, int N, int K) {
  extern __shared__ float4 smem4[];
  float* As = reinterpret_cast<float*>(smem4);  // [kKC][kLDS]
  float* Bs = As + kKC * kLDS;                  // [kKC][kLDS]
  float* Cs = Bs + kKC * kLDS;                  // [kTM][kTN]: this rank's partial tile
  cg::cluster_group cluster = cg::this_cluster();
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  const int n0 = blockIdx.x * kTN, m0 = blockIdx.z * kTM, rank = int(cluster.block_rank());
  const int kper = K / S, kb = rank * kper;
  // Global loads of one stage: thread tid takes rows lr = tid / 4 and lr + 64 of A and of B, k quad lq = tid % 4.
  const int lr = tid / 4, lq = tid % 4;
  float4 ra[2], rb[2];
  auto fetch = [&](int k0) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = m0 + lr + 64 * h, n = n0 + lr + 64 * h;
      ra[h] = m < M ? *reinterpret_cast<const float4*>(A + size_t(m) * K + k0 + 4 * lq) : make_float4(0, 0, 0, 0);
      rb[h] = *reinterpret_cast<const float4*>(B + size_t(n) * K + k0 + 4 * lq);
    }
  };
  auto stage = [&]() {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = lr + 64 * h;
      As[(4 * lq + 0) * kLDS + r] = ra[h].x;
      As[(4 * lq + 1) * kLDS + r] = ra[h].y;
      As[(4 * lq + 2) * kLDS + r] = ra[h].z;
      As[(4 * lq + 3) * kLDS + r] = ra[h].w;
      Bs[(4 * lq + 0) * kLDS + r] = rb[h].x;
      Bs[(4 * lq + 1) * kLDS + r] = rb[h].y;
      Bs[(4 * lq + 2) * kLDS + r] = rb[h].z;
      Bs[(4 * lq + 3) * kLDS + r] = rb[h].w;
    }
  };
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;
  fetch(kb);
  for (int k0 = kb; k0 < kb + kper; k0 += kKC) {
    __syncthreads();  // the previous stage's reads are done
    stage();
    __syncthreads();
    if (k0 + kKC < kb + kper) fetch(k0 + kKC);  // in flight during this stage's FMAs
#pragma unroll
    for (int k = 0; k < kKC; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(As + k * kLDS + 8 * ty);
      const float4 a1 = *reinterpret_cast<const float4*>(As + k * kLDS + 8 * ty + 4);
      const float4 b0 = *reinterpret_cast<const float4*>(Bs + k * kLDS + 8 * tx);
      const float4 b1 = *reinterpret_cast<const float4*>(Bs + k * kLDS + 8 * tx + 4);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  }
  // This rank's partial tile into its shared memory, then rank r sums rows [r 128 / S, (r + 1) 128 / S) over the
  // ranks in order 0 .. S-1 (a fixed order: deterministic) and writes them.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    float4* row = reinterpret_cast<float4*>(Cs + (8 * ty + i) * kTN + 8 * tx);
    row[0] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    row[1] = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
  cluster.sync();  // every rank's partial tile is complete and visible to the cluster
  constexpr int RPR = kTM / S;  // rows per rank
  const float* peer[S];
#pragma unroll
  for (int q = 0; q < S; ++q) peer[q] = cluster.map_shared_rank(Cs, q);
  for (int e = tid; e < RPR * kTN / 4; e += kNT) {
    const int r = rank * RPR + e / (kTN / 4), c4 = e % (kTN / 4);
    if (m0 + r >= M) continue;
    float4 v = reinterpret_cast<const float4*>(peer[0] + r * kTN)[c4];
#pragma unroll
    for (int q = 1; q < S; ++q) {
      const float4 w = reinterpret_cast<const float4*>(peer[q] + r * kTN)[c4];
      v.x = __fadd_rn(v.x, w.x);
      v.y = __fadd_rn(v.y, w.y);
      v.z = __fadd_rn(v.z, w.z);
      v.w = __fadd_rn(v.w, w.w);
    }
    reinterpret_cast<float4*>(C + size_t(m0 + r) * N + n0)[c4] = v;
  }
  cluster.sync();  // no rank leaves while a peer still reads its partial tile
}

constexpr size_t kSmem = (size_t(2) * kKC * kLDS + size_t(kTM) * kTN) * 4;

template <int S>
void launch(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t s) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(N / kTN, S, (M + kTM - 1) / kTM);
  cfg.blockDim = dim3(kNT, 1, 1);
  cfg.dynamicSmemBytes = kSmem;
  cfg.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 1;
  at[0].val.clusterDim.y = S;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, splitk_gemm<S>, A, B, C, M, N, K));
}

__global__ void flush_l2(float* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] += 1.f;
}

double max_rel(const std::vector<float>& x, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num = std::max(num, std::fabs(double(x[i]) - ref[i]));
    den = std::max(den, std::fabs(ref[i]));
  }
  return num / (den > 0 ? den : 1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> shapes;
  for (int i = 1; i < argc; ++i) shapes.push_back(argv[i]);
  if (shapes.empty()) shapes = {"100:1024:256", "100:2048:512", "100:4096:1024", "400:4096:1024", "100:3072:1024"};
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# xproj_splitk: %s, %d SMs; C[M][N] = A[M][K] B[N][K]^T float32; median of 20 calls, L2 flushed\n",
              prop.name, prop.multiProcessorCount);
  CK(cudaFuncSetAttribute(splitk_gemm<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
  CK(cudaFuncSetAttribute(splitk_gemm<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  float* fl = nullptr;
  const size_t fn = size_t(64) << 18;  // 64 MiB of floats
  CK(cudaMalloc(&fl, fn * 4));
  CK(cudaMemset(fl, 0, fn * 4));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::printf("M,N,K,kernel,us_median,max_rel_vs_float64,max_rel_vs_cublas\n");
  for (const std::string& sh : shapes) {
    int M = 0, N = 0, K = 0;
    if (std::sscanf(sh.c_str(), "%d:%d:%d", &M, &N, &K) != 3 || M < 1 || N % kTN || K % (8 * kKC)) {
      std::printf("skip %s (N %% 128, K %% 128)\n", sh.c_str());
      continue;
    }
    std::vector<float> a(size_t(M) * K), b(size_t(N) * K);
    unsigned st = 12345u;
    auto rnd = [&st]() { st = st * 1664525u + 1013904223u; return float(int(st >> 8) - (1 << 23)) / float(1 << 23); };
    for (float& v : a) v = rnd();
    for (float& v : b) v = 0.05f * rnd();
    std::vector<double> ref(size_t(M) * N);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += double(a[size_t(m) * K + k]) * b[size_t(n) * K + k];
        ref[size_t(m) * N + n] = s;
      }
    float *dA, *dB, *dC;
    CK(cudaMalloc(&dA, a.size() * 4));
    CK(cudaMalloc(&dB, b.size() * 4));
    CK(cudaMalloc(&dC, ref.size() * 4));
    CK(cudaMemcpy(dA, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> cub(ref.size()), out(ref.size());
    auto run = [&](int which) {
      if (which == 0) {  // row-major C = A B^T as column-major C^T = B A^T: (N x M) = (N x K)(K x M)
        const float one = 1.f, zero = 0.f;
        cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, dB, K, dA, K, &zero, dC, N);
      } else if (which == 1) {
        launch<4>(dA, dB, dC, M, N, K, 0);
      } else {
        launch<8>(dA, dB, dC, M, N, K, 0);
      }
    };
    const char* names[3] = {"cublas", "splitk4", "splitk8"};
    for (int which = 0; which < 3; ++which) {
      run(which);
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(which == 0 ? cub.data() : out.data(), dC, ref.size() * 4, cudaMemcpyDeviceToHost));
      std::vector<float> t;
      for (int r = 0; r < 21; ++r) {
        flush_l2<<<264, 512>>>(fl, fn);
        CK(cudaEventRecord(e0));
        run(which);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0) t.push_back(ms * 1000.f);
      }
      std::sort(t.begin(), t.end());
      std::vector<double> cubd(cub.begin(), cub.end());
      const std::vector<float>& mine = which == 0 ? cub : out;
      std::printf("%d,%d,%d,%s,%.2f,%.2e,%.2e\n", M, N, K, names[which], t[t.size() / 2], max_rel(mine, ref),
                  max_rel(mine, cubd));
    }
    CK(cudaFree(dA));
    CK(cudaFree(dB));
    CK(cudaFree(dC));
  }
  cublasDestroy(h);
  return 0;
}
