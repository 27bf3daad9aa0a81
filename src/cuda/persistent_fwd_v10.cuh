// PERSISTENT forward kernel v10, the small-batch kernel at H = 1024: one cooperative cluster launch runs all T steps
// of one layer. LSTM and GRU (linear-before-reset); float16 / bfloat16 storage on tensor cores (below), and since
// session 15 float32 with an FFMA product (FwdConfigV10F32: the same exchange and cell; 8 or 16 units per CTA).
//
// Why a fifth kernel. At H = 1024 the 16-bit W_hh of one direction (LSTM 8 MB, GRU 6 MB) does not fit in one cluster
// of 16 CTAs, so v9 (persistent_fwd_v9.cuh) cannot take it, and the kernels that can were slow at small B (H100,
// float16 LSTM, µs/step: v4 grid mode, FFMA, 2.85 at B = 1, 5.06 at B = 4; v7, 6.00 at B = 16; cuDNN's
// PERSIST_STATIC 1.87-2.15). v7 re-reads its W slice from shared memory every step, streams the state through a
// cp.async ring with one __syncthreads per 64 columns (16 per step at H = 1024, each an L2 round trip deep), and every
// one of its 128 blocks reads the whole state from L2 (at B = 16, 64 KB per block, 8 MB per step). v10 keeps v9's
// product (W_hh in registers as mma A fragments, the state as the B operand, a k split over the warps) and v7's
// exchange through L2 (a split 16-bit copy of h_t in global memory, one arrival counter per group), and brings the
// state in with one bulk copy per state row, each multicast to every CTA of a small cluster: a cluster of CL CTAs
// reads the state from L2 once instead of CL times.
//
// Decomposition. A group of C = H / U CTAs (U = 16: C = 64; LSTM with U = 8, 128 CTAs, was measured and not kept) per
// batch tile of nb <= NBS sequences (b0 = b_lo + group * BT: b_lo > 0 in the later launches of a batch split over
// several, KernelV10Impl::plan); CTA `ct` of the group owns the units [ct*U, (ct+1)*U) and their RWS = G*U rows of W_hh
// (row r = gate r / U of unit r % U): MTW = RWS / 16 m16 tiles. 16 warps, warp w = (mg = w % MG, ks = w / MG) owns the
// MT m-tiles [mg*MT, (mg+1)*MT) over the k range [ks*H/KS, (ks+1)*H/KS) (KS = 16 / MG): A fragments MT x KTW x 4
// registers, loaded once (GRU: MG = 1, k split 16 ways, 48 registers; LSTM: 2 x 8, 64 registers). The state of the tile
// is the matrix [N = 2*NBS][H] of split rows (row 2s = hi of sequence s, 2s+1 = lo), double-buffered per CTA in
// hb[2][N][LDH] (the tile of 32: one buffer, below). The clusters (CL = 8, 4 or 2 CTAs, chosen by the plan from the
// device's cluster occupancy) lie inside a group (C is a multiple of CL).
//
// Per step t:
//  1. the input projections of the thread's cell element (registers; issued before the wait);
//  2. t > 0: thread 0 waits until the group's counter reaches C * t (every CTA wrote its units of h_{t-1} into
//     hg[(t-1)&1] and arrived with a GPU-scope release) and arms the CTA's mbarrier with the bytes of the tile's
//     state (2 nb rows of Hr halves); the lanes of warp 0 fence the generic -> async proxy and issue the CTA's share
//     of the rows (n = crank, crank + CL, ...): cp.async.bulk global -> shared::cluster with .multicast::cluster to
//     every CTA of its cluster, completing on each one's hb[t&1] and mbarrier (dense rows, float32 and 16-bit with
//     p.swz: one copy of the CTA's contiguous block of rows; the wgmma tiles: one per product pass, of whole 8-row
//     atoms, 16 wrs rows of 128 bytes). Every thread waits for the phase;
//  3. product: the warp's KTW k tiles x MT m-tiles x all NTL n8 tiles of hb[t&1] (ldmatrix), hi + lo summed in
//     registers -> part[ks][s][row];
//  4. __syncthreads; cell: thread e < NBS*U -> (sequence e / U, unit e % U), fixed for the launch, so c and h
//     (float32) live in its registers; gate sums = the KS partials in fixed order; v7_cell's pinned arithmetic;
//     h_t split into hg[t&1] (global);
//  5. __syncthreads, thread 0: red.release.gpu on the group's counter; then the step's other global writes
//     (v7_outputs: y, the training reserve, h_n / c_n), off the critical path.
// Step 0 needs no wait: every CTA loads h0 of its tile into hb[0] itself.
// Why nothing is overwritten early. hb[t&1]: the multicasts of step t land after the counter reached C * t, i.e.
// after every CTA of the group (this one included) arrived for step t-1, which it does after its step t-1 product;
// the buffer was last read two steps back. (One buffer would do by that argument; the second keeps the overwrite
// two steps away, and compute-sanitizer's racecheck, which does not model the ordering through the global counter,
// reported the single buffer's step-apart write and read.) The tiles of 32 (session 55) have room for one buffer only,
// which the argument above covers. p.cbar (on unless OPENRNN_PERSIST_V10_CBAR=0) adds a cluster barrier that states the
// same order in terms racecheck models: every thread arrives on it after its product, warp 0 waits on it before it
// issues the next step's copies, the other warps after the state landed (before their next arrival). The counter
// implies that barrier (every CTA arrives on the counter after its product), so the wait does not hold the step up:
// with and without it, B = 64 ran within noise (session 55, run 3). With p.pipe (LSTM's tile of 32, session 56) the
// rows of the product's two passes come as two copies on two mbarriers, the first pass's first; the second pass
// waits for the second. The wgmma tile of 32 (KSL, session 58) splits each pass further, into one copy per
// warpgroup's k slice on eight mbarriers: warpgroup ks waits only for its own slice of each pass. The same rows, the
// same order through the counter and the cluster barrier. (A warpgroup's B operand also reads, for dead sequences'
// columns only, rows past its pass's rows: at nb <= 12 or nb = 17-28 some of them lie in the next slice, which may
// still be landing. Those columns feed only part entries of sequences >= nb, which no cell thread reads.) part:
// rewritten by the product of step t+1, which follows this thread's passing step t's second __syncthreads, after
// every cell read of step t. hg[j]: written at step t (j = t&1) and read by the multicasts of step t+1; rewritten at
// step t+2, after the counter reached C * (t+2): every CTA finished step t+1, whose mbarrier phase completed only when
// every multicast of step t+1 had landed. The counter is a cooperative launch's: every CTA co-resident or the launch
// fails, never a deadlock. A final cluster barrier keeps every CTA alive until the last multicast into it has landed
// (it also waited for it, so this is belt and braces).
//
// Semantics are v7's (FwdParams, persistent_common.cuh; v7_cell / v7_outputs): ragged lengths carry the state past
// len and zero-fill y, direction 1 runs each sequence from its own last step, cell clipping, with TRAIN the same
// entries of STANDARD's reserve. Hr (the real hidden size) must be a multiple of 8 (float32: 4), so that the
// bulk-copy rows are whole 16-byte chunks; units [Hr, H) are padding (zero rows and columns of W, never written to
// hg). The 16-bit product takes h as hi + lo (22 bits), as v7, v9 and STANDARD's 16-bit path do. Deterministic:
// fixed summation order, no atomics on data.
#pragma once

#include <type_traits>

#include "mma_sync.cuh"
#include "persistent_common.cuh"
#include "persistent_fwd_v7.cuh"
#include "persistent_fwd_v9.cuh"
#include "persistent_v10_wgmma.cuh"
#include "persistent_xprod.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, int H_, int U_, int MT_, int NBS_>
struct FwdConfigV10 {
  static constexpr int G = CellTraits<CELL>::G;
  // MT_ = 0 (session 56 in the lab, session 57 in the library: the tile of 32 by default): the product on warpgroup
  // MMAs (wgmma, W as the register A operand of one m64 tile, the state as the shared-memory B operand in the
  // 128-byte-swizzle layout, per pass [k block of 64][rows][64]); LSTM's tiles (G U = 64 W rows). Its W fragments are the mma.sync
  // ones of MT = 1 (4 m-groups x 4 k slices: warpgroup = k slice).
  static constexpr bool WG = MT_ == 0;
  static_assert(!WG || (G == 4 && U_ == 16), "wgmma product: LSTM with 16 units per CTA (one m64 tile)");
  static_assert(G == 4 || G == 3, "v10 is built for LSTM and GRU");
  static_assert(H_ == 1024, "16-bit v10: H = 1024 (v9 takes H <= 512)");
  static constexpr int H = H_, U = U_, NBS = NBS_;
  static constexpr int C = H / U;     // CTAs per group
  static constexpr int RWS = G * U;   // W rows per CTA
  static_assert(RWS % 16 == 0, "whole m16 tiles");
  static constexpr int MTW = RWS / 16;  // m16 tiles per CTA
  static constexpr int MT = WG ? 1 : MT_;  // m16 tiles per warp
  static_assert(MTW % MT == 0, "whole m groups");
  static constexpr int MG = MTW / MT;   // m groups
  static constexpr int NW = 16, NT = NW * 32;
  static_assert(NW % MG == 0, "16 warps");
  static constexpr int KS = NW / MG;    // k split
  static constexpr int KT = H / 16, KTW = KT / KS;  // k16 tiles: all, per warp
  static constexpr int N = 2 * NBS, NTL = N / 8;  // state rows (hi / lo), n8 tiles
  static_assert(NBS % 4 == 0 && (NBS <= 16 || NBS == 32), "tiles of 4, 8, 16 or 32 sequences");
  static_assert(NBS * U <= NT, "one cell element per thread");
  // n8 tiles per pass of the product: the tile of 32 (8 n8 tiles) multiplies its rows in two passes of 16 sequences,
  // so that its accumulators are the tile of 16's (LSTM: 64 W registers + 32 accumulators).
  static constexpr int NTP = NTL > 4 ? 4 : NTL;
  // State buffers: two, except for the tile of 32, whose two would not fit beside part (2 x 64 rows x 2 KB); one is
  // enough (the design comment above persist_fwd_v10_kernel).
  static constexpr int HB = NBS == 32 ? 1 : 2;
  // Sequences the partial sums hold: the tile's, except GRU's tile of 32 (16 k slices: 114688 B for 32 sequences
  // would not fit beside the state), whose cell threads read their sums between the product's two passes (NBSP = 16).
  static constexpr int NBSP = (NBS == 32 && G == 3) ? 16 : NBS;
  static constexpr int LDH = WG ? H : H + 8;  // state row stride, halves (odd multiple of 16 bytes: conflict-free
                                              // ldmatrix); WG: unpadded, 64-wide k blocks (the kernel's wrs)
  static constexpr int RL = RWS + 8;  // partial-sum row stride, floats (conflict-free stores for RWS = 32, 48, 64)
  static constexpr int KPW = 1, GL = 1, JL = 1;  // the float32 product's, unused
  // Shared memory: hb [HB][N][LDH] TW | part [KS][NBSP][RL] float | bar (mbarriers: 2; WG 8); before the first step,
  // the W staging buffer [RWS][H + 8] TW at the same place (load_w_fragments, persistent_fwd_v9.cuh). The tiles of 32:
  // LSTM 132096 + 73728 + 16 B, GRU 132096 + 57344 + 16 (an H100 CTA may have 232448); LSTM's wgmma tile of 32
  // 131072 + 36864 + 64 + 1024 (the 1 KB alignment of hb).
  static constexpr size_t run_bytes() {
    // bar: 2 mbarriers, WG 8 (KSL in the kernel); WG: + aligning hb to 1 KB
    return size_t(HB) * N * LDH * 2 + size_t(KS) * NBSP * RL * 4 + (WG ? 64 + 1024 : 16);
  }
  static constexpr size_t stage_bytes() { return w_stage_bytes(RWS, H); }
  static constexpr size_t smem_bytes() { return run_bytes() > stage_bytes() ? run_bytes() : stage_bytes(); }
};

// float32 (session 15): the same group, exchange and cell, with an FFMA product (float32 is strict: no tensor cores).
// U = 8 units per CTA at H = 1024 (C = 128: a CTA's RWS = 8 G rows x 1024 k of float32 are 96-128 KB, held in
// registers only at this size). The U units are MG = U / 8 octets; warp w owns octet mg = w % MG over the k range
// [ks*KPW, (ks+1)*KPW) (ks = w / MG, KS = 16 / MG slices), each lane GL gate rows of one unit of its octet x 16 of
// those columns (GL = 4; GRU's tiles of 4-16 sequences 3). H = 1024 U = 8 and H = 512 U = 16 (session 17: 32 CTAs
// per group, so four tiles of one fit an H100) both give KPW = 64, 16 GL float registers, loaded once; H = 512 U = 8,
// KPW = 32, 8 GL registers. The state is NBS float rows (no hi / lo split); the exchange rows are [B][Hr] float (the
// bytes of the 16-bit [B][2][Hr]). Tiles of 1, 4, 8, 16 sequences: every tile row costs its FFMAs whether the
// sequence exists or not, so B = 1 gets a tile of its own.
template <int CELL, int H_, int U_, int NBS_, int NW_ = 16>
struct FwdConfigV10F32 {
  static constexpr int G = CellTraits<CELL>::G;
  static_assert(G == 4 || G == 3, "v10 is built for LSTM and GRU");
  static constexpr int H = H_, U = U_, NBS = NBS_;
  static constexpr int C = H / U;
  static constexpr int RWS = G * U;
  static constexpr int MG = U / 8;    // unit octets (the lanes of a warp: 4 groups x 8 units of one octet)
  // NW warps per CTA: 16, or 8 (session 41; the registrations in persistent_v10_f32.cu say which): KS halves, KPW
  // doubles, and the SM does half the shuffles, partial-sum stores and cell reads per step.
  static constexpr int NW = NW_, NT = NW * 32, KS = NW / MG;
  static_assert(NW == 16 || NW == 8, "16 or 8 warps");
  static_assert(U % 8 == 0 && NW % MG == 0, "whole octets of units over the warps");
  static constexpr int KPW = H / KS;  // k per warp
  static_assert(KPW % 16 == 0, "a lane group's float4 chunks of the warp's k");
  // Per lane: GL gate rows x JL float4 chunks. GRU's tiles of 4-16 rows take its 3 gates (GL = 3: the reduce-scatter
  // over 4 lane groups splits 3 x 4 values as evenly as 4 x 4); its tile of one keeps a zero fourth row (GL = 4:
  // the 4 lane groups end with one gate each). Until session 23 every GRU tile carried the zero row, a quarter of
  // its FMAs.
  static constexpr int GL = (G == 3 && NBS >= 4) ? 3 : 4, JL = KPW / 16;
  static_assert(NBS == 1 || NBS % 4 == 0, "row blocks of 1 or 4 (the reduce-scatter's flat index)");
  static constexpr int N = NBS;       // state rows
  static_assert(NBS * U <= NT, "one cell element per thread");
  static constexpr int LDH = H;       // state row stride, floats: unpadded (the lane groups' float4 reads are one
                                      // wavefront at any stride), so that at Hr == H the tile's rows are one block
  static constexpr int RL = 4 * U + 8;  // partial-sum row stride, floats (= 8 mod 32: the cell's reads of 4 sequences
                                        // x 8 units per warp are conflict-free)
  static constexpr int MT = 1, KTW = 1, NTL = 1, NTP = 1;  // the 16-bit product's, unused
  static constexpr int HB = 2, NBSP = NBS;                    // state buffers; sequences of part
  static constexpr bool WG = false;                           // the 16-bit wgmma product's
  // Shared memory: hb [2][N][LDH] float | part [KS][NBS][RL] float | bar (one mbarrier).
  static constexpr size_t smem_bytes() { return size_t(2) * N * LDH * 4 + size_t(KS) * NBS * RL * 4 + 16; }
};

// NW: warps per CTA, float32 only (the 16-bit configuration has 16).
template <int CELL, typename TW, int H, int U, int MT, int NBS, int NW = 16>
using V10Config = typename std::conditional<std::is_same<TW, float>::value, FwdConfigV10F32<CELL, H, U, NBS, NW>,
                                            FwdConfigV10<CELL, H, U, MT, NBS>>::type;

// Proxy fence: this thread's earlier generic-proxy accesses of global memory (and what they made visible to it: the
// acquired h of other CTAs) ordered before its later async-proxy ones (bulk copies). The writer runs it after its h
// stores, the reader (thread 0) after its acquire. The global form, not the unqualified fence.proxy.async (all state
// spaces): on an H100 the latter took ~600 cycles of the reader's critical path per step, the global one ~40 (phase
// profile, docs/performance.md, "PERSISTENT v10"); the writer's costs nothing measurable.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_nctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}
// `bytes` (a multiple of 16; both addresses 16-byte aligned) from global `src` into the shared memory at the same
// CTA-relative address as `dst` in every CTA of `mask` (cluster ranks), completing the bytes on each one's mbarrier
// at the address of `bar`.
__device__ __forceinline__ void bulk_multicast(void* dst, const void* src, unsigned bytes, uint64_t* bar,
                                               uint16_t mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], "
      "%4;\n" ::"r"(smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar)), "h"(mask)
      : "memory");
}

// XPK: the instantiation with the input projection's producers (p.xprod > 0 CTAs per direction after p.xcons
// consumers), float32 tile of one at H = 512 with 8 units per CTA only. Its own instantiation: as runtime branches in
// the plain tile of one, the same code made that kernel ~4% slower with the producers off (run 3, session 38).
template <int CELL, typename TW, int H_, int U_, int MT_, int NBS, bool LLV, bool TRAIN = false, bool XPK = false,
          int NW = 16>
__global__ void __launch_bounds__(V10Config<CELL, TW, H_, U_, MT_, NBS, NW>::NT, 1)
    persist_fwd_v10_kernel(const FwdParams<TW> p) {
  using Cfg = V10Config<CELL, TW, H_, U_, MT_, NBS, NW>;
  static_assert(NW == 16 || std::is_same<TW, float>::value, "16-bit v10: 16 warps");
  using S = Store<TW>;
  constexpr bool F32 = std::is_same<TW, float>::value;
  constexpr int SR = kStateSlots<TW>;  // state rows per sequence: hi and lo, or the float32 h
  constexpr int G = Cfg::G, H = Cfg::H, U = Cfg::U, MT = Cfg::MT, MG = Cfg::MG, KTW = Cfg::KTW, RWS = Cfg::RWS;
  constexpr int N = Cfg::N, NTL = Cfg::NTL, LDH = Cfg::LDH, RL = Cfg::RL, NT = Cfg::NT, KS = Cfg::KS;
  constexpr int KPW = Cfg::KPW;
  // One state buffer (the tile of 32) or two; bi(t): step t's
  constexpr int HBN = Cfg::HB;
  constexpr bool ONEBUF = HBN == 1;
  auto bi = [](int t) { return HBN == 2 ? (t & 1) : 0; };
  // GRU's tile of 32: part holds NBSP = 16 sequences; each pass of the product fills it, and the cell threads of
  // that pass's sequences read their gate sums (sgp) before the next pass overwrites it.
  constexpr int NBSP = Cfg::NBSP;
  constexpr bool HALFP = NBSP != NBS;
  constexpr bool WG = Cfg::WG;
  // State rows per pass of the 16-bit product (8 per n8 tile): the tile of 32's two passes take rows [0, 32) and
  // [32, 64). With p.pipe (session 56) the tile of 32 brings them in as two copies on two mbarriers, pass 0's first,
  // so that the first pass multiplies while the second pass's rows are still on their way (LSTM, B = 64, H200: the
  // step 13330-13800 -> 12440-12900 cycles).
  constexpr int kPassRows = 8 * Cfg::NTP;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  // The input projection's producers: CTAs past the consumers, in clusters of their own. Only the float32 tile of
  // one at H = 512 with 8 units per CTA (64 consumer CTAs: room beside them on an H100; at H = 1024, 128 CTAs leave
  // none).
  constexpr bool XP = XPK;
  static_assert(!XPK || (F32 && LLV && H_ == 512 && U_ == 8), "producers: the float32 tile of one at H = 512, U = 8");
  if constexpr (XP) {
    if (int(blockIdx.x) >= p.xcons) {
      const int d = blockIdx.y;
      xprod_producer<G, Cfg::NT>(reinterpret_cast<const float*>(p.xin), reinterpret_cast<const float*>(p.wih[d]),
                                 const_cast<float*>(p.xproj[d]), p.flags[d] + kXprodCounter, p.lengths, p.T, p.B,
                                 p.Hr, p.H, p.Il, int(blockIdx.x) - p.xcons, p.xprod, p.xchunk, d == 1,
                                 reinterpret_cast<float*>(smem_raw));
      return;
    }
  }
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int gr = lane >> 2, tc = lane & 3;  // mma fragment coordinates
  const int mg = warp % MG, ks = warp / MG;
  const int dir = blockIdx.y;
  const bool reverse = dir == 1;
  const int T = p.T, B = p.B, Hr = p.Hr, Hx = p.H, C = p.C;
  const int ct = blockIdx.x % C, group = blockIdx.x / C;
  // p.BT <= NBS; the plan makes every group's tile non-empty. b_lo: batches larger than the co-resident groups
  // take run as several launches (KernelV10Impl::launch), each over the sequences from b_lo.
  const int u0 = ct * U, b0 = p.b_lo + group * p.BT;
  const int nb = min(p.BT, B - b0);
  const uint32_t crank = cluster_ctarank(), ncl = cluster_nctarank();

  // WG: hb 1024-byte aligned (the swizzle atoms of the wgmma operand), run_bytes() has room for the shift
  unsigned char* const sbase = WG ? smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u) : smem_raw;
  TW* hb = reinterpret_cast<TW*>(sbase);                           // [HBN][N][LDH]; WG: per pass [H / 64][wrs][64]
  float* part = reinterpret_cast<float*>(hb + HBN * N * LDH);         // [KS][NBSP][RL]
  // One mbarrier, or (the tile of 32 with p.pipe) two: bar[q] completes on the state rows of the product's pass q;
  // or (the wgmma tile of 32, KSL) eight: bar[KS q + ks] on the rows of pass q in warpgroup ks's k slice.
  uint64_t* bar = reinterpret_cast<uint64_t*>(part + KS * NBSP * RL);
  // KSL, the wgmma tile of 32: each pass's state rows as KS copies, one per warpgroup's k slice (KBS k blocks of 64),
  // on 2 KS mbarriers; warpgroup ks starts a pass once its slice has landed. Always, whatever p.pipe says (as a
  // runtime switch it made the tile of 32 spill 16-36 bytes).
  constexpr bool KSL = WG && ONEBUF;
  constexpr int KBS = H / 64 / KS;
  const unsigned step_bytes = unsigned(SR * nb) * unsigned(Hr) * unsigned(sizeof(TW));  // the tile's state rows
  // WG: the state of a tile, in shared memory and in each exchange buffer alike, pass by pass (the tile of 32's two
  // passes of 32 rows, the smaller tiles' one of N): pass q's k blocks of wrs(q) rows each (the pass's rows of this
  // tile rounded up to whole 8-row swizzle atoms) at wpo(q), k block kb at kb * wrs(q) * 64, row r's 16-byte chunk c
  // at c ^ (r & 7). So each pass is one contiguous run in both places, one bulk copy per CTA (the [kb][rows of the
  // batch][64] exchange of session 56's diff took 16 per pass: ~1100 cycles of issue at B = 4-16, session 57, run 8).
  // In the exchange buffers tile i (p.cbase + group) sits at i * wts(): every tile has the room of BT sequences.
  // (Recomputed where used: kept live across the step, the offsets made the training kernel spill 72 bytes, not 44.)
  constexpr int WNPS = N > 32 ? 2 : 1, WNPR = N / WNPS;
  auto wrows = [](int rows, int q) { return (min(max(rows - q * WNPR, 0), WNPR) + 7) & ~7; };
  // (An array indexed by q: it sits in local memory, 8 bytes, read in the copy's issue and the h stores. Two values
  // kept live or recomputed from nb where used made ptxas spill 136-188 bytes in the tile of 32, not 0.)
  const int wrsa[2] = {wrows(SR * nb, 0), wrows(SR * nb, 1)};
  auto wrs = [&](int q) { return wrsa[q]; };
  auto wpo = [&](int q) { return q * wrsa[0] * H; };
  auto wts = [&]() { return size_t(wrows(SR * p.BT, 0) + wrows(SR * p.BT, 1)) * H; };

  // ---- W_hh, once. 16-bit: A fragments (v9's loader; the staging buffer sits where hb / part will be). float32:
  // lane (grp = lane / 8, ul = lane % 8) holds the rows i*U + ul (gate i of unit u0 + ul; GRU's i = 3, where
  // GL = 4, is zero) over the float4 chunks c = 4 j + grp (j < 4) of the warp's KPW columns: wf[i][j][e] =
  // W[gate i][u0 + ul][k], k = ks*KPW + 4c + e (at U = 16, units u0 + 8 mg + ul). Padded units and columns past Hr
  // read as 0.
  uint32_t wa[MT][KTW][4];
  float wf[Cfg::GL][Cfg::JL][4];
  if constexpr (F32) {
    const int grp = lane >> 3, uw = u0 + mg * 8 + (lane & 7);
#pragma unroll
    for (int i = 0; i < Cfg::GL; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::JL; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int k = ks * KPW + (4 * j + grp) * 4 + e;
          wf[i][j][e] = i < G && uw < Hr && k < Hr ? p.whh[dir][(size_t(i) * Hr + uw) * Hr + k] : 0.f;
        }
  } else {
    load_w_fragments<TW, H, U, RWS, MT, KTW, NT>(wa, reinterpret_cast<TW*>(smem_raw), p.whh[dir], Hr, u0, mg, ks, tid,
                                                 lane);
  }
  pdl_wait();  // what the prep kernel writes (biases, h0 / c0, counters, tagged words) is read from here on

  // ---- the state rows' layout in hb (and, 16-bit, in the exchange rows of hg). float32: [n][LDH = H]. 16-bit:
  // padded rows [n][H + 8] (ldmatrix's 8 rows of one 16-byte column hit 8 different bank groups), one bulk copy per
  // row; or with p.swz (Hr == H, no tagged words; session 25) dense rows [n][H] whose 16-byte chunk c sits at
  // c ^ (n & 7) (n: the row within the tile), conflict-free the same way, so that each CTA's share of the tile's rows
  // is one contiguous block in hg and in hb: one bulk copy per CTA and step instead of one per row (~50 cycles of
  // issue each: ~900 per step at a tile of 16 in clusters of 2). The writers (the cell) store into that layout.
  const bool swz = !F32 && p.swz != 0;
  const int ldh = swz ? H : LDH;
  // ---- initial state: hb[0] = h0 (split: rows 2s hi, 2s+1 lo), hb[1] = 0 (the rows past SR nb and columns past Hr
  // stay 0 for good)
  const float* h0 = p.h0[dir];
  if constexpr (WG) {
    // per buffer, pass q's region [wpo(q), wpo(q) + 16 wrs(q) 64): physical column pc of row r in k block kb holds
    // k = 64 kb + (pc ^ ((r & 7) << 3)) of state row n = q WNPR + r; the rest of the buffer is 0
    for (int i = tid; i < HBN * N * H; i += NT) {
      const int j = i % (N * H), q = WNPS == 2 && j >= wpo(1) ? 1 : 0, e = j - wpo(q);
      float v = 0.f;
      if (i < N * H && wrs(q) > 0 && e < wrs(q) * H && h0) {
        const int kb = e / (wrs(q) * 64), r = (e / 64) % wrs(q), pc = e % 64, n = q * WNPR + r, s = n / SR;
        const int k = kb * 64 + (pc ^ ((r & 7) << 3));
        if (s < nb && k < Hr) {
          const float h = h0[size_t(b0 + s) * Hr + k];
          v = SR == 2 && (n & 1) ? h - S::to_f(S::from_f(h)) : h;
        }
      }
      hb[i] = S::from_f(v);
    }
  } else
  for (int i = tid; i < HBN * N * LDH; i += NT) {
    const int n = (i / ldh) % N, kp = i % ldh, s = n / SR;
    const int k = swz ? kp ^ ((n & 7) << 3) : kp;  // the logical column stored at physical column kp
    float v = 0.f;
    if (i < N * ldh && s < nb && k < Hr && h0) {
      const float h = h0[size_t(b0 + s) * Hr + k];
      v = SR == 2 && (n & 1) ? h - S::to_f(S::from_f(h)) : h;
    }
    hb[i] = S::from_f(v);
  }

  // ---- this thread's cell element: sequence s = tid / U, unit u0 + tid % U ----
  const int s = tid / U, u = u0 + tid % U, b = b0 + s;
  const bool elem = tid < NBS * U && s < nb;  // a real sequence of the tile (padded units included)
  const bool live = elem && u < Hr;
  float hreg = 0.f, creg = 0.f, gbx[G], gbh[G];
  const int len = elem ? (p.lengths ? p.lengths[b] : T) : 0;
  if (live) {
    hreg = h0 ? h0[size_t(b) * Hr + u] : 0.f;
    creg = CELL == LSTM && p.c0[dir] ? p.c0[dir][size_t(b) * Hr + u] : 0.f;
  }
#pragma unroll
  for (int g = 0; g < G; ++g) {
    gbx[g] = live ? p.bx[dir][g * Hr + u] : 0.f;
    gbh[g] = live && CELL == GRU && g == 2 ? p.bh[dir][g * Hr + u] : 0.f;  // b_hh of GRU's n gate only
  }

  if (tid == 0) {
    mbar_init(bar, 1);
    if (ONEBUF) mbar_init(bar + 1, 1);
    if (WG)
      for (int i = 2; i < 8; ++i) mbar_init(bar + i, 1);
    fence_mbar_init_cluster();
  }
  fence_proxy_async_shared();  // hb's generic initialisation before the peers' bulk copies into it
  // With producers (XP): the first chunk of input projections counted by every producer (thread 0's acquire, the
  // cluster barrier below hands it to the CTA) before the cell threads load step 0's.
  if (XP && tid == 0)
    while (ld_acquire_gpu(p.flags[dir] + kXprodCounter) < unsigned(p.xprod)) {
    }
  // Every CTA of the cluster has initialised hb and its mbarrier before anyone multicasts into it.
  cluster_arrive_release();
  cluster_wait_acquire();

  TW* const hx = reinterpret_cast<TW*>(p.hg[dir]);  // [2][B][SR][Hr]: buffer j, row SR b + term (WG: [2][tiles]
                                                     // slots of wts(), laid out as hb)
  // one exchange buffer's elements (WG: a slot of wts per tile; make_layout and the plan leave room for them)
  const size_t hbuf = WG ? size_t((B + p.BT - 1) / p.BT) * wts() : size_t(B) * SR * Hr;
  unsigned* counter = p.flags[dir] + p.cbase + group;
  const uint16_t mask = uint16_t((1u << ncl) - 1u);
  // float32 at Hr == H: the tile's rows are contiguous in hg and in hb (LDH == H), so each CTA of the cluster copies
  // its share as one block, rows [blk_n0, blk_n0 + per) (one copy per row cost ~1100 cycles of issue at 16 rows per
  // CTA). Fixed for the launch.
  const bool block_copy = F32 ? LDH == Hr : swz;
  // Tiles of one sequence with p.ll (OPENRNN_PERSIST_V10_LL): h_t travels as tagged words {h bits, t + 1} in
  // llw[group][t & 1][Hr] (hg, zeroed before the launch), stored whole by the cell threads without a fence or a
  // counter; every thread of every CTA re-reads its two adjacent words of the previous step (one 16-byte load: Hr
  // is even, so src + k is 16-byte aligned) until both tags match, then writes them into hb. One L2 round trip and a
  // one-way store per step instead of the release (a round trip), the counter's poll and the bulk copy (one each).
  // Slot t & 1 is rewritten at step t + 2 only by a CTA that has read every CTA's h_{t+1}, which each wrote after
  // reading all of h_t: no reader still wants the old word.
  // Compiled only into the instantiations with LLV (float32: the tile of 1; 16-bit: a second tile of 4, which plans
  // only one sequence per group: with the extra code in it the tile of 4 ran B = 2-4 3-6% slower, and in float32
  // LSTM's tiles of 4 it made the training variant spill); both read from the parameter block where used (kept live
  // across the step, they made ptxas spill).
  auto ll_on = [&]() { return LLV && p.ll != 0 && p.BT == 1; };
  auto llw = [&]() { return reinterpret_cast<uint64_t*>(p.hg[dir]) + size_t(blockIdx.x / C) * 2 * Hr; };
  const int blk_per = (SR * nb + int(ncl) - 1) / int(ncl), blk_n0 = int(crank) * blk_per;
  const unsigned blk_bytes =
      unsigned(max(0, min(blk_n0 + blk_per, SR * nb) - blk_n0)) * unsigned(Hr) * unsigned(sizeof(TW));
  const float* xp = p.xproj[dir];
  // Phase profile (OPENRNN_PERSIST_PROF=1, persistent_kernels_v10.cuh): clock64 stamps of CTA (0, 0) thread 0 for
  // steps 8..23: 0 step start, 1 counter reached, 2 copies issued, 3 state landed, 4 product done, 5 cell + h
  // stores + arrival done, 6 outputs done.
  const bool prof = p.prof && blockIdx.x == 0 && blockIdx.y == 0 && tid == 0;
  auto stamp = [&](int t, int k) {
    if (prof && t >= 8 && t < 24) p.prof[(t - 8) * 8 + k] = clock64();
  };
  // The input projections of step tt of this thread's cell element (0 where not needed).
  auto load_x = [&](int tt, float(&dst)[G]) {
    const bool valid = live && tt < len;
    const int te = valid ? (reverse ? len - 1 - tt : tt) : 0;
    const float* row = xp + (size_t(te) * B + (valid ? b : 0)) * (G * Hx) + u;
#pragma unroll
    for (int g = 0; g < G; ++g) dst[g] = valid ? row[g * Hx] : 0.f;
  };
  // 1. the input projections of step t, in xv: loaded at the top of step t, or, XP with producers, one step ahead
  // into the same registers (after step t-1's last barrier, once the chunk that holds step t is counted: below).
  // Not into a second array copied at the top: that copy waited for the loads at the top of the step, before the
  // poll (run 2, session 38: LSTM float32 H = 512 B = 1 +0.17 µs/step).
  // XP, the last warp's lane 0 (warp 15, or 7 with 8 warps): the next step that starts a chunk, the counter value
  // that chunk needs (P per chunk), and the largest value acquired so far (chunk 0's P: thread 0 acquired it before
  // the loop). Kept as running values so that the step needs no integer division (session 39: a modulo and a
  // division here, placed before the cell in the code, changed how ptxas scheduled the cell's loads and cost 50-90
  // cycles per step).
  int xnext = p.xchunk;
  unsigned xneed = unsigned(p.xprod), xseen = unsigned(p.xprod);
  float xva[G];  // XP: carried over the steps
#pragma unroll
  for (int g = 0; g < G; ++g) xva[g] = 0.f;
  if (XP) load_x(0, xva);
  for (int t = 0; t < T; ++t) {
    stamp(t, 0);
    float xvl[G];  // without XP: this step's, as before session 38 (the same registers and code)
    float(&xv)[G] = XP ? xva : xvl;
    if constexpr (!XP) {
      const bool valid = live && t < len;
      const int te = valid ? (reverse ? len - 1 - t : t) : 0;
      const float* row = xp + (size_t(te) * B + (valid ? b : 0)) * (G * Hx) + u;
#pragma unroll
      for (int g = 0; g < G; ++g) xv[g] = valid ? row[g * Hx] : 0.f;
    }
    // 2. h_{t-1}: the group's arrivals, then this cluster's multicast of the tile's rows (phase t-1 of bar)
    if (t > 0 && ll_on()) {
      stamp(t, 1);
      stamp(t, 2);
      TW* const row = hb + bi(t) * N * ldh;  // ldh == LDH: no swizzle with the tagged words
      const uint64_t* src = llw() + size_t((t - 1) & 1) * Hr;
      // PL 16-byte polls per thread: 1, or 2 with 8 warps at H = 1024. With two, both loads are issued before either
      // is checked, and each round re-polls every pair that missed at once, without a sleep: checked one after the
      // other, a late second pair cost a second L2 round trip after the first's (the state's wait 650 -> 1200-1350
      // cycles), and with 8 warps 8-20% of the polls miss (sessions 41-43; docs/performance.md, "v10's float32 tile
      // of one at H = 1024 on 8 warps, with a joint re-poll (session 43)").
      constexpr int PL = (H + 2 * NT - 1) / (2 * NT);
      if constexpr (PL == 1) {
        for (int k = 2 * tid; k < Hr; k += 2 * NT) {
          uint64_t a, c;  // both words in one 16-byte request (as two 8-byte loads: twice the L2 sectors per poll)
          ld_relaxed_gpu_v2u64(src + k, a, c);
          while (unsigned(a >> 32) != unsigned(t) || unsigned(c >> 32) != unsigned(t)) {
            __nanosleep(20);
            ld_relaxed_gpu_v2u64(src + k, a, c);
          }
          const float h0v = __uint_as_float(unsigned(a)), h1v = __uint_as_float(unsigned(c));
          row[k] = S::from_f(h0v);
          row[k + 1] = S::from_f(h1v);
          if constexpr (SR == 2) {
            row[LDH + k] = S::from_f(h0v - S::to_f(S::from_f(h0v)));
            row[LDH + k + 1] = S::from_f(h1v - S::to_f(S::from_f(h1v)));
          }
        }
      } else {
        static_assert(SR == 1, "several polls per thread: float32 only");
        uint64_t a[PL], c[PL];
        unsigned ok = 0;  // bit i: pair i holds step t's tags (or lies past Hr)
#pragma unroll
        for (int i = 0; i < PL; ++i) {
          const int k = 2 * tid + 2 * NT * i;
          if (k < Hr)
            ld_relaxed_gpu_v2u64(src + k, a[i], c[i]);
          else
            ok |= 1u << i;
        }
        for (;;) {
#pragma unroll
          for (int i = 0; i < PL; ++i)
            if (!((ok >> i) & 1u) && unsigned(a[i] >> 32) == unsigned(t) && unsigned(c[i] >> 32) == unsigned(t))
              ok |= 1u << i;
          if (ok == (1u << PL) - 1u) break;
#pragma unroll
          for (int i = 0; i < PL; ++i)
            if (!((ok >> i) & 1u)) ld_relaxed_gpu_v2u64(src + 2 * tid + 2 * NT * i, a[i], c[i]);
        }
#pragma unroll
        for (int i = 0; i < PL; ++i) {
          const int k = 2 * tid + 2 * NT * i;
          if (k < Hr) {
            row[k] = S::from_f(__uint_as_float(unsigned(a[i])));
            row[k + 1] = S::from_f(__uint_as_float(unsigned(c[i])));
          }
        }
      }
      __syncthreads();
      stamp(t, 3);
    } else if (t > 0) {
      if (warp == 0) {
        if (lane == 0) {
          while (ld_acquire_gpu(counter) < unsigned(C) * unsigned(t)) {
          }
          stamp(t, 1);
          if (WG) {  // whole passes of padded rows (wrs): on bar[KS q + ks] (KSL, the tile of 32), else on bar[0]
            const unsigned b0r = unsigned(wrs(0)) * unsigned(H) * unsigned(sizeof(TW));
            const unsigned b1r = unsigned(wrs(1)) * unsigned(H) * unsigned(sizeof(TW));
            if (KSL) {  // k slice ks of pass q: KBS k blocks of wrs(q) rows (b0r / KS, b1r / KS; 0 completes at once)
              for (int i = 0; i < 2 * KS; ++i) mbar_arrive_expect_tx_cta(bar + i, (i < KS ? b0r : b1r) / KS);
            } else {  // the smaller tiles (two buffers, so never p.pipe): one pass on bar[0]
              mbar_arrive_expect_tx_cta(bar, b0r + b1r);
            }
          } else if (ONEBUF && p.pipe) {  // the rows of pass 0, then those of pass 1 (none where nb <= 16: completes
                                          // at once)
            const unsigned b0r = unsigned(min(SR * nb, kPassRows)) * unsigned(Hr) * unsigned(sizeof(TW));
            mbar_arrive_expect_tx_cta(bar, b0r);
            mbar_arrive_expect_tx_cta(bar + 1, step_bytes - b0r);
          } else {
            mbar_arrive_expect_tx_cta(bar, step_bytes);
          }
        }
        // The lanes of warp 0 issue the rows (n = crank + ncl * lane, ...): at 16-32 rows per CTA one thread took
        // ~100 cycles per copy. __syncwarp orders lane 0's acquire (and the arming) before every lane's fence and
        // copies.
        __syncwarp();
        if (ONEBUF && p.cbar) cluster_wait_relaxed();  // the peers' step t-1 products (the counter implied them)
        fence_proxy_async_global();  // the acquired h_{t-1} before the copies that read it (async proxy)
        const TW* src = hx + size_t((t - 1) & 1) * hbuf + size_t(SR * b0) * Hr;
        TW* dst = hb + bi(t) * N * ldh;
        if constexpr (WG) {
          // This CTA's share of each pass's region (16 wrs(q) rows of 128 bytes, split over the cluster by whole
          // rows) from the tile's slot in the exchange buffer: the smaller tiles one copy (lane 0); the tile of 32
          // (KSL) one per pass and k slice (KBS k blocks: 4 wrs(q) rows), lane c copying slice c % KS of pass c / KS
          // on bar[c], all in one instruction (lane 0 issuing the eight in a loop made ptxas spill 16-28 bytes).
          {
            const int nsl = KSL ? KS : 1, c = lane;
            if (c < WNPS * nsl) {
              const int q = c / nsl, sl = c % nsl, rows = (KSL ? KBS : H / 64) * wrs(q);  // the slice's 128-byte rows
              const int per = (rows + int(ncl) - 1) / int(ncl), n0 = sl * rows + int(crank) * per;
              const int cnt = min(per, rows - int(crank) * per);
              const size_t so =
                  size_t((t - 1) & 1) * hbuf + size_t(p.cbase + group) * wts() + wpo(q) + size_t(n0) * 64;
              if (cnt > 0)
                bulk_multicast(hb + bi(t) * N * H + wpo(q) + n0 * 64, hx + so, unsigned(cnt) * 128u,
                               bar + (KSL ? KS * q + sl : 0), mask);
            }
          }
        } else if (ONEBUF && p.pipe && block_copy) {
          // Pass by pass, in order: this CTA's share of pass q's rows [q P, q P + rows_q) completes on bar[q]
          if (lane == 0)
#pragma unroll
            for (int q = 0; q < 2; ++q) {
              const int rq = min(SR * nb - q * kPassRows, kPassRows), per = (rq + int(ncl) - 1) / int(ncl);
              const int n0 = q * kPassRows + int(crank) * per, cnt = min(per, rq - int(crank) * per);
              if (cnt > 0)
                bulk_multicast(dst + n0 * ldh, src + size_t(n0) * Hr,
                               unsigned(cnt) * unsigned(Hr) * unsigned(sizeof(TW)), bar + q, mask);
            }
        } else if (block_copy) {
          if (lane == 0 && blk_bytes > 0)
            bulk_multicast(dst + blk_n0 * ldh, src + size_t(blk_n0) * Hr, blk_bytes, bar, mask);
        } else {
          for (int n = int(crank) + int(ncl) * lane; n < SR * nb; n += 32 * int(ncl))
            bulk_multicast(dst + n * ldh, src + size_t(n) * Hr, unsigned(Hr) * unsigned(sizeof(TW)),
                           bar + (ONEBUF && p.pipe && n >= kPassRows ? 1 : 0), mask);
        }
        stamp(t, 2);
      }
      mbar_wait_parity(bar + (KSL ? ks : 0), (t - 1) & 1);  // KSL: this warpgroup's k slice of pass 0
      if (ONEBUF && p.cbar && warp != 0) cluster_wait_relaxed();  // before this thread's next arrival (complete)
      stamp(t, 3);
    }

    float sgp[G];  // HALFP: this thread's gate sums, read between the product's passes
    // 3. product. float32, QB state rows at a time (a runtime loop over the row blocks keeps ptxas from spilling):
    // v[q*GL + i] = the lane's row of gate i x its 16 columns of state row q0 + q (chunks in order); the 4 lane groups
    // of the warp read 4 adjacent float4 (one shared-memory wavefront feeds 16 FMAs per lane: the first version, one
    // row per lane, was bound by its float4 loads, 2.2x the FMA time). Then a reduce-scatter over the lane groups
    // (xor 16, xor 8; the sum of each pair is formed by one lane only: deterministic) leaves lane group grp the sums
    // of the flat indices grp*NV + y, y < NV = GL*QB/4, over the warp's KPW columns -> part[ks][q][i*U + 8*mg + ul]
    // (q = flat / GL, i = flat % GL).
    if constexpr (F32) {
      constexpr int QB = NBS < 4 ? NBS : 4, GL = Cfg::GL, V = GL * QB, NV = V / 4;  // NV: values kept per lane
      // Blocks of 4 rows: lane group grp takes the rows in the order q ^ grp, so that the values each lane keeps in
      // the reduce-scatter are always its first half (no selects; what lane group grp ends with is unchanged).
      constexpr bool PERM = QB == 4;
      const int grp = lane >> 3, ul = lane & 7;
      const float* hs = reinterpret_cast<const float*>(hb) + bi(t) * N * LDH + ks * KPW + grp * 4;
      int roff[QB];
#pragma unroll
      for (int q = 0; q < QB; ++q) roff[q] = (PERM ? q ^ grp : q) * LDH;
      constexpr int QU = KPW == 32 ? 2 : 1;  // H = 512: two row blocks per iteration (32 W registers leave room)
#pragma unroll QU
      for (int q0 = 0; q0 < NBS; q0 += QB) {
        // Tiles of 16 and 32: row blocks past the group's sequences are skipped (a tile of 16 with B = 9-12 multiplies
        // 12 rows, not 16); the rows they would fill belong to no cell element.
        if (NBS >= 16 && q0 >= nb) break;
        // The 8-unit tile of one with 8 warps at H = 1024 (JL = 8 chunks per lane): each gate's sum as CH = 2 chains
        // (even and odd chunks) added once at the end, 16 dependent FMAs instead of 32 (session 41, run 5: -5% of the
        // product phase; at JL = 4, H = 512, no change). GRU's 16-unit tile at H = 512 (also JL = 8) keeps one chain:
        // it was not timed with two.
        constexpr int CH = (NBS == 1 && Cfg::NW == 8 && Cfg::U == 8 && Cfg::JL >= 8) ? 2 : 1;
        float v[V], v2[CH == 2 ? V : 1];
#pragma unroll
        for (int x = 0; x < V; ++x) v[x] = 0.f;
        if constexpr (CH == 2) {
#pragma unroll
          for (int x = 0; x < V; ++x) v2[x] = 0.f;
        }
#pragma unroll
        for (int j = 0; j < Cfg::JL; ++j)
#pragma unroll
          for (int q = 0; q < QB; ++q) {
            const float4 hv = *reinterpret_cast<const float4*>(hs + q0 * LDH + roff[q] + 16 * j);
#pragma unroll
            for (int i = 0; i < Cfg::GL; ++i) {
              float& a = CH == 2 && (j & 1) ? v2[q * GL + i] : v[q * GL + i];
              a = fmaf(wf[i][j][0], hv.x, a);
              a = fmaf(wf[i][j][1], hv.y, a);
              a = fmaf(wf[i][j][2], hv.z, a);
              a = fmaf(wf[i][j][3], hv.w, a);
            }
          }
        if constexpr (CH == 2) {
#pragma unroll
          for (int x = 0; x < V; ++x) v[x] = __fadd_rn(v[x], v2[x]);
        }
#pragma unroll
        for (int x = 0; x < V / 2; ++x) {
          const bool up = !PERM && (lane & 16);
          const float send = up ? v[x] : v[x + V / 2], keep = up ? v[x + V / 2] : v[x];
          v[x] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, 16));
        }
#pragma unroll
        for (int x = 0; x < V / 4; ++x) {
          const bool up = !PERM && (lane & 8);
          const float send = up ? v[x] : v[x + V / 4], keep = up ? v[x + V / 4] : v[x];
          v[x] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, 8));
        }
#pragma unroll
        for (int y = 0; y < NV; ++y) {
          const int xf = grp * NV + y, q = xf / GL, i = xf % GL;
          if (i < G) part[(ks * NBSP + q0 + q) * RL + i * U + mg * 8 + ul] = v[y];
        }
      }
    } else if constexpr (WG) {
      // Warpgroup ks (= warp / 4) over its k slice [256 ks, 256 ks + 256) (16 k16 tiles, k blocks 4 ks .. 4 ks + 3),
      // warp mg of it rows [16 mg, 16 mg + 16) of the m64 tile. NPS passes of NPR state rows: the tile of 32 two of 32
      // (sequences 16 q .. 16 q + 15; pass 1, where nb > 16, waits for its rows with p.pipe), smaller tiles one of N.
      constexpr int NPS = N > 32 ? 2 : 1, NPR = N / NPS, R = NPR / 2;
      // Pass by pass: pass 0's MMAs are waited for and its sums stored before pass 1's are issued, so that one set of
      // R accumulators serves both passes. Holding both sets (pass 1 issued before the wait, as session 56's lab diff
      // did) spilled 92 / 136 bytes (inference / training) against 40 / 44 now, and the step was slower: H200, LSTM
      // B = 33-64 inference -12% to -16% against mma.sync with both sets, -19% to -21% with one (session 57, runs
      // 4-5). The same MMAs on the same operands either way.
      const TW* const hs = hb + bi(t) * N * H;
      // Not zeroed: each pass's first MMA overwrites them (scale-d 0). Zeroing them here put register writes after
      // the wgmma.fence (ptxas C7517: a wait injected after pass 0, which undid the overlap with pass 1's copy).
      float acc[R];
      v10_wg_fence();
#pragma unroll
      for (int q = 0; q < NPS; ++q) {
        if (q == 1) {
          if (nb <= 16) break;
          if (t > 0 && (KSL || p.pipe)) mbar_wait_parity(bar + (KSL ? KS + ks : 1), (t - 1) & 1);
          __syncwarp();
          v10_wg_fence();  // at a converged point (ptxas serialises the MMAs where it has to insert its own)
        }
#pragma unroll
        for (int kk = 0; kk < KTW; ++kk) {
          const int kt = ks * KTW + kk;
          const TW* bs = hs + wpo(q) + (kt >> 2) * wrs(q) * 64 + (kt & 3) * 16;
          v10_wg_mma<TW>(acc, wa[0][kk], v10_wg_desc(bs), kk);
        }
        v10_wg_commit();
        v10_wg_wait0();
#pragma unroll
        for (int i = 0; i < R; ++i) asm volatile("" : "+f"(acc[i])::"memory");
        // pass q's sums to part: each thread adds its hi and lo columns (state rows 2s, 2s + 1)
#pragma unroll
        for (int j = 0; j < NPR / 8; ++j) {
          const int row = mg * 16 + gr, sq = q * (NPR / 2) + j * 4 + tc;
          float* pp = part + (ks * NBSP + sq) * RL + row;
          pp[0] = __fadd_rn(acc[4 * j], acc[4 * j + 1]);
          pp[8] = __fadd_rn(acc[4 * j + 2], acc[4 * j + 3]);
        }
      }
    } else {
      // 16-bit: this warp's MT m-tiles x its KTW k tiles x all N state rows of hb[bi(t)] -> part[ks]. (v9's loop with
      // one accumulator set. Kept inline in both kernels: as one shared function it changed v9's register
      // allocation, LSTM H = 512 spilling 24-28 bytes instead of 16-24.) NTP n8 tiles (4 sequences each) per pass:
      // one pass for tiles of 4-16, two for the tile of 32 (the second skipped where the group has <= 16 sequences).
      constexpr int NTP = Cfg::NTP;
      static_assert(!HALFP || NTP * 4 == NBSP, "GRU's tile of 32: one pass of the product fills part");
      // Every row this lane addresses is lane % 8 mod 8, so its swizzle is one XOR for the launch.
      const TW* const hs = hb + bi(t) * N * ldh;
      const int xr = swz ? (lane & 7) : 0, hc = (lane >> 3) & 1;
#pragma unroll 1
      for (int n0 = 0; n0 < NTL; n0 += NTP) {
        if (NTL > NTP && n0 * 4 >= nb) break;
        // p.pipe: the second pass's rows land on bar[1], while the first pass multiplies
        if (ONEBUF && n0 > 0 && t > 0 && p.pipe) mbar_wait_parity(bar + 1, (t - 1) & 1);
        float acc[MT][NTP][4];
        mma::zero_acc(acc);
#pragma unroll
        for (int kk = 0; kk < KTW; ++kk) {
          const int col = ((2 * (ks * KTW + kk) + hc) ^ xr) * 8;  // the lane's 16-byte chunk of k tile ks*KTW + kk
          uint32_t bf[NTP][2];
#pragma unroll
          for (int j = 0; j + 1 < NTP; j += 2) {  // two n8 tiles per ldmatrix.x4 (as mma::warp_k16)
            uint32_t r[4];
            mma::ldsm_x4(r, hs + ((n0 + j) * 8 + (lane & 7) + (lane >> 4) * 8) * ldh + col);
            bf[j][0] = r[0];
            bf[j][1] = r[1];
            bf[j + 1][0] = r[2];
            bf[j + 1][1] = r[3];
          }
          if constexpr (NTP % 2 == 1)
            mma::ldsm_x2(bf[NTP - 1][0], bf[NTP - 1][1], hs + ((n0 + NTP - 1) * 8 + (lane & 7)) * ldh + col);
#pragma unroll
          for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NTP; ++j) mma::mma16816<TW>(acc[i][j], wa[i][kk], bf[j][0], bf[j][1]);
        }
        // hi + lo (columns 2s', 2s'+1 of one thread) into part[ks][s'][row]
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < NTP; ++j) {
            const int row = (mg * MT + i) * 16 + gr, sq = (HALFP ? j : n0 + j) * 4 + tc;
            float* pp = part + (ks * NBSP + sq) * RL + row;
            pp[0] = __fadd_rn(acc[i][j][0], acc[i][j][1]);
            pp[8] = __fadd_rn(acc[i][j][2], acc[i][j][3]);
          }
        if constexpr (HALFP) {
          // The pass's sequences s in [4 n0, 4 n0 + 16): their cell threads read the gate sums (the same fixed order
          // as the cell below), then part is free for the next pass.
          __syncthreads();
          if (live && t < len && (s >> 4) == (n0 >> 2)) {
#pragma unroll
            for (int g = 0; g < G; ++g) {
              const float* pp = part + (s & 15) * RL + g * U + (u - u0);
              float v = pp[0];
#pragma unroll
              for (int k = 1; k < KS; ++k) v = __fadd_rn(v, pp[k * NBSP * RL]);
              sgp[g] = v;
            }
          }
          if (n0 + NTP < NTL) __syncthreads();
        }
      }
    }
    __syncthreads();
    if (ONEBUF && p.cbar) cluster_arrive_relaxed();  // this CTA's reads of hb for step t are done
    stamp(t, 4);
    // 4. cell, h_t into hg[t&1]
    float act[G], sn = 0.f;
#pragma unroll
    for (int g = 0; g < G; ++g) act[g] = 0.f;
    if (live) {
      if (t < len) {
        float sg[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          if constexpr (HALFP) {
            sg[g] = sgp[g];
          } else {
            const float* pp = part + s * RL + g * U + (u - u0);
            float v = pp[0];
#pragma unroll
            for (int k = 1; k < KS; ++k) v = __fadd_rn(v, pp[k * NBSP * RL]);
            sg[g] = v;
          }
        }
        v7_cell<CELL>(xv, gbx, gbh, sg, p.clip, hreg, creg, act, sn);
      }
      if (t + 1 < T) {
        if (ll_on()) {
          st_relaxed_gpu_u64(llw() + size_t(t & 1) * Hr + u, (uint64_t(t + 1) << 32) | __float_as_uint(hreg));
        } else {
          TW* const rp = hx + size_t(t & 1) * hbuf + size_t(b) * SR * Hr;
          if constexpr (WG) {  // rows 2s (hi) and 2s + 1 (lo) of the tile, in pass q = 2s / WNPR (the layout above)
            const int n = SR * s, q = WNPS == 2 && n >= WNPR ? 1 : 0, r = n - q * WNPR, kb = u >> 6, c = u & 63;
            TW* const tp =
                hx + size_t(t & 1) * hbuf + size_t(p.cbase + group) * wts() + wpo(q) + size_t(kb) * wrs(q) * 64;
            const TW hi = S::from_f(hreg);
            tp[r * 64 + (c ^ ((r & 7) << 3))] = hi;
            tp[(r + 1) * 64 + (c ^ (((r + 1) & 7) << 3))] = S::from_f(hreg - S::to_f(hi));
          } else if (swz) {  // rows n = 2s (hi) and 2s + 1 (lo) of the tile, swizzled as hb (above)
            const TW hi = S::from_f(hreg);
            rp[u ^ (((2 * s) & 7) << 3)] = hi;
            rp[Hr + (u ^ (((2 * s + 1) & 7) << 3))] = S::from_f(hreg - S::to_f(hi));
          } else {
            store_state(rp + u, Hr, hreg);
          }
          fence_proxy_async_global();  // read next by other CTAs' bulk copies (async proxy)
        }
      }
    }
    // XP with producers: the chunk that holds step t + 1, when it starts one, acquired by the last warp (idle while
    // warp 0 runs the cell) before the barrier after the cell; the cell threads load step t + 1's projections after it.
    // The acquire returns the count of every chunk complete so far (the producers run ahead: all of them within the
    // first ~65 steps at T = 100, each chunk at least 5 µs before its first step; session 39, run 1), so that warp
    // acquires again only for a chunk past those. After the cell in the code, so that the cell's code is scheduled
    // as in the kernel without producers.
    if (XP && tid == NT - 32 && t + 1 == xnext) {
      xnext += p.xchunk;
      xneed += unsigned(p.xprod);
      if (t + 1 < T && xseen < xneed) {
        while ((xseen = ld_acquire_gpu(p.flags[dir] + kXprodCounter)) < xneed) {
        }
      }
    }
    // 5. publish h_t: one release arrival, cumulative over the CTA's stores through the barrier
    __syncthreads();
    if (tid == 0 && t + 1 < T && !ll_on()) red_release_gpu_add(counter, 1u);
    stamp(t, 5);
    if (XP && t + 1 < T) load_x(t + 1, xv);  // xv's last read was the cell's, before the barrier
    // 6. the step's outputs
    if (live) v7_outputs<CELL, TW, TRAIN>(p, dir, t, len, b, u, hreg, creg, act, sn);
    stamp(t, 6);
  }
  if (ONEBUF && p.cbar && T > 0) cluster_wait_relaxed();  // the last step's arrival, before the final barrier's
  cluster_arrive_release();
  cluster_wait_acquire();
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
