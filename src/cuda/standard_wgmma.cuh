// STANDARD algorithm, 16-bit Hopper step kernel (sm_90a): one launch per step computes the step's recurrent product
// with warpgroup MMAs (wgmma.mma_async, float16 / bfloat16 operands from shared memory, float32 accumulation in
// registers), its operands brought in by the tensor memory accelerator (cp.async.bulk.tensor, 128-byte swizzle), and
// runs the cell on the product in the same kernel (LSTM without projection, GRU linear-before-reset, RNN).
//
// Why. At large B * H the 16-bit STANDARD step was cuBLAS's GEMM plus the pointwise kernel: the float32 product [2B,
// G*H] (hi and lo rows of the split state) is written by the GEMM and read back by the pointwise kernel with the
// float32 input projection (docs/performance.md, "where STANDARD's large 16-bit steps go": at B = 256 H = 1024 the
// pointwise kernel was 8.5 of 22 µs per step). The mma.sync step kernel (standard_mma.cuh) removes that round trip but
// loses to cuBLAS there: its cp.async loads and mma.sync reach ~2 TB/s of operand traffic and about half of the tensor
// pipe. This kernel is the same tiling with Hopper's loads and MMAs. Measured (H100, session 26): the MMAs are ~1.5 µs
// of a ~19 µs kernel at B = 256 H = 1024 LSTM; the main loop (each block streams its own 128 state rows and 128 W rows
// through L2: 64 MB per step there, ~8 TB/s) took 15.5K cycles and the cell 19K, until the cell's inputs were loaded
// into registers before the main loop (below). Thread-block clusters sharing the operands by TMA multicast (sessions 26
// and 28: halving either operand's L2 traffic made every row 1-7% slower; the main loop is bound by the product, not by
// L2 bytes), and the cell's inputs staged by bulk copies, were measured and not kept (docs/performance.md).
//
// Operands (as standard_mma.cuh). A = the state slot read as M rows of K = H columns: split states are [B, 2H] slots
// read as [2B, H] (row 2b = hi_b, 2b+1 = lo_b: terms = 2), the reduced-state math reads hi only ([B] rows of stride 2H:
// terms = 1). The tensor map covers every slot of the state buffer ([slots][M][K]); the step's slot is its third
// coordinate, so rows past M are zero-filled by the TMA unit. W = W_hh [G*H, H] row-major (k-contiguous rows: the
// K-major B operand as stored).
//
// Tiling. A CTA owns MB rows of A (MB / terms sequences) and UB units: the NB = G*UB columns {g*H + u0 + j} (every gate
// of its units, so the cell is local). MW = MB / 64 product warpgroups, warpgroup wr computing rows [64 wr, 64 wr +
// 64) x all NB columns (one m64nNBk16 per k16); CW consumer warpgroups in all (the product ones first; the 128-row tile
// adds two that join only the epilogue); one producer warp whose lane 0 issues the loads (Tile::PW). K is walked in k
// blocks of 64 (one 128-byte swizzle row) through an STAGES-deep ring: stage s holds A [MB][64] and W [NB][64] (gate
// g's UB rows at row g*UB), filled by one TMA box for A and G boxes for W, completing on full[s]; the product warps
// free it on empty[s] once their MMAs that read it have retired (wgmma.wait_group 1: the MMAs of the next block stay in
// flight). After the loop the accumulators go to shared memory as float32 [MB][NB + 8] (over the drained ring) and the
// consumer threads run the cell (lstm_unit_in / gru_unit_in / rnn_unit_in, the code of the pointwise kernels) on
// (sequence, unit) pairs with gh(j) = row hi + row lo of that column: the same float operations as the other step
// paths; only the product's own summation order differs. With B % 8 == 0 (fold) the A box is read in an order that
// puts each sequence's hi and lo rows in the same thread's accumulators, which add them before the store (the same
// sum, half the shared-memory traffic; encode_fold_map), and then, but in the lean tile, the product warps run the cell
// on their own accumulators instead (RegCell: no accumulator store, no epilogue-only warpgroups; session 76, H200:
// -8% to -15% inference at B = 256 and at B = 192 H = 512). Where wg::perm_rule takes it, those tiles read W_hh
// through a permuted view (encode_perm_map) that gives each product thread a run of consecutive units, which the
// cell loads and stores as 16-byte vectors (session 77, H200: LSTM B = 256 H = 1024 inference -6%). Padding: rows
// past M, units past H (their W rows are the next gate's or zero-filled: their columns are never read) and k past K
// are zero-filled by the TMA unit.
// Requirements: H % 8 == 0 (the tensor map's row pitch is a multiple of 16 bytes), W_hh and the state buffer 16-byte
// aligned (checked by FwdRun), sm_90a. Deterministic: fixed summation order, no atomics.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "persistent_common.cuh"  // smem_u32, mbarrier primitives
#include "standard_fused.cuh"     // allow_smem
#include "standard_kernels.cuh"
#include "standard_plan.h"
#include "standard_wgmma_cell.cuh"   // RegCell
#include "standard_wgmma_rules.h"  // where the kernel runs and in which form

namespace openrnn {
namespace cuda {

namespace wg {

using persist::smem_u32;

constexpr int kBK = 64;  // k per stage: one 128-byte swizzle row of 16-bit elements
// Stages whose W_hh boxes a programmatic dependent step issues before its pdl_wait (session 27, run 2, B = 64-256
// H = 512-1024 float16 inference, best of two processes: 2 stages took 0.95-1.01x the time of none and 0.95-1.01x that
// of the whole ring: the ring's later W boxes ahead of the first A box delay the first MMAs where the wait returns at
// once).
constexpr int kWpre = 2;

// ---- warpgroup MMA ------------------------------------------------------------------------------------------------
// Shared-memory matrix descriptor of a K-major tile with the 128-byte swizzle: rows of 128 bytes, 8-row atoms of 1024
// bytes (stride byte offset), the leading byte offset unused by this mode (1). The tile's base must be 1024-byte
// aligned; the k16 slices of a 64-wide block start 32 bytes apart.
__device__ __forceinline__ uint64_t smem_desc(const void* p) {
  const uint64_t a = smem_u32(p);
  return ((a & 0x3FFFFull) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
__device__ __forceinline__ void mma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void mma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void mma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Pins the accumulators across the wait: the compiler may not move their reads above it.
template <int R>
__device__ __forceinline__ void fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d[NB/2] += A (64 x 16, descriptor da) * B (NB x 16, descriptor db)^T. Register i of thread (warp q, lane l) of the
// warpgroup: row 16q + l/4 + 8*((i/2)%2), column 8*(i/4) + 2*(l%4) + i%2.
template <typename T, int R>
__device__ __forceinline__ void mma_async(float (&d)[R], uint64_t da, uint64_t db);

// m64n48k16: 24 accumulator registers.
#define OPENRNN_WGMMA_N48(TY)                                                                                       \
  asm volatile(                                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\n"                                                                  \
      "wgmma.mma_async.sync.aligned.m64n48k16.f32." TY "." TY                                                       \
      " {"                                                                                                          \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "                                                          \
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23"                                                  \
      "}, %24, %25, p, 1, 1, 0, 0;\n}\n"                                                                            \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),      \
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])                   \
      : "l"(da), "l"(db), "r"(1)                                                                                    \
      : "memory")
template <typename T>
__device__ __forceinline__ void mma_async(float (&d)[24], uint64_t da, uint64_t db) {
  if constexpr (std::is_same<T, __half>::value)
    OPENRNN_WGMMA_N48("f16");
  else
    OPENRNN_WGMMA_N48("bf16");
}
#undef OPENRNN_WGMMA_N48

// m64n64k16: 32 accumulator registers.
#define OPENRNN_WGMMA_N64(TY)                                                                                       \
  asm volatile(                                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                                  \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                                       \
      " {"                                                                                                          \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "                                                          \
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "                                                \
      "%24, %25, %26, %27, %28, %29, %30, %31"                                                                      \
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"                                                                            \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),      \
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),     \
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                   \
      : "l"(da), "l"(db), "r"(1)                                                                                    \
      : "memory")
template <typename T>
__device__ __forceinline__ void mma_async(float (&d)[32], uint64_t da, uint64_t db) {
  if constexpr (std::is_same<T, __half>::value)
    OPENRNN_WGMMA_N64("f16");
  else
    OPENRNN_WGMMA_N64("bf16");
}
#undef OPENRNN_WGMMA_N64

// m64n96k16: 48 accumulator registers.
#define OPENRNN_WGMMA_N96(TY)                                                                                       \
  asm volatile(                                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"                                                                  \
      "wgmma.mma_async.sync.aligned.m64n96k16.f32." TY "." TY                                                       \
      " {"                                                                                                          \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "                                                          \
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "                                                \
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "                                                \
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"                                                  \
      "}, %48, %49, p, 1, 1, 0, 0;\n}\n"                                                                            \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),      \
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),     \
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),     \
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),     \
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])                   \
      : "l"(da), "l"(db), "r"(1)                                                                                    \
      : "memory")
template <typename T>
__device__ __forceinline__ void mma_async(float (&d)[48], uint64_t da, uint64_t db) {
  if constexpr (std::is_same<T, __half>::value)
    OPENRNN_WGMMA_N96("f16");
  else
    OPENRNN_WGMMA_N96("bf16");
}
#undef OPENRNN_WGMMA_N96

// m64n128k16: 64 accumulator registers.
#define OPENRNN_WGMMA_N128(TY)                                                                                      \
  asm volatile(                                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                                  \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY                                                      \
      " {"                                                                                                          \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "                                                          \
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "                                                \
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "                                                \
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                                \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "                                                \
      "%60, %61, %62, %63"                                                                                          \
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                                                            \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),      \
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),     \
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),     \
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),     \
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),     \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),     \
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                   \
      : "l"(da), "l"(db), "r"(1)                                                                                    \
      : "memory")
template <typename T>
__device__ __forceinline__ void mma_async(float (&d)[64], uint64_t da, uint64_t db) {
  if constexpr (std::is_same<T, __half>::value)
    OPENRNN_WGMMA_N128("f16");
  else
    OPENRNN_WGMMA_N128("bf16");
}
#undef OPENRNN_WGMMA_N128

// ---- TMA and mbarriers --------------------------------------------------------------------------------------------
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(bar))
      : "memory");
}
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_u32(bar))
      : "memory");
}
__device__ __forceinline__ void tma_load_5d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3, int c4,
                                            uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, "
      "%6}], [%7];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(smem_u32(bar))
      : "memory");
}
// Waits for the phase of parity `parity` of this CTA's mbarrier to complete (acquire at CTA scope, the default: the TMA
// unit's writes into this CTA are visible after it, as CUTLASS's pipelines rely on).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  const uint32_t a = smem_u32(bar);
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

template <int CELL>  // 0 LSTM, 1 GRU linear-before-reset, 2 RNN
struct Gates {
  static constexpr int value = CELL == 0 ? 4 : (CELL == 1 ? 3 : 1);
};

// Block shape: MB rows of A (64 or 128), UB units. REG: the cell runs on the product warps' accumulators (RegCell).
// FOLD: the kernel's (0 none, 1 fold, 2 fold with the permuted W box); it sets the ring's depth (DEEP).
template <int CELL, int MB, int UB, bool LEAN = false, bool REG = false, int FOLD = 0>
struct Tile {
  static constexpr int G = Gates<CELL>::value;
  static constexpr int NB = G * UB;
  static_assert(MB == 64 || MB == 128, "one or two product warpgroups");
  static_assert(UB % 8 == 0 && NB % 16 == 0 && NB <= 128, "wgmma N: whole 8-row swizzle atoms, <= 128");
  // Consumer warpgroups: MW run the product, one per 64 rows on all NB columns (m64nNBk16); CW >= MW run the cell.
  // The 128-row tile adds two warpgroups that join only the epilogue, so that its cell runs 4 elements per thread on
  // 16 warps instead of 8 on 8, while its product keeps two m64n128k16 warpgroups. (Session 27 split the columns
  // between four product warpgroups instead, m64n64k16: the cell 6.0 -> 4.1 µs, but the main loop 7.6 -> 8.9 µs at
  // B = 256 H = 1024 LSTM: each pair re-reads its A rows from shared memory.) The 64-row tile keeps one warpgroup:
  // split into m64n32k16 / m64n24k16 it lost 9-13% at B = 64 H = 1024.
  // The producer warp: the first of the epilogue-only warpgroups where there are some (it idles in the main loop
  // otherwise, and 16 warps leave 128 registers per thread where 17 leave 96, which spilled), else a warp of its own.
  // LEAN (the tall tile only, OPENRNN_STD_WGMMA_LEAN): two cell warpgroups and a ring of four stages, so that two
  // CTAs fit an SM (registers capped for it: 288 threads at <= 112) and the next step's CTAs can start beside this
  // step's under programmatic launch.
  // REG: the product warpgroups run the cell from their own registers, so there are no epilogue-only warpgroups and
  // the producer is a warp of its own (MW * 128 + 32 threads: up to 224 registers each at MB = 128).
  static constexpr int MW = MB / 64;
  static constexpr int CW = REG ? MW : (MB == 128 ? (LEAN ? 2 : 4) : 1);
  static constexpr int MINB = LEAN ? 2 : 1;  // CTAs per SM for __launch_bounds__
  static constexpr int PW = CW > MW ? MW * 4 : CW * 4;  // the producer's warp
  static constexpr int NTHREADS = CW * 128 + (PW < CW * 4 ? 0 : 32);
  static constexpr int R = NB / 2;  // accumulators per product thread
  static constexpr int A_BYTES = MB * kBK * 2, B_BYTES = NB * kBK * 2, STAGE = A_BYTES + B_BYTES;
  // DEEP: GRU's 128-row register-cell tiles, and LSTM's with the plain W box, take up to 224 KB of ring and 9 stages
  // (LSTM 128 x 128: 7 stages of 32 KB, 230,512 bytes of shared memory with the barriers and the alignment; GRU
  // 128 x 96: 8 of 28 KB; the tall tiles: 9); the other tiles up to 200 KB and 6 (the lean tile 4). Session 78's run 1
  // (H200, float16, graph, T = 100, µs per step, 6 stages -> deep, inference two rounds): GRU 128 x 96 (B = 256
  // H = 1024) inference 11.75 -> 10.37 (-11.8%), training -3.4%; GRU tall (B = 192 / 256 H = 512) inference -1.7% /
  // -3.6%, training -0.4% / -1.0%; LSTM tall with the plain box (inference, B = 192 / 256 H = 512) -3.2% / 0.0%. With
  // the permuted box LSTM lost: 128 x 128 inference 13.61 -> 14.14 (+3.9%), tall training +4.4% / +2.7%.
  static constexpr bool DEEP = REG && MB == 128 && (CELL == 1 || FOLD == 1);
  static constexpr int RING = DEEP ? 224 * 1024 : 200 * 1024;
  static constexpr int MAXST = LEAN ? 4 : (DEEP ? 9 : 6);
  static constexpr int STAGES = RING / STAGE < MAXST ? RING / STAGE : MAXST;
  // Epilogue row stride (floats): = 8 mod 32, so that a half-warp's float2 stores (rows r..r+3, column pairs 0-6) hit
  // 32 distinct banks.
  static constexpr int CLD = NB + 8;
  static_assert(STAGES >= 3, "a ring of at least three stages");
  static_assert(size_t(MB) * CLD * 4 <= size_t(STAGES) * STAGE, "the epilogue tile fits over the ring");
  // ring (1024-aligned) | full[STAGES] | empty[STAGES]; + 1024 for aligning the dynamic base.
  static constexpr size_t smem_bytes = size_t(STAGES) * STAGE + 2 * STAGES * 8 + 1024;
};

template <int CELL, bool LEAN, int FOLD>
struct UseReg {  // the register cell (RegCell): folded, not lean (its 112 registers), LSTM or GRU
  static constexpr bool value = FOLD != 0 && !LEAN && CELL != 2;
};

// One step. mA: the state buffer as [slots][M][K] (terms rows per sequence) in boxes of MB rows, or with fold its
// [slots][B/8][2][8][K] view (encode_fold_map); mW: W_hh as [G*H][K] in boxes of UB rows (with Maps::perm,
// encode_perm_map's view); slot: the step's input slot. p: as for the pointwise kernels (gh unused). wpre: launched as
// a programmatic dependent of the previous step, the number of stages whose W boxes go out before pdl_wait; else 0.
// fold: Maps::fold. FOLD: 0 where fold == 0, else 1, or 2 with Maps::perm (a template parameter: in session 75's runs 2
// and 4 the kernel with both epilogues behind a runtime flag took up to 6% longer on its unfolded path than the kernel
// without the fold, which erased the fold's gain). With FOLD and not LEAN, the product warps of LSTM and GRU run the
// cell themselves (UseReg, RegCell) and the kernel ends after it.
template <typename T, int CELL, int MB, int UB, bool LEAN, int FOLD, bool PAD = false>
__global__ void __launch_bounds__(Tile<CELL, MB, UB, LEAN, UseReg<CELL, LEAN, FOLD>::value, FOLD>::NTHREADS,
                                  Tile<CELL, MB, UB, LEAN, UseReg<CELL, LEAN, FOLD>::value, FOLD>::MINB)
    wgmma_fwd_kernel(const FwdStep<T, float> p, const __grid_constant__ CUtensorMap mA,
                     const __grid_constant__ CUtensorMap mW, int slot, int terms, int wpre, int fold) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // built without sm_90a (CMAKE_CUDA_ARCHITECTURES other than the default 90a): wgmma does not exist
#else
  constexpr bool REG = UseReg<CELL, LEAN, FOLD>::value;
  constexpr bool PERM = FOLD == 2;  // the register cell on the permuted W box (Maps::perm)
  static_assert(!PERM || REG, "the permuted units: the register cell's tiles only");
  using Cfg = Tile<CELL, MB, UB, LEAN, REG, FOLD>;
  constexpr int G = Cfg::G, R = Cfg::R, STAGES = Cfg::STAGES, CW = Cfg::CW, MW = Cfg::MW, PW = Cfg::PW;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(base + size_t(STAGES) * Cfg::STAGE);
  uint64_t* empty = full + STAGES;
  float* Cs = reinterpret_cast<float*>(base);  // epilogue [MB][CLD], after the ring drained

  const int H = p.H, K = p.Hout;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int u0 = blockIdx.x * UB, m0 = blockIdx.y * MB;
  // ma: the first state row of this CTA's box. Folded, where the last row of CTAs would run past B (B % (MB / 2) != 0,
  // B >= MB / 2), its box ends at sequence B instead: the TMA unit's out-of-bounds fill of a box's sequence groups
  // cost up to 22% of the step (session 79's run 4, GRU B = 96 H = 2048; session 80's run 1 with this shift, forced:
  // B = 96 GRU -14.5% / -22.9% at H = 1024 / 2048, LSTM -11.4% / -8.3%). Its first (m0 - ma) / 2 sequences belong to
  // the row of CTAs before, which runs their cell: here they are multiplied and skipped (below bown).
  // Only where the state rows are 128-byte lines apart (p.hsp % kBK == 0: H % 64 == 0, or the padded pitch of
  // StdDims::wpad): at H = 1000 with rows 2000 bytes apart the shifted box took longer than the filled one (session
  // 80's run 7, forced: B = 96 GRU +13.1%, LSTM +10.6%; B = 48 +6.8% / +9.2%; session 81's run 1 measured this gate).
  const bool whole_k = REG ? PAD || K % kBK == 0 : p.hsp % kBK == 0;  // (REG: p.hsp == K unless PAD)
  const int ma = FOLD && whole_k && m0 + MB > terms * p.B && terms * p.B >= MB ? terms * p.B - MB : m0;
  // Folded with B < MB / 2, encode_fold_map's box holds the B / 8 sequence groups there are (2B rows): the stage's
  // other A rows keep stale bytes, whose products land in rows past B, which no cell reads. The bytes each stage
  // expects follow.
  const unsigned stage_tx =
      FOLD && whole_k && terms * p.B < MB ? unsigned(terms * p.B * kBK * 2 + Cfg::B_BYTES) : Cfg::STAGE;
  const int KB = (K + kBK - 1) / kBK;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      persist::mbar_init(&full[s], 1);
      persist::mbar_init(&empty[s], MW * 4);  // one arrival per product warp
    }
    persist::fence_mbar_init_cluster();  // the initialisation visible to the TMA unit (async proxy)
  }
  __syncthreads();

  // Programmatic dependent launch (launch() with pdl: steps after a layer and direction's first): this CTA may have
  // started while the previous step's grid still runs. Before pdl_wait() it touches only W_hh (never written by a
  // forward call): the producer issues the W boxes of the first wpre stages ahead (kWpre; 0 without pdl: stage by
  // stage, A then W).
  // The next step's CTAs may start at once. The 128-row tile fills an SM's shared memory, so they take SMs as this
  // grid's CTAs leave them; two 64-row tiles fit an SM, so the next step's CTAs may wait beside this one's, but no
  // further step: its grid launches only once all of the next step's CTAs have started.
  pdl_trigger();

  // The cell's other inputs. Split state (terms == 2): the consumer threads run the cell on E elements each, (sequence,
  // unit) = tid + i * 128 CW, and load those elements' gx (float32, from DRAM at large T * B: the input GEMM wrote it
  // long before) and previous c (LSTM) or h (GRU) into registers now, so that the loads complete under the main loop:
  // the cell loop, which waited on each element's loads in turn, took 19K of the kernel's 36K cycles at B = 256 H = 1024
  // (run 7) with gx prefetched into L2. Reduced state (terms == 1, twice the sequences): gx is prefetched into L2 and
  // every thread runs the cell from global memory.
  const bool staged = terms == 2;
  const int nseq = MB / terms, b0 = ma / terms, bown = m0 / terms;  // the box's first sequence, this CTA's first
  constexpr int CT = CW * 128, E = (MB / 2) * UB / CT;  // consumer threads; elements per consumer thread
  static_assert((MB / 2) * UB % CT == 0, "whole elements per consumer thread");
  CellInputs<CELL> in[REG ? 1 : E];
  // REG: the product thread's one sequence and first unit (RegCell); rc holds its inputs.
  const int reg_s = b0 + 32 * (warp / 4) + 8 * (warp % 4) + (lane >> 2),
            reg_b = reg_s < bown ? p.B : reg_s,  // p.B: no sequence (RegCell skips it)
            reg_u = u0 + (PERM ? UB / 4 : 2) * (lane & 3);
  RegCell<CELL == 2 ? 0 : CELL, REG ? UB : 8, PERM, PAD> rc;
  // Every element of a consumer thread has the same unit (CT is a multiple of UB), so its biases are one CellBias. They
  // are loaded with the other inputs: read in the cell, as FwdBias does, they were global loads after the previous
  // element's stores, one round trip per element (session 74's phase profile: the cell took ~2000 cycles per element).
  static_assert(CT % UB == 0, "one unit per consumer thread");
  CellBias<CELL> bias;
  // (The producer warp, where it runs the cell too, loads its inputs after issuing its loads.)
  auto load_inputs = [&] {
    if constexpr (REG) {  // staged (the fold needs the split state)
      rc.load_bias(p, reg_u);
      pdl_wait();
      rc.load(p, reg_b, reg_u);
      return;
    }
    if (staged) bias.load(p, u0 + tid % UB);  // b_ih, b_hh: never written by a forward call
    pdl_wait();
    if (staged) {
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int e = tid + i * CT, b = b0 + e / UB, u = u0 + e % UB;
        in[i].load(p, b, u, !(FOLD && b < bown) && b < p.B && u < H);
      }
    } else {
      constexpr int LPR = (UB * 4 + 127) / 128;  // 128-byte lines per gate row of the tile
      const int GH = G * H;
      for (int i = tid; i < nseq * G * LPR; i += CT) {
        const int bl = i / (G * LPR), g = (i / LPR) % G, l = i % LPR, b = b0 + bl;
        if (b < p.B && u0 + l * 32 < H && p.active(b)) {
          const float* a = p.gx + p.gx_rows.row(p.t, b) * GH + g * H + u0 + l * 32;
          asm volatile("prefetch.global.L2 [%0];\n" ::"l"(a));
        }
      }
    }
  };
  if (warp < CW * 4 && warp != PW) load_inputs();

  float acc[R];
#pragma unroll
  for (int i = 0; i < R; ++i) acc[i] = 0.f;

  if (warp == PW) {
    // Producer: lane 0 fills the ring. The first pre stages' W boxes go out before pdl_wait(), their A boxes (the
    // state the previous step writes) after it. fold: the A box is the [MB/16][2][8][64] view (hi rows 16j..16j+7,
    // lo rows 16j+8..16j+15 of sequences 8j..8j+7), at coordinates (k, 0, 0, sequence group, slot) (rank 5) or (k, 0,
    // 0, slot * B/8 + sequence group) (rank 4).
    if (lane == 0) {
      auto load_a = [&](int kb, unsigned char* st, uint64_t* bar) {
        if (FOLD && fold == 2)
          tma_load_4d(st, &mA, kb * kBK, 0, 0, slot * (p.B / 8) + ma / 16, bar);
        else if (FOLD)
          tma_load_5d(st, &mA, kb * kBK, 0, 0, ma / 16, slot, bar);
        else
          tma_load_3d(st, &mA, kb * kBK, m0, slot, bar);
      };
      auto load_w = [&](int kb, unsigned char* st, uint64_t* bar) {
#pragma unroll
        for (int g = 0; g < G; ++g)
          if constexpr (PERM)  // the [G*H/UB][M][4][2][K] view (encode_perm_map): unit block (g*H + u0) / UB
            tma_load_5d(st + Cfg::A_BYTES + g * UB * kBK * 2, &mW, kb * kBK, 0, 0, 0, (g * H + u0) / UB, bar);
          else
            tma_load_2d(st + Cfg::A_BYTES + g * UB * kBK * 2, &mW, kb * kBK, g * H + u0, bar);
      };
      const int pre = KB < wpre ? KB : (wpre < STAGES ? wpre : STAGES);
      for (int kb = 0; kb < pre; ++kb) {
        persist::mbar_arrive_expect_tx_cta(&full[kb], stage_tx);
        load_w(kb, base + size_t(kb) * Cfg::STAGE, &full[kb]);
      }
      pdl_wait();
      for (int kb = 0; kb < pre; ++kb) load_a(kb, base + size_t(kb) * Cfg::STAGE, &full[kb]);
      for (int kb = pre; kb < KB; ++kb) {
        const int s = kb % STAGES;
        if (kb >= STAGES) mbar_wait(&empty[s], unsigned((kb / STAGES - 1) & 1));
        unsigned char* st = base + size_t(s) * Cfg::STAGE;
        persist::mbar_arrive_expect_tx_cta(&full[s], stage_tx);
        load_a(kb, st, &full[s]);
        load_w(kb, st, &full[s]);
      }
    } else {
      pdl_wait();  // lanes 1-31 run the reduced-state cell (below) too
    }
    __syncwarp();
    if (PW < CW * 4) load_inputs();
  } else if (warp < MW * 4) {
    // Product warpgroup wr: rows [64 wr, 64 wr + 64) of the tile, all its columns.
    const int wr = warp / 4;
    for (int kb = 0; kb < KB; ++kb) {
      const int s = kb % STAGES;
      mbar_wait(&full[s], unsigned((kb / STAGES) & 1));
      const unsigned char* st = base + size_t(s) * Cfg::STAGE;
      const unsigned char* as = st + wr * 64 * kBK * 2;
      const unsigned char* bs = st + Cfg::A_BYTES;
      mma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) mma_async<T>(acc, smem_desc(as + kk * 32), smem_desc(bs + kk * 32));
      mma_commit();
      mma_wait<1>();  // the MMAs of block kb - 1 have retired: free its stage
      fence_regs(acc);
      if (kb > 0 && lane == 0) mbar_arrive(&empty[(kb - 1) % STAGES]);
    }
    mma_wait<0>();
    fence_regs(acc);
    if constexpr (REG) rc.run(p, reg_b, reg_u, acc);
  }
  if constexpr (REG) return;  // (no shared memory after the ring: nothing to wait for)
  __syncthreads();  // every MMA has retired and every load into this CTA landed:
                    // Cs may overwrite the ring

  if (warp < MW * 4) {
    const int wr = warp / 4, q = warp % 4;
    const int c0 = 2 * (lane & 3);
    if constexpr (FOLD) {
      // Registers i, i + 1 (i % 4 == 0) hold row 16q + lane/4 of the warp's rows, the hi row of sequence
      // 32 wr + 8 q + lane/4, and i + 2, i + 3 the same columns of row 16q + lane/4 + 8, its lo row: gh = hi + lo, the
      // cell's sum, formed here (one row per sequence in Cs, half the stores).
      const int row = 32 * wr + 8 * q + (lane >> 2);
#pragma unroll
      for (int i = 0; i < R; i += 4)
        *reinterpret_cast<float2*>(Cs + row * Cfg::CLD + 8 * (i >> 2) + c0) =
            make_float2(acc[i] + acc[i + 2], acc[i + 1] + acc[i + 3]);
    } else {
      const int r0 = 64 * wr + 16 * q + (lane >> 2);
#pragma unroll
      for (int i = 0; i < R; i += 2) {  // registers i, i + 1: columns col, col + 1 (CLD is even: 8-byte aligned)
        const int row = r0 + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + c0;
        *reinterpret_cast<float2*>(Cs + row * Cfg::CLD + col) = make_float2(acc[i], acc[i + 1]);
      }
    }
  }
  __syncthreads();

  // Cell: (sequence bl, unit ul) pairs, units fastest (coalesced state / y accesses); gh of gate g = row hi + row lo
  // of the gate's column. Every element's gh is read from Cs before the first element's stores: the compiler may not
  // move a read of Cs (a generic pointer) above a global store, so read in turn they tied each element's cell to the
  // previous one's stores.
  if (staged) {
    if (warp < CW * 4) {
      float gv[E][G];
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int e = tid + i * CT;
        // rows past M / units past H: zero, never used
        const float* c = Cs + (FOLD ? e / UB : 2 * (e / UB)) * Cfg::CLD + e % UB;
#pragma unroll
        for (int g = 0; g < G; ++g) gv[i][g] = FOLD ? c[g * UB] : c[g * UB] + c[g * UB + Cfg::CLD];
      }
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int e = tid + i * CT, b = b0 + e / UB, u = u0 + e % UB;
        if ((FOLD && b < bown) || b >= p.B || u >= H) continue;
        in[i].run_pre(p, b, u, [&gv, i](int g, int) { return gv[i][g]; }, bias);
      }
    }
  } else {
    for (int e = tid; e < nseq * UB; e += Cfg::NTHREADS) {
      const int bl = e / UB, ul = e % UB, b = b0 + bl, u = u0 + ul;
      if (b >= p.B || u >= H) continue;
      const float* c = Cs + bl * Cfg::CLD + ul;  // one row per sequence
      auto gh = [c, H](int j) { return c[(j / H) * UB]; };
      cell_unit<CELL>(p, b, u, gh);
    }
  }
#endif
}

// ---- host side ----------------------------------------------------------------------------------------------------
// cuTensorMapEncodeTiled from the driver, through the runtime (no link against libcuda). Null where unavailable.
inline PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    cudaGetLastError();  // a failed lookup leaves no sticky error
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A row-major 16-bit tensor [d2][d1][d0] (rank 3) or [d1][d0] (rank 2), d0 contiguous, row pitch p1 and plane pitch p2
// in elements, read in boxes of [1][b1][64] with the 128-byte swizzle, zero fill out of bounds. false where the driver
// refuses it.
template <typename T>
bool encode_map(CUtensorMap* m, int rank, const T* base, unsigned long long d0, unsigned long long d1,
                unsigned long long d2, unsigned long long p1, unsigned long long p2, unsigned b1) {
  const auto fn = encode_fn();
  if (!fn) return false;
  const CUtensorMapDataType dt =
      std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const cuuint64_t dims[3] = {d0, d1, d2};
  const cuuint64_t strides[2] = {p1 * sizeof(T), p2 * sizeof(T)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(kBK), b1, 1};
  const cuuint32_t estr[3] = {1, 1, 1};
  return fn(m, dt, static_cast<cuuint32_t>(rank), const_cast<T*>(base), dims, strides, box, estr,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The split state buffer hs ([slots][B][2][P]: hi then lo of each sequence at the part pitch P >= H, H % 8 == 0,
// B % 8 == 0) as the rank-5 tensor [slots][B/8][2][8][H] (strides 2BP, 16P, P, 2P elements), read in boxes of
// [1][MB/16][2][8][64]: in shared memory a box is MB rows of 128 bytes, rows 16j..16j+7 the hi rows of the box's
// sequences 8j..8j+7 and rows 16j+8..16j+15 their lo rows, so that a warpgroup MMA leaves each sequence's hi and lo
// products in the same thread (rows r and r + 8 of the accumulator fragment). Sequences past B (whole groups of 8) are
// zero-filled. Where B is a multiple of MB / 2 (no box crosses a slot) the slot and group dimensions are merged into
// one ([slots * B/8], rank 4, box [MB/16][2][8][64]): session 75's run 2 (H200, float16 inference, B = 192 / 256,
// H = 512 / 1024) measured it 0.7-1.6% faster than rank 5 at 7 of 8 points (0.2% slower at the eighth). Returns 2 (rank
// 4), 1 (rank 5) or 0 where the driver refuses it.
template <typename T>
int encode_fold_map(CUtensorMap* m, const T* hs, unsigned long long B, unsigned long long H, unsigned long long P,
                    unsigned long long slots, unsigned MB) {
  const auto fn = encode_fn();
  if (!fn || B % 8 != 0 || H % 8 != 0 || P % 8 != 0 || P < H || MB % 16 != 0) return 0;
  const CUtensorMapDataType dt =
      std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const bool r4 = B % (MB / 2) == 0;  // boxes never cross a slot: slot and sequence group as one coordinate
  const cuuint64_t dims[5] = {H, 8, 2, r4 ? slots * (B / 8) : B / 8, slots};
  const cuuint64_t e = sizeof(T);
  const cuuint64_t strides[4] = {2 * P * e, P * e, 16 * P * e, 2 * B * P * e};
  // B < MB / 2 (and P % kBK == 0, as the kernel's stage_tx): a box of the B / 8 groups there are, not one filled out
  // of bounds
  const cuuint32_t groups = static_cast<cuuint32_t>(B < MB / 2 && P % kBK == 0 ? B / 8 : MB / 16);
  const cuuint32_t box[5] = {static_cast<cuuint32_t>(kBK), 8, 2, groups, 1};
  const cuuint32_t estr[5] = {1, 1, 1, 1, 1};
  const bool ok = fn(m, dt, r4 ? 4 : 5, const_cast<T*>(hs), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
  return ok ? (r4 ? 2 : 1) : 0;
}

// W_hh ([G*H][H] at the row pitch P >= H, H % UB == 0) as the rank-5 tensor [G*H/UB][UB/8][4][2][H] with strides UB P,
// 2 P, (UB/4) P, P elements (unit block, m, c, e), read in boxes of [1][UB/8][4][2][64]: in shared memory a box is UB
// rows of 128 bytes, row 8 m + 2 c + e holding unit (UB/4) c + 2 m + e of the block. A warpgroup MMA's thread with
// l % 4 = c then holds in its accumulator columns 8 m + 2 c + e (m < UB/8, e < 2) the units (UB/4) c .. (UB/4)
// c + UB/4 - 1 of each gate: a run of consecutive units, which the register cell loads and stores as vectors (RegCell's
// PERM) where the plain box gave it pairs 8 units apart. false where the driver refuses it.
template <typename T>
bool encode_perm_map(CUtensorMap* m, const T* W, unsigned long long G, unsigned long long H, unsigned long long P,
                     unsigned UB) {
  const auto fn = encode_fn();
  if (!fn || UB % 8 != 0 || H % UB != 0 || P % 8 != 0 || P < H) return false;
  const CUtensorMapDataType dt =
      std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const cuuint64_t e = sizeof(T);
  const cuuint64_t dims[5] = {H, 2, 4, UB / 8, G * H / UB};
  const cuuint64_t strides[4] = {P * e, (UB / 4) * P * e, 2 * P * e, UB * P * e};
  const cuuint32_t box[5] = {static_cast<cuuint32_t>(kBK), 2, 4, UB / 8, 1};
  const cuuint32_t estr[5] = {1, 1, 1, 1, 1};
  return fn(m, dt, 5, const_cast<T*>(W), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
         CUDA_SUCCESS;
}

// OPENRNN_STD_WGMMA_FOLD (developer switch, read once): "0" keeps the split state's hi and lo rows apart to the cell
// (the [M][K] map; the cell adds them); unset / other: the folded view wherever it applies (B % 8 == 0, split state).
inline bool fold_allowed() {
  static const bool on = env_switch01("OPENRNN_STD_WGMMA_FOLD") != 0;
  return on;
}

// The tensor maps of one layer and direction (the state buffer and W_hh) for the block shape chosen for (B, H).
struct Maps {
  CUtensorMap a, w;
  int MB = 0, UB = 0;  // block shape (the maps' boxes: MB rows of the state, UB rows of W_hh)
  bool lean = false;   // the tall tile's two-per-SM form (Tile's LEAN)
  int fold = 0;        // a is encode_fold_map's view (1: rank 5, 2: rank 4): the epilogue sums hi and lo rows
  bool perm = false;   // w is encode_perm_map's view (the register cell's tiles: each thread's units consecutive)
  int sms = 0;         // the device's SM count (the launch's carveout, one_wave_carveout)
};

// OPENRNN_STD_WGMMA_CARVEOUT (developer switch, read once): a percent for every launch of this kernel instead of
// one_wave_carveout's, or -1 for none.
inline int carveout(long long blocks, int sms) {
  static const int forced = env_carveout("OPENRNN_STD_WGMMA_CARVEOUT");
  return one_wave_carveout(blocks, sms, forced);
}

// pdl: a programmatic dependent of the previous kernel on st (that kernel must be this layer and direction's previous
// step: the kernel reads W_hh before pdl_wait()).
template <typename T, int CELL, int MB, int UB, bool LEAN, int FOLD, bool PAD = false>
void launch_kernel(const FwdStep<T, float>& p, const Maps& m, int slot, int terms, bool pdl, int device,
                   cudaStream_t st) {
  using Cfg = Tile<CELL, MB, UB, LEAN, UseReg<CELL, LEAN, FOLD>::value, FOLD>;
  const dim3 grid((p.H + UB - 1) / UB, (p.B * terms + MB - 1) / MB);
  const auto kernel = &wgmma_fwd_kernel<T, CELL, MB, UB, LEAN, FOLD, PAD>;
  {
    static std::mutex mu;
    static std::vector<int> done;
    allow_smem(reinterpret_cast<const void*>(kernel), device, Cfg::smem_bytes, mu, done);
  }
  StepLaunch how;
  how.pdl = pdl;
  // LEAN: all of the SM's shared memory, so that a second CTA fits beside the first
  how.carveout = LEAN ? static_cast<int>(cudaSharedmemCarveoutMaxShared)
                      : carveout(static_cast<long long>(grid.x) * grid.y, m.sms);
  launch_step_ex(kernel, grid, dim3(Cfg::NTHREADS), Cfg::smem_bytes, st, how, p, m.a, m.w, slot, terms,
                 pdl ? kWpre : 0, m.fold);
  OPENRNN_LAUNCH_CHECK("wgmma_fwd_kernel");
}
// The register cell's tiles with the padded state pitch (p.hsp != p.Hout: StdDims::wpad in inference) take the PAD
// form of the kernel (RegCell's srow, lo_off); every other kernel reads p.hsp at run time.
template <typename T, int CELL, int MB, int UB, bool LEAN, int FOLD>
void launch_pad(const FwdStep<T, float>& p, const Maps& m, int slot, int terms, bool pdl, int device,
                cudaStream_t st) {
  if constexpr (UseReg<CELL, LEAN, FOLD>::value) {
    if (p.hsp != p.Hout) {
      launch_kernel<T, CELL, MB, UB, LEAN, FOLD, true>(p, m, slot, terms, pdl, device, st);
      return;
    }
  }
  launch_kernel<T, CELL, MB, UB, LEAN, FOLD>(p, m, slot, terms, pdl, device, st);
}
template <typename T, int CELL, int MB, int UB, bool LEAN = false>
void launch(const FwdStep<T, float>& p, const Maps& m, int slot, int terms, bool pdl, int device, cudaStream_t st) {
  if constexpr (!LEAN && CELL != 2) {
    if (m.perm) {
      launch_pad<T, CELL, MB, UB, LEAN, 2>(p, m, slot, terms, pdl, device, st);
      return;
    }
  }
  if (m.fold)
    launch_pad<T, CELL, MB, UB, LEAN, 1>(p, m, slot, terms, pdl, device, st);
  else
    launch_pad<T, CELL, MB, UB, LEAN, 0>(p, m, slot, terms, pdl, device, st);
}

// Units per block of the large (128-row) and the small (64-row) shape: N = G * UB = 128 / 96 (GRU) and 64 / 48.
inline int big_units(int G) { return G == 1 ? 128 : 32; }
inline int small_units(int G) { return G == 1 ? 64 : 16; }

template <typename T, int CELL>
void launch_cell(const FwdStep<T, float>& p, const Maps& m, int slot, int terms, bool pdl, int device,
                 cudaStream_t st) {
  constexpr int G = Gates<CELL>::value;
  if (m.MB == 128 && m.UB == small_units(G) && m.lean)  // the tall tile, two CTAs per SM
    launch<T, CELL, 128, (G == 1 ? 64 : 16), true>(p, m, slot, terms, pdl, device, st);
  else if (m.MB == 128 && m.UB == small_units(G))  // the tall tile (tall_rule, OPENRNN_STD_WGMMA_TALL)
    launch<T, CELL, 128, (G == 1 ? 64 : 16)>(p, m, slot, terms, pdl, device, st);
  else if (m.MB == 128)
    launch<T, CELL, 128, (G == 1 ? 128 : 32)>(p, m, slot, terms, pdl, device, st);
  else
    launch<T, CELL, 64, (G == 1 ? 64 : 16)>(p, m, slot, terms, pdl, device, st);
}

}  // namespace wg

// OPENRNN_STD_TRACE=1 (developer switch): the Hopper step's block shape on stderr, once per distinct one.
inline void wgmma_trace(const StdDims& d, int G, const wg::Maps& m) {
  static const bool on = env_switch01("OPENRNN_STD_TRACE") == 1;
  if (!on) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  char b[160];
  snprintf(b, sizeof b, "openrnn STANDARD wgmma step: B=%d H=%d G=%d block %dx%d%s%s%s", d.B, d.H, G, m.MB,
           G * m.UB, m.lean ? " lean" : "", m.fold == 2 ? " fold (rank 4)" : (m.fold == 1 ? " fold (rank 5)" : ""),
           m.perm ? " perm" : "");
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(b).second) std::fprintf(stderr, "%s\n", b);
}

// The tensor maps and block shape of one layer and direction. hs: the state buffer (slots of B * 2 hp elements, each
// read as [B * terms] rows of stride 2 hp / terms; hp: the state's part pitch, FwdStep::hsp); W = W_hh [G*H, H] at
// the row pitch wp (H, or the padded copy's StdDims::wpad); cell_aligned: the cell's buffers allow RegCell's
// vector accesses (else no fold). false where the driver cannot encode the maps (the caller falls back to the other
// step paths).
template <typename T>
bool wgmma_prepare(const StdDims& d, const T* W, int wp, const T* hs, int hp, int slots, int terms, bool cell_aligned,
                   bool perm_aligned, bool training, wg::Maps& m) {
  const int G = d.lstm ? 4 : (d.gru_lbr ? 3 : 1);
  const long long M = static_cast<long long>(d.B) * terms;
  const long long H = d.H;
  const int ub_big = wg::big_units(G), ub_small = wg::small_units(G);
  const long long n_big = ((M + 127) / 128) * ((H + ub_big - 1) / ub_big);
  const long long cols = (H + ub_small - 1) / ub_small;
  const long long n_small = ((M + 63) / 64) * cols, n_tall = ((M + 127) / 128) * cols;
  // the tall tile in place of the small shape (it can run where the small grid has more CTAs than SMs)
  const int o = wg::tall_override();
  const bool tall = n_small > m.sms && (o >= 0 ? o == 1 : wg::tall_rule(n_small, n_tall, m.sms));
  const bool big = wg::big_rule(n_big, o < 0 && tall && n_tall > m.sms);  // OPENRNN_STD_WGMMA_TALL set: 100 CTAs
  m.MB = big || tall ? 128 : 64;
  m.UB = big ? ub_big : ub_small;
  m.lean = !big && tall && wg::lean_rule(n_tall, m.sms);
  const unsigned long long pitch = static_cast<unsigned long long>(2 * hp / terms);  // row pitch: hp or 2 hp
  m.fold = terms == 2 && d.B % 8 == 0 && cell_aligned && wg::fold_allowed()
               ? wg::encode_fold_map(&m.a, hs, static_cast<unsigned long long>(d.B),
                                     static_cast<unsigned long long>(H), static_cast<unsigned long long>(hp),
                                     static_cast<unsigned long long>(slots), static_cast<unsigned>(m.MB))
               : 0;
  // The register cell's tiles (wg::UseReg: folded, not lean, LSTM or GRU) may take the permuted W box where every
  // unit block is whole and the cell's buffers allow 16-byte vectors; they do by wg::perm_rule.
  m.perm = m.fold && !m.lean && G != 1 && perm_aligned && H % m.UB == 0 &&
           wg::perm_allowed(d.lstm, m.MB, m.UB, training) &&
           wg::encode_perm_map(&m.w, W, static_cast<unsigned long long>(G), static_cast<unsigned long long>(H),
                               static_cast<unsigned long long>(wp), static_cast<unsigned>(m.UB));
  wgmma_trace(d, G, m);
  return (m.fold || wg::encode_map(&m.a, 3, hs, H, M, slots, pitch, static_cast<unsigned long long>(M) * pitch,
                                   static_cast<unsigned>(m.MB))) &&
         (m.perm || wg::encode_map(&m.w, 2, W, H, G * H, 1, static_cast<unsigned long long>(wp), 0,
                                   static_cast<unsigned>(m.UB)));
}

// One step on the Hopper kernel (T = __half or __nv_bfloat16); slot: the step's input slot of the state buffer; pdl:
// as wg::launch (the previous kernel on st is this layer and direction's previous step).
template <typename T>
void wgmma_forward_step(const StdDims& d, const FwdStep<T, float>& p, const wg::Maps& m, int slot, int terms, bool pdl,
                        int device, cudaStream_t st) {
  if (d.lstm)
    wg::launch_cell<T, 0>(p, m, slot, terms, pdl, device, st);
  else if (d.gru_lbr)
    wg::launch_cell<T, 1>(p, m, slot, terms, pdl, device, st);
  else
    wg::launch_cell<T, 2>(p, m, slot, terms, pdl, device, st);
}

}  // namespace cuda
}  // namespace openrnn
