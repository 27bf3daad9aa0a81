// Host emulation of the index arithmetic of dev/lab/v10_wg_tile_slots.diff (v10's wgmma tiles with each tile's state
// as one slot per exchange buffer): per tile and buffer, pass q's region at wpo(q) = q * wrs[0] * H, in it k block kb
// of wrs[q] rows (the pass's rows of the tile rounded up to whole 8-row swizzle atoms) at kb * wrs[q] * 64, chunk c of
// row r at c ^ (r & 7); the same layout in shared memory. Emulated, with the kernel's own expressions: the cell
// threads' writes of h_t into the slot of tile p.cbase + group, every cluster peer's one copy per pass (multicast:
// all land in each CTA's hb), the step-0 initialisation of hb, the wgmma B operand's reads (128-byte swizzle, 32
// bytes per k16 slice, N / passes rows from each k block's start), the plan's check that the slots fit in the room
// make_layout gives hg, and the expect-tx byte counts. Every (state row, k) the product reads for a live sequence
// must be the value the writer meant; the reads of dead rows must stay inside hb. Values are floats standing for
// halves: only the positions are under test.
// Build and run (host only): make v10_wg_slot_check in the build folder, or g++ -O2 -std=c++17 this file. Exits
// with status 1 on any mismatch (~50 s). OPENRNN_SLOT_CHECK_BREAK=1 / 2 / 3 / 4 plants an error (the writer's swizzle
// keyed by the sequence instead of the pass row; a copy ignoring wpo; the reads ignoring wrs; the two exchange
// buffers one tile apart), which it must report.
// Session 58 (dev/lab/v10_wg_tile32_kslices.diff, landed in the library): the tile of 32 brings each pass in as KS = 4 copies per CTA, one
// per warpgroup's k slice (4 k blocks), on mbarrier KS q + slice (KSL; p.pipe no longer matters there). The check
// records which mbarrier delivered every element of hb and requires each live read of warpgroup ks (k16 tiles
// 16 ks .. 16 ks + 15) in pass q to come from mbarrier KS q + ks, and each mbarrier's expect-tx to equal what lands
// on it. OPENRNN_SLOT_CHECK_BREAK=5 / 6 plant errors (the slices' copies all from the pass's start; each slice's
// copy completing on the next slice's mbarrier).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
int slot_rows(int rows, int pass_rows) {  // persist::v10_wg_slot_rows (persistent_plan.h)
  int n = 0;
  for (int q = 0; q * pass_rows < rows; ++q) {
    const int r = rows - q * pass_rows;
    n += ((r < pass_rows ? r : pass_rows) + 7) & ~7;
  }
  return n;
}
}  // namespace

int main() {
  const char* e = std::getenv("OPENRNN_SLOT_CHECK_BREAK");
  const int brk = e ? std::atoi(e) : 0;
  const int H = 1024, SR = 2, kExtraB = 32;
  long bad = 0, checked = 0, refused = 0;
  for (int NBS : {4, 8, 16, 32})
    for (int B = 1; B <= 128; ++B)
      for (int groups_fit : {1, 2, 4, 8, 33, 64})
        for (int ncl : {2, 4, 8})
          for (int pipe : {0, 1}) {
            const int N = 2 * NBS, HBN = NBS == 32 ? 1 : 2;
            const int WNPS = N > 32 ? 2 : 1, WNPR = N / WNPS;
            if (pipe && NBS != 32) continue;  // p.pipe: the tile of 32 only
            const int KS = 4;
            const bool ksl = NBS == 32;  // KSL = WG && ONEBUF: the tile of 32, whatever p.pipe says
            // the plan: one wave when the co-resident groups take B in tiles of at most NBS, else full tiles in
            // waves of groups_fit (the chunked launches, NBS >= 16)
            int BT, groups, waves = 1;
            if ((B + groups_fit - 1) / groups_fit <= NBS) {
              BT = (B + groups_fit - 1) / groups_fit;
              groups = (B + BT - 1) / BT;
            } else {
              if (NBS < 16) continue;
              const int tiles = (B + NBS - 1) / NBS;
              waves = (tiles + groups_fit - 1) / groups_fit;
              BT = NBS;
              groups = (tiles + waves - 1) / waves;
            }
            const long tiles = (B + BT - 1) / BT;
            // KernelV10Impl::plan's check, in bytes per unit of H: 2 buffers x tiles x slot rows x 2 bytes against
            // make_layout's 2 x (B + kV10WgExtraB) x 8
            const long need = 2 * tiles * slot_rows(2 * BT, WNPR) * 2, room = 2L * (B + kExtraB) * 8;
            if (need > room) {
              ++refused;
              continue;
            }
            auto wrows = [&](int rows, int q) { return (std::min(std::max(rows - q * WNPR, 0), WNPR) + 7) & ~7; };
            const size_t wts = size_t(wrows(SR * BT, 0) + wrows(SR * BT, 1)) * H;
            const size_t hbuf = brk == 4 ? wts : size_t(tiles) * wts;  // 4: the buffers overlap past one tile
            if (wts != size_t(slot_rows(2 * BT, WNPR)) * H) ++bad;  // the plan's and the kernel's slot agree
            // the allocation (elements of 2 bytes): 2 x (B + kExtraB) x Hc x 8 bytes
            const size_t alloc = size_t(2) * (B + kExtraB) * H * 8 / 2;
            auto hval = [&](int b, int u, int lo) { return float(b * 4096 + u * 2 + lo) + (lo ? 0.25f : 0.f); };
            // one allocation for both exchange buffers (both are live at once in the kernel): every writer of both
            // first, then every reader, so that an overlap of the buffers or of two tiles' slots shows
            std::vector<float> hx(alloc, -1.f);
            for (int buf = 0; buf < 2; ++buf) {
              // the writers: every tile of every wave, sequence s of the tile, unit u; buffer buf holds h_t, t % 2 = buf
              for (int w = 0; w < waves; ++w)
                for (int group = 0; group < groups; ++group) {
                  const int cbase = w * groups, b_lo = w * groups * BT, b0 = b_lo + group * BT;
                  const int nb = std::min(BT, B - b0);
                  if (nb <= 0) continue;
                  const int wrs[2] = {wrows(SR * nb, 0), wrows(SR * nb, 1)};
                  auto wpo = [&](int q) { return q * wrs[0] * H; };
                  for (int s = 0; s < nb; ++s)
                    for (int u = 0; u < H; ++u) {
                      const int n = SR * s, q = WNPS == 2 && n >= WNPR ? 1 : 0, r = n - q * WNPR, kb = u >> 6,
                                c = u & 63;
                      const size_t tp = size_t(buf) * hbuf + size_t(cbase + group) * wts + wpo(q) +
                                        size_t(kb) * wrs[q] * 64;
                      const int key0 = brk == 1 ? (s & 7) : (r & 7), key1 = brk == 1 ? (s & 7) : ((r + 1) & 7);
                      const size_t a0 = tp + r * 64 + (c ^ (key0 << 3)), a1 = tp + (r + 1) * 64 + (c ^ (key1 << 3));
                      if (a1 >= alloc) {
                        ++bad;
                        continue;
                      }
                      hx[a0] = hval(b0 + s, u, 0) + 0.5f * buf;
                      hx[a1] = hval(b0 + s, u, 1) + 0.5f * buf;
                    }
                }
            }
            for (int buf = 0; buf < 2; ++buf) {
              // the readers: each tile, its cluster's copies into one CTA's hb, the initialisation, the MMAs' reads
              for (int w = 0; w < waves; ++w)
                for (int group = 0; group < groups; ++group) {
                  const int cbase = w * groups, b0 = w * groups * BT + group * BT, nb = std::min(BT, B - b0);
                  if (nb <= 0) continue;
                  const int wrs[2] = {wrows(SR * nb, 0), wrows(SR * nb, 1)};
                  auto wpo = [&](int q) { return q * wrs[0] * H; };
                  // step t copies exchange buffer (t - 1) & 1 = buf into hb[bi(t)], bi(t) = t & 1 with two buffers
                  const int bi = HBN == 2 ? 1 - buf : 0;
                  std::vector<float> hb(size_t(HBN) * N * H, -2.f), hb0(size_t(HBN) * N * H, -3.f);
                  // expect-tx: the bytes that land per mbarrier against the copies' sum; via: which mbarrier
                  // delivered each element of hb (-1: none, the initial zeros)
                  long landed[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                  std::vector<signed char> via(hb.size(), -1);
                  const int nsl = ksl ? KS : 1;
                  for (int crank = 0; crank < ncl; ++crank)
                    for (int c = 0; c < WNPS * nsl; ++c) {  // lane c of warp 0 in each CTA (the kernel's expressions)
                      const int q = c / nsl, sl = c % nsl, rows = (H / 64 / nsl) * wrs[q];
                      const int per = (rows + ncl - 1) / ncl, n0 = (brk == 5 ? 0 : sl * rows) + crank * per;
                      const int cnt = std::min(per, rows - crank * per);
                      const size_t srcq = size_t(buf) * hbuf + size_t(cbase + group) * wts + (brk == 2 ? 0 : wpo(q));
                      const size_t dstq = size_t(bi) * N * H + wpo(q);
                      if (cnt <= 0) continue;
                      const int bar = ksl ? KS * q + (brk == 6 ? (sl + 1) % KS : sl) : pipe ? q : 0;
                      landed[bar] += long(cnt) * 128;
                      for (int i = 0; i < cnt * 64; ++i) {
                        if (srcq + size_t(n0) * 64 + i >= alloc || dstq + size_t(n0) * 64 + i >= hb.size()) {
                          ++bad;
                          break;
                        }
                        hb[dstq + size_t(n0) * 64 + i] = hx[srcq + size_t(n0) * 64 + i];
                        via[dstq + size_t(n0) * 64 + i] = static_cast<signed char>(bar);
                      }
                    }
                  const long b0r = long(wrs[0]) * H * 2, b1r = long(wrs[1]) * H * 2;
                  if (ksl) {
                    for (int i = 0; i < 2 * KS; ++i)
                      if (landed[i] != (i < KS ? b0r : b1r) / KS) ++bad;
                  } else if (pipe ? (landed[0] != b0r || landed[1] != b1r) : landed[0] != b0r + b1r) {
                    ++bad;
                  }
                  // step 0's initialisation (the kernel's loop, for buffer 0 and the zeroed rest)
                  for (int i = 0; i < HBN * N * H; ++i) {
                    const int j = i % (N * H), q = WNPS == 2 && j >= wpo(1) ? 1 : 0, e2 = j - wpo(q);
                    float v = 0.f;
                    if (i < N * H && wrs[q] > 0 && e2 < wrs[q] * H) {
                      const int kb = e2 / (wrs[q] * 64), r = (e2 / 64) % wrs[q], pc = e2 % 64, n = q * WNPR + r,
                                s = n / SR;
                      const int k = kb * 64 + (pc ^ ((r & 7) << 3));
                      if (s < nb) v = hval(b0 + s, k, n & 1);
                    }
                    hb0[i] = v;
                  }
                  // the product: pass q, k16 tile kt, row nl of the pass (WNPR rows read from each k block's start)
                  for (int q = 0; q < WNPS; ++q) {
                    if (q == 1 && nb <= 16) break;
                    for (int kt = 0; kt < H / 16; ++kt) {
                      const int rs = brk == 3 ? WNPR : wrs[q];
                      const size_t off = wpo(q) + size_t(kt >> 2) * rs * 64;
                      if (off % 512 != 0) ++bad;  // 1024-byte atoms
                      const int start_chunk = (kt & 3) * 2;
                      for (int nl = 0; nl < WNPR; ++nl)
                        for (int kl = 0; kl < 16; ++kl) {
                          const int n = q * WNPR + nl, s = n / SR, k = kt * 16 + kl;
                          const int chunk = (start_chunk + kl / 8) ^ (nl & 7);
                          const size_t rel = off + size_t(nl / 8) * 512 + size_t(nl % 8) * 64 + size_t(chunk) * 8 + kl % 8;
                          if (rel >= size_t(N) * H) {  // must stay inside the buffer it reads
                            ++bad;
                            continue;
                          }
                          if (s >= nb) continue;  // dead rows: read, never summed into a live sequence
                          const float want = hval(b0 + s, k, n & 1);  // step 0's (h0)
                          const float got = hb[size_t(bi) * N * H + rel], got0 = hb0[rel];
                          // the mbarrier warpgroup kt / 16 waits on in pass q
                          const int want_bar = ksl ? KS * q + kt / 16 : pipe ? q : 0;
                          ++checked;
                          if (got != want + 0.5f * buf || got0 != want || via[size_t(bi) * N * H + rel] != want_bar) {
                            if (bad < 10)
                              std::printf("NBS=%d B=%d fit=%d ncl=%d pipe=%d buf=%d w=%d g=%d q=%d kt=%d n=%d: copy %g "
                                          "init %g want %g, mbarrier %d want %d\n", NBS, B, groups_fit, ncl, pipe, buf,
                                          w, group, q, kt, n, got, got0, want, via[size_t(bi) * N * H + rel], want_bar);
                            ++bad;
                          }
                        }
                    }
                  }
                }
            }
          }
  std::printf("checked %ld reads, %ld mismatches, %ld tilings refused by the plan\n", checked, bad, refused);
  return bad != 0;
}
