// PERSISTENT backward-data kernel with the step's sum reduce-scattered in the cluster, LSTM / GRU at H <= 512: one
// cluster launch runs the whole recurrence of backward_data for one layer, both directions when D = 2 (blockIdx.y),
// and leaves the same results in STANDARD's reserve as the gather kernel (persistent_bwd.cuh; its module comment has
// the equations, the processing order and the meaning of carried / dGrec). 16-bit storage multiplies on tensor
// cores, float32 with FFMA.
//
// Why a second cluster kernel. The gather kernel brings the whole dGrec (G*H float32 values per sequence) into every
// CTA each step: at H = 512 each CTA sends and receives G*H*4 = 8 KB per sequence and step over DSMEM, and the step
// grows with those bytes (H100, 16-bit LSTM H = 512 B = 16: ~5.9 µs per step of backward against the forward's ~2).
// Here the step's sum crosses the cluster the other way, as a reduce-scatter (the grid kernel's idea,
// persistent_bwd_grid.cuh, inside one cluster): each CTA multiplies its own gate rows' gradients by the transposed
// row slice it holds, for all H units, and sends each peer only the shares of that peer's units. That is U*4 bytes
// per sequence to each of the C peers, H*4 bytes in all (G times fewer than the gather), and the product's B operand
// is local, so it can be split into hi / lo 16-bit halves at no exchange cost.
//
// Decomposition. Cluster of C CTAs (C = 8 at H = 256, 16 at H = 512) per batch tile of nb <= NBS sequences. CTA `rank`
// owns the U = 32 units [u0, u0 + U) = [rank*U, ...), runs their cell backward (thread (s = warp, lane) owns sequence
// s, unit u0 + lane for the whole launch: carried and dc live in its registers), and holds the R = G*U rows
// {g*Hr + u0 + ul} of W_hh, transposed, as mma A fragments in registers: A[m][r] = W_hh[row r][m], m over all H
// units (MTT = H/16 m-tiles, MTW = MTT/16 per warp), r over the R rows (KT = R/16 k-tiles, all of them per warp). Per
// processing step k:
//  1. wait for the peers' shares of step k-1 (the CTA's mbarrier bar[k&1]; none at k = 0);
//  2. cell: dh_tot = carried + the C shares of (s, unit) summed in a fixed order; bwd_cell -> dG / dGh rows of the
//     reserve, carried, dc, and dGrec split into hi / lo 16-bit halves in dgl[k&1][2s + {0,1}][r] (shared memory);
//     16-bit tiles of 4 (and 8 at H = 256) leave the dG rows in dqs[k&1] instead, and an idle warp stores them to the
//     reserve during step k+1's cell phase (DEFER, BwdRsConfig);
//  3. __syncthreads; product: share[m][s] = sum_r A[m][r] (dGrec hi + lo)[s][r] with mma.sync m16n8k16 (the B
//     operand's n rows 2s, 2s+1 are hi and lo of sequence s and land in one thread's c0 / c1: summed in registers);
//  4. each warp's MTW m-tiles are 16*MTW units of one peer (q = warp*16*MTW / U): the warp stages its shares in
//     shared memory and pushes the rows of the nb real sequences with st.async (16 bytes per lane) into
//     recv[(k+1)&1][rank][s][...] of CTA q, completing on q's bar[(k+1)&1] (one phase = C*nb*U*4 bytes).
// float32 (FFMA): steps 3-4 per thread instead: thread tid owns unit m = tid % H over the rows of range tid / H
// (KS = 512 / H ranges: H = 512 all R rows, H = 256 two halves), KREG of its rows' weights in registers and the rest in
// shared memory ([row][thread]: conflict-free), dGrec read as broadcast float4 from dgl [2][NBS][R] float; its sums
// (two chains, fixed order) go to the peer owning m with one 4-byte st.async per sequence, as share number
// rank*KS + range: the receiver sums SRC = C*KS shares. The arithmetic is the gather kernel's (float32 FMA), in
// another fixed order.
// After step T-1 (k = T) one more wait and sum give dhx = carried + W_hh^T dGrec(last); dcx = dc.
// Why nothing is overwritten early: CTA P pushes into Q's recv[(k+1)&1] at step k, after its wait at step k, which
// needed Q's step-(k-1) push, which Q issued after the __syncthreads that follows its step-(k-1) cell phase (the last
// reads of recv[(k+1)&1] = recv[(k-1)&1]). dgl is double-buffered: dgl[k&1] is rewritten at step k+2, after every warp
// passed step k+1's __syncthreads, i.e. finished step k's product. dqs[k&1] likewise: written before step k's
// __syncthreads, read by the helper warp after it (in step k+1, or at k = T for the last step), rewritten after step
// k+1's. A final cluster barrier keeps the cluster alive until the last pushes have landed.
//
// Precision (16-bit): W_hh in its 16-bit storage (exact); dGrec as hi + lo (float16: 22 bits, bfloat16: 16 bits;
// STANDARD multiplies dG rounded to one 16-bit value); float32 accumulation; the C shares summed in a fixed order.
// Padded units (Hr < H): their rows and columns of W are 0, so they receive and send exact zeros. Deterministic: no
// atomics, fixed orders.
#pragma once

#include <type_traits>

#include "mma_sync.cuh"
#include "persistent_bwd.cuh"

namespace openrnn {
namespace cuda {
namespace persist {

template <int CELL, typename TW, int H_, int C_, int NBS_, int KREG_ = 0>
struct BwdRsConfig {
  static constexpr bool F32 = std::is_same<TW, float>::value;  // FFMA product; 16-bit: mma.sync
  static constexpr int G = CellTraits<CELL>::G;
  static_assert(G == 4 || G == 3, "LSTM and GRU (linear-before-reset)");
  static constexpr int H = H_, C = C_, NBS = NBS_;
  static constexpr int U = H / C;
  static_assert(U == 32, "32 units per CTA: one warp per sequence in the cell phase");
  static constexpr int NW = 16, NT = NW * 32;
  static constexpr int R = G * U;          // gate rows per CTA (LSTM 128, GRU 96)
  static_assert((F32 || NBS % 4 == 0) && NBS <= NW, "16-bit tiles of 4, 8 or 16 sequences (float32: any up to 16), one "
                "warp each in the cell phase");
  // 16-bit (mma): A = the transposed slice, all units x all rows; per warp MTW m-tiles x KT k-tiles.
  static constexpr int KT = R / 16;        // k16 tiles (all of them in every warp)
  static constexpr int MTT = H / 16;       // m16 tiles of units
  static constexpr int MTW = MTT / NW;     // per warp (H = 256: 1, 512: 2)
  static constexpr int UPW = 16 * MTW;     // units per warp's share
  static_assert(MTT % NW == 0 && U % UPW == 0, "a warp's units lie in one peer");
  static constexpr int N = 2 * NBS, NTL = N / 8 > 0 ? N / 8 : 1;  // split rows (hi / lo), n8 tiles (16-bit)
  static constexpr int AS = MTW * NTL >= 4 ? 1 : 2;  // accumulator sets where a warp has < 4 independent chains
  static constexpr int LDG = R + 8;  // dgl / staging row stride, halves (odd multiple of 16 bytes: ldmatrix)
  static constexpr int SLD = UPW + 8;  // stg row stride, floats (the 4 sequences of one store: distinct banks)
  static constexpr int F4W = NBS * UPW / 4;  // float4 of one warp's staged shares
  // The dG rows of the reserve stored by idle warps (session 51; 16-bit tiles of 4, and of 8 at H = 256): cell warp s
  // leaves its step's dG in shared memory (dqs, as rounded pairs), and warp NBS + (s ^ 1), which runs no cell and sits
  // on another SM sub-partition (warp % 4), stores them during the next step's cell phase, far from the push. H100,
  // session 51: stored by the cell warps before the barrier that releases the product, they took about 85-125 cycles
  // of a 1430-1970-cycle step (runs 2-3's phase profiles); stored by them after the push, they delayed the push's
  // delivery (run 3: training up to +3.6%); by the idle warps, training -0.4% to -4.6% (run 7; LSTM H = 512 B = 16
  // +1.6% / +2.3%). Not LSTM's tile of 8 at H = 512 (B = 29-56): it would spill 54 bytes (none now).
  static constexpr bool DEFER = !F32 && 2 * NBS <= NW && (NBS == 4 || H == 256);
  static constexpr int NQ = DGPairs<CELL>::NQ;
  // float32 (FFMA): thread tid owns unit m = tid % H over the row range ks = tid / H of KS = NT / H (a share per
  // range: the receiver sums SRC = C * KS of them), RPK rows, KREG of them in registers, RSM in shared memory.
  static constexpr int KS = F32 ? NT / H : 1, SRC = C * KS;
  static constexpr int RPK = R / KS, KREG = F32 ? KREG_ : 0, RSM = F32 ? RPK - KREG : 0;
  static_assert(!F32 || (NT % H == 0 && RPK % 4 == 0 && KREG % 4 == 0 && KREG <= RPK), "float32 row ranges");
  // Shared memory: bar [2] (16 B) | recv [2][SRC][NBS][U] float | then 16-bit: dgl [2][N][LDG] TW | stg [NW][NBS][SLD]
  // float | dqs [2][NBS][NQ][32] pairs (DEFER); float32: dgl [2][NBS][R] float | Wsm [RSM][NT] float. 16-bit: before
  // the first cluster barrier, the W staging buffer [KT*16][H + 8] TW sits at recv (load_wt_fragments).
  static constexpr size_t recv_floats() { return size_t(2) * SRC * NBS * U; }
  static constexpr size_t run_bytes() {
    return 16 + recv_floats() * 4 +
           (F32 ? size_t(2) * NBS * R * 4 + size_t(RSM) * NT * 4
                : size_t(2) * N * LDG * 2 + size_t(NW) * NBS * SLD * 4 +
                      (DEFER ? size_t(2) * NBS * NQ * 32 * 4 : 0));
  }
  static constexpr size_t stage_bytes() { return F32 ? 0 : 16 + w_stage_bytes(KT * 16, H); }
  static constexpr size_t smem_bytes() { return run_bytes() > stage_bytes() ? run_bytes() : stage_bytes(); }
};

template <int CELL, typename TW, int H_, int C_, int NBS, int KREG_ = 0>
__global__ void __launch_bounds__(512, 1) persist_bwd_rs_kernel(const BwdParams<TW> p) {
  using Cfg = BwdRsConfig<CELL, TW, H_, C_, NBS, KREG_>;
  using S = Store<TW>;
  constexpr int G = Cfg::G, H = Cfg::H, C = Cfg::C, U = Cfg::U, R = Cfg::R, KT = Cfg::KT, MTW = Cfg::MTW,
                UPW = Cfg::UPW, SLD = Cfg::SLD, N = Cfg::N, NTL = Cfg::NTL, AS = Cfg::AS, LDG = Cfg::LDG, NT = Cfg::NT,
                F4W = Cfg::F4W, SRC = Cfg::SRC, RPK = Cfg::RPK, KREG = Cfg::KREG, RSM = Cfg::RSM;
  constexpr bool F32 = Cfg::F32;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int gr = lane >> 2, tc = lane & 3;  // mma fragment coordinates
  const int dir = blockIdx.y;
  const int T = p.T, B = p.B, Hr = p.Hr;
  const int rank = blockIdx.x % C, group = blockIdx.x / C;
  const int b0 = group * p.BT;  // p.BT <= NBS: the plan spreads B over every cluster that runs at once
  const int nb = min(p.BT, B - b0);
  const int u0 = rank * U;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem_raw);  // [2]
  float* recv = reinterpret_cast<float*>(smem_raw + 16);    // [2][SRC][NBS][U]
  TW* dgl = reinterpret_cast<TW*>(recv + Cfg::recv_floats());  // 16-bit: [2][N][LDG]
  float* stg = reinterpret_cast<float*>(dgl + 2 * N * LDG);     // 16-bit: [NW][NBS][SLD]
  float* dgf = recv + Cfg::recv_floats();                       // float32: [2][NBS][R]
  float* Wsm = dgf + 2 * NBS * R;                               // float32: [RSM][NT]
  using Pair = typename S::Pair;
  constexpr bool DEFER = Cfg::DEFER;
  constexpr int NQ = Cfg::NQ;
  Pair* dqs = reinterpret_cast<Pair*>(stg + Cfg::NW * NBS * SLD);  // 16-bit, DEFER: [2][NBS][NQ][32]

  // ---- the weights, once. 16-bit: A fragments A[m][r] = W_hh[(r / U) * Hr + u0 + r % U][m], m-tiles warp*MTW + i,
  // every k-tile (load_wt_fragments, persistent_bwd.cuh). float32: the rows of this thread's range for its unit.
  uint32_t wa[F32 ? 1 : MTW][F32 ? 1 : KT][4];
  float wr[F32 && KREG > 0 ? KREG : 1];
  const int fm = tid % H, fks = tid / H;  // float32: this thread's unit and row range
  if constexpr (F32) {
    // rows fks*RPK + j of unit fm: KREG in registers, the rest in Wsm[j - KREG][tid] (consecutive threads read
    // consecutive units of one canonical row: coalesced; padded rows / units read as 0)
    const float* W = reinterpret_cast<const float*>(p.whh[dir]);
    auto ld = [&](int r) -> float {
      const int uu = u0 + r % U;
      return uu < Hr && fm < Hr ? W[size_t((r / U) * Hr + uu) * Hr + fm] : 0.f;
    };
#pragma unroll
    for (int j = 0; j < KREG; ++j) wr[j] = ld(fks * RPK + j);
    for (int j = 0; j < RSM; ++j) Wsm[j * NT + tid] = ld(fks * RPK + KREG + j);
  } else {
    // staged at recv (becomes recv / dgl / stg afterwards)
    load_wt_fragments<TW, H, U, R, KT, MTW, NT>(wa, reinterpret_cast<TW*>(smem_raw + 16), p.whh[dir], Hr, u0, warp,
                                                tid, lane);
  }

  // ---- cell role: sequence s = warp of the tile, unit gu = u0 + lane; carried = dhy, dc = dcy ----
  const int s = warp, gu = u0 + lane;
  const bool cell_thread = s < nb, p_live = gu < Hr;
  const int len = cell_thread ? (p.lengths ? p.lengths[b0 + s] : T) : 0;
  float carried = 0.f, dc = 0.f;
  if (cell_thread && p_live) {
    const size_t g = size_t(b0 + s) * Hr + gu;
    if (p.dhy[dir]) carried = S::to_f(p.dhy[dir][g]);
    if (CELL == LSTM && p.dcy[dir]) dc = S::to_f(p.dcy[dir][g]);
  }
  {
    const TW zero = S::from_f(0.f);
    if constexpr (F32) {
      for (int i = tid; i < 2 * NBS * R; i += NT) dgf[i] = 0.f;
    } else {
      for (int i = tid; i < 2 * N * LDG; i += NT) dgl[i] = zero;  // rows of sequences past nb stay 0
    }
  }
  using In = BwdIn<G, TW>;
  auto load_in = [&](int k) -> In {
    return bwd_load_in<CELL, TW>(p, dir, k, b0 + s, gu, len, cell_thread && p_live);
  };
  In nx = load_in(0);

  // One phase of bar[j] = the shares pushed into this CTA at one step (SRC shares x nb sequences x U units);
  // pushes happen at steps 0 .. T-1 into bar[(k+1)&1].
  const unsigned step_bytes = unsigned(SRC) * unsigned(nb) * U * 4u;
  if (tid == 0) {
    mbar_pair_init(bar);
    fence_mbar_init_cluster();
    mbar_pair_arm(bar, 1, T, [&](int) { return step_bytes; });
  }
  // Every CTA has initialised dgl and its mbarriers (and left the staging buffer) before anyone pushes into it.
  cluster_arrive_release();
  cluster_wait_acquire();

  const int q = (warp * UPW) / U, qoff = (warp * UPW) % U;  // the peer this warp's shares go to, its unit offset
  // DEFER: warp NBS + (hs ^ 1) stores sequence hs's dG rows one step late (hs < nb; its lane's unit gu); the xor keeps
  // it off cell warp hs's SM sub-partition (warp % 4)
  const int hs = (warp - NBS) ^ 1;
  const bool helper = DEFER && warp >= NBS && warp < 2 * NBS && hs < nb && p_live;
  for (int k = 0; k <= T; ++k) {
    const In in = bwd_in_ready<CELL, TW>(nx);
    if (k < T) nx = load_in(k + 1);
    // ---- 1-2. the peers' shares of step k-1, then the cell ----
    float dh_tot = carried;
    if (k > 0) {
      mbar_wait_parity(&bar[k & 1], ((k - 1) >> 1) & 1);
      if (tid == 0 && k + 1 <= T - 1) mbar_arrive_expect_tx_cta(&bar[k & 1], step_bytes);
      if (cell_thread) {
        const float* rv = recv + size_t(k & 1) * SRC * NBS * U + s * U + lane;
        float a0 = 0.f, a1 = 0.f;
#pragma unroll
        for (int c = 0; c < SRC; c += 2) {
          a0 += rv[c * NBS * U];
          a1 += rv[(c + 1) * NBS * U];
        }
        dh_tot = carried + (a0 + a1);
      }
    }
    // DEFER: step k-1's dG rows (processing step k-1 is time T-k forward, k-1 reverse; dqs[(k-1)&1] was written
    // before step k-1's __syncthreads and is next written after step k's)
    if (DEFER && helper && k > 0) {
      const int tp = dir == 0 ? T - k : k - 1;
      const Pair* src = dqs + (((k - 1) & 1) * NBS + hs) * NQ * 32 + lane;
#pragma unroll
      for (int i = 0; i < NQ; ++i) bwd_store_dG_pair<CELL, TW>(p, dir, tp, b0 + hs, gu, i, src[i * 32]);
    }
    if (k == T) {  // final pass: the gradients of hx and cx
      if (cell_thread && p_live) {
        const size_t g = size_t(b0 + s) * Hr + gu;
        if (p.dhx[dir]) p.dhx[dir][g] = S::from_f(dh_tot);
        if (CELL == LSTM && p.dcx[dir]) p.dcx[dir][g] = S::from_f(dc);
      }
      break;
    }
    TW* dl = dgl + (k & 1) * N * LDG;
    if (cell_thread) {
      float dgx[G], dgr[G], carry, dc_new;  // input-side and recurrent-side pre-activation gradients
      bwd_cell<CELL, TW>(in, dh_tot, dc, p.clip, p_live, dgx, dgr, carry, dc_new);
      carried = carry;
      dc = dc_new;
      if constexpr (DEFER) {
        Pair* dst = dqs + ((k & 1) * NBS + s) * NQ * 32 + lane;
#pragma unroll
        for (int i = 0; i < NQ; ++i) dst[i * 32] = bwd_dG_pair<CELL, TW>(i, dgx, dgr);
      } else {
        if (p_live) bwd_store_dG<CELL, TW>(p, dir, in.t, b0 + s, gu, dgx, dgr);
      }
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if constexpr (F32) {
          dgf[((k & 1) * NBS + s) * R + g * U + lane] = dgr[g];
        } else {
          const TW hi = S::from_f(dgr[g]);
          dl[(2 * s) * LDG + g * U + lane] = hi;
          dl[(2 * s + 1) * LDG + g * U + lane] = S::from_f(dgr[g] - S::to_f(hi));
        }
      }
    }
    __syncthreads();

    if constexpr (F32) {
      // ---- 3-4 (float32). share[fm][s] over this thread's rows (two chains, fixed order), pushed to the peer that
      // owns unit fm as share fks of source rank (rank * KS + fks) ----
      const float* dk = dgf + (k & 1) * NBS * R + fks * RPK;
      float a0[NBS], a1[NBS];
#pragma unroll
      for (int b = 0; b < NBS; ++b) a0[b] = a1[b] = 0.f;
#pragma unroll
      for (int j = 0; j < RPK; j += 4) {
        float w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          w[i] = j + i < KREG ? wr[j + i < KREG ? j + i : 0] : Wsm[(j + i - KREG) * NT + tid];
#pragma unroll
        for (int b = 0; b < NBS; ++b) {
          const float4 d = *reinterpret_cast<const float4*>(dk + b * R + j);
          a0[b] = fmaf(w[0], d.x, a0[b]);
          a1[b] = fmaf(w[1], d.y, a1[b]);
          a0[b] = fmaf(w[2], d.z, a0[b]);
          a1[b] = fmaf(w[3], d.w, a1[b]);
        }
      }
      const uint32_t fq = uint32_t(fm / U);
      const uint32_t qbar = map_dsmem(&bar[(k + 1) & 1], fq);
      float* dst = recv + (size_t((k + 1) & 1) * SRC + rank * Cfg::KS + fks) * NBS * U + fm % U;
#pragma unroll
      for (int b = 0; b < NBS; ++b)
        if (b < nb) st_async_f32(map_dsmem(dst + b * U, fq), a0[b] + a1[b], qbar);
    } else {
      // ---- 3. product: this warp's MTW m-tiles (units) x all KT k-tiles (rows) x all N split rows (v9's loop,
      // persistent_fwd_v9.cuh, written out per kernel as v9 / v10 do: as one shared function it changed v9's register
      // allocation, session 14) ----
      float acc[AS][MTW][NTL][4];
#pragma unroll
      for (int a = 0; a < AS; ++a) mma::zero_acc(acc[a]);
#pragma unroll
      for (int kt = 0; kt < KT; ++kt) {
        const TW* bs = dl + kt * 16;
        uint32_t bf[NTL][2];
#pragma unroll
        for (int j = 0; j + 1 < NTL; j += 2) {  // two n8 tiles per ldmatrix.x4 (as mma::warp_k16)
          uint32_t r4[4];
          mma::ldsm_x4(r4, bs + (j * 8 + (lane & 7) + (lane >> 4) * 8) * LDG + ((lane >> 3) & 1) * 8);
          bf[j][0] = r4[0];
          bf[j][1] = r4[1];
          bf[j + 1][0] = r4[2];
          bf[j + 1][1] = r4[3];
        }
        if constexpr (NTL % 2 == 1)
          mma::ldsm_x2(bf[NTL - 1][0], bf[NTL - 1][1], bs + ((NTL - 1) * 8 + (lane & 7)) * LDG + ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int i = 0; i < MTW; ++i)
#pragma unroll
          for (int j = 0; j < NTL; ++j) mma::mma16816<TW>(acc[kt % AS][i][j], wa[i][kt], bf[j][0], bf[j][1]);
      }

      // ---- 4. hi + lo (columns 2s', 2s'+1 of one thread) and the accumulator sets -> stg[warp][s'][unit], then the
      // rows of the nb real sequences to peer q ----
      float* sw = stg + warp * NBS * SLD;
#pragma unroll
      for (int i = 0; i < MTW; ++i)
#pragma unroll
        for (int j = 0; j < NTL; ++j) {
          float v[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            v[e] = acc[0][i][j][e];
#pragma unroll
            for (int a = 1; a < AS; ++a) v[e] = __fadd_rn(v[e], acc[a][i][j][e]);
          }
          float* pp = sw + (j * 4 + tc) * SLD + i * 16 + gr;
          pp[0] = __fadd_rn(v[0], v[1]);
          pp[8] = __fadd_rn(v[2], v[3]);
        }
      __syncwarp();
      {
        float* dst = recv + (size_t((k + 1) & 1) * SRC + rank) * NBS * U + qoff;
        const uint32_t qbar = map_dsmem(&bar[(k + 1) & 1], uint32_t(q));
#pragma unroll
        for (int r = 0; r < (F4W + 31) / 32; ++r) {
          const int f = lane + 32 * r;
          const int sq = f / (UPW / 4), c4 = f % (UPW / 4);
          if (f < F4W && sq < nb) {
            const uint4 word = *reinterpret_cast<const uint4*>(sw + sq * SLD + 4 * c4);
            st_async_v4(map_dsmem(dst + sq * U + 4 * c4, uint32_t(q)), word, qbar);
          }
        }
      }
    }
  }
  // Every push into a CTA was waited for; keep the cluster alive until all CTAs are done.
  cluster_arrive_release();
  cluster_wait_acquire();
}

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
