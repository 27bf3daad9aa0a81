// The wgmma helpers of PERSISTENT v10's 16-bit LSTM tiles (FwdConfigV10::WG, persistent_fwd_v10.cuh; sessions 56-58):
// the shared-memory descriptor of the state operand, the warpgroup fence / commit / wait, and the m64nNk16 MMA with
// its A operand (W_hh) in registers. sm_90a only: built for another architecture they compile to nothing and the MMA
// traps (choose() takes these tiles on compute capability 9.0 only).
#pragma once

#include <cstdint>
#include <type_traits>

#include "persistent_common.cuh"  // smem_u32

namespace openrnn {
namespace cuda {
namespace persist {

// ---- the wgmma product (FwdConfigV10::WG; sessions 56-57) ----
// Shared-memory descriptor of a K-major operand in the 128-byte swizzle: 128-byte rows, 8-row atoms of 1024 bytes
// (stride byte offset), leading byte offset unused in this mode (1); base 1024-byte aligned, the k16 slices of a
// 64-wide block 32 bytes apart (as standard_wgmma.cuh's smem_desc).
__device__ __forceinline__ uint64_t v10_wg_desc(const void* p) {
  const uint64_t a = smem_u32(p);
  return ((a & 0x3FFFFull) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
// (sm_90a only, as the MMAs in v10_wg_mma: elsewhere they compile to nothing and the MMA traps)
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void v10_wg_fence() {}
__device__ __forceinline__ void v10_wg_commit() {}
__device__ __forceinline__ void v10_wg_wait0() {}
#else
__device__ __forceinline__ void v10_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void v10_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void v10_wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
#endif
// d[NP / 2] (+)= A (64 x 16, registers: warp q of the warpgroup holds rows 16q..16q+15 as mma.sync's m16k16 A
// fragment) * B (NP x 16, descriptor db)^T, NP = 8, 16 or 32; acc = 0 overwrites d. Register i of thread (warp q,
// lane l): row 16q + l/4 + 8*((i/2)%2), column 8*(i/4) + 2*(l%4) + i%2.
#define OPENRNN_V10_WG_ASM(SHAPE, TY, DREGS, AIDX, ...)                                                            \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" AIDX ", 0;\n"                                                  \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." TY "." TY " " DREGS ", p, 1, 1, 0;\n}\n"              \
               : __VA_ARGS__                                                                                       \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc)                                    \
               : "memory")
template <typename TW, int R>
__device__ __forceinline__ void v10_wg_mma(float (&d)[R], const uint32_t (&a)[4], uint64_t db, int acc) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // built without sm_90a: wgmma does not exist (choose() takes these tiles on compute capability 9.0 only)
#else
  constexpr bool F16 = std::is_same<TW, __half>::value;
  // the instruction's input type from TW
#define OPENRNN_V10_WG_TY(M) \
  if constexpr (F16)         \
    M("f16");                \
  else                       \
    M("bf16")
  if constexpr (R == 16) {
#define OPENRNN_V10_WG_N32(TY)                                                                                     \
  OPENRNN_V10_WG_ASM("m64n32k16", TY,                                                                              \
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, " \
                     "%20",                                                                                        \
                     "21", "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),     \
                     "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),       \
                     "+f"(d[14]), "+f"(d[15]))
    OPENRNN_V10_WG_TY(OPENRNN_V10_WG_N32);
#undef OPENRNN_V10_WG_N32
  } else if constexpr (R == 8) {
#define OPENRNN_V10_WG_N16(TY)                                                                                     \
  OPENRNN_V10_WG_ASM("m64n16k16", TY, "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12", "13",           \
                     "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]))
    OPENRNN_V10_WG_TY(OPENRNN_V10_WG_N16);
#undef OPENRNN_V10_WG_N16
  } else {
    static_assert(R == 4, "wgmma n8, n16 or n32");
#define OPENRNN_V10_WG_N8(TY)                                                                                      \
  OPENRNN_V10_WG_ASM("m64n8k16", TY, "{%0, %1, %2, %3}, {%4, %5, %6, %7}, %8", "9", "+f"(d[0]), "+f"(d[1]),        \
                     "+f"(d[2]), "+f"(d[3]))
    OPENRNN_V10_WG_TY(OPENRNN_V10_WG_N8);
#undef OPENRNN_V10_WG_N8
  }
#undef OPENRNN_V10_WG_TY
#endif
}
#undef OPENRNN_V10_WG_ASM

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
