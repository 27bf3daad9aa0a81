// Host emulation of the index arithmetic of dev/lab/v10_wgmma_product.diff (v10's LSTM tiles of 4-32 with the
// product on warpgroup MMAs): the cell threads' writes of h_t into the exchange rows ([16 k blocks][SR*B rows][64] per
// buffer, chunk c of row n stored at c ^ (n & 7), n the row within the tile), the multicast copies of every CTA of a
// cluster into hb ([2 buffers or 1][16][N][64]), the step-0 initialisation of hb, and the addresses the wgmma B
// operand reads through its 128-byte-swizzle descriptor (base + 32 bytes per k16 slice). Checks that every (state
// row, k) the product reads is the value the writer meant, for every tile, several B, cluster sizes, both buffers
// and (the tile of 32) both copy modes. Values are floats standing for
// halves: only the positions are under test.
// Build and run (host only): make v10_wg_layout_check in the build folder, or g++ -O2 -std=c++17 this file. It
// exits with status 1 on any mismatch (a swizzle keyed by the batch row instead of the tile row: 165888 of them).
#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
  const int H = 1024, SR = 2, KB = H / 64;
  long bad = 0, checked = 0;
  for (int NBS : {4, 8, 16, 32})
  for (int B : {3, 8, 13, 20, 34, 40, 48, 64, 96, 128})
    for (int groups : {1, 2, 4})
      for (int ncl : {2, 4, 8})
        for (int pipe : {0, 1})
          for (int buf : {0, 1}) {
          const int N = 2 * NBS, NTP = N / 8 > 4 ? 4 : N / 8, kPassRows = 8 * NTP, HBN = NBS == 32 ? 1 : 2;
          const int NPS = N > 32 ? 2 : 1, NPR = N / NPS;
          if ((pipe && NBS != 32) || buf >= HBN) continue;  // p.pipe: the tile of 32 only, whose one buffer is bi = 0
          const int BT = (B + groups - 1) / groups;
          if (BT > NBS) continue;
          // logical state: hi / lo of sequence b at unit u
          auto hval = [&](int b, int u, int lo) { return float(b * 4096 + u * 2 + lo) + (lo ? 0.25f : 0.f); };
          std::vector<float> hx(size_t(B) * SR * H, -1.f);
          for (int b = 0; b < B; ++b) {
            const int g = b / BT, s = b - g * BT;
            (void)g;
            for (int u = 0; u < H; ++u) {
              const size_t r = size_t(u >> 6) * size_t(SR * B) + size_t(b) * SR;
              const int c = u & 63;
              hx[r * 64 + (c ^ (((2 * s) & 7) << 3))] = hval(b, u, 0);
              hx[(r + 1) * 64 + (c ^ (((2 * s + 1) & 7) << 3))] = hval(b, u, 1);
            }
          }
          for (int g = 0; g < groups; ++g) {
            const int b0 = g * BT, nb = std::min(BT, B - b0);
            if (nb <= 0) continue;
            // hb of any CTA of a cluster: every peer's copies land in it (multicast)
            std::vector<float> hb(size_t(HBN) * N * H, -2.f), hb0(size_t(HBN) * N * H, -3.f);
            const int blk_per = (SR * nb + ncl - 1) / ncl;
            for (int crank = 0; crank < ncl; ++crank)
              for (int lane = 0; lane < KB; ++lane) {
                const size_t srck = (size_t(lane) * (SR * B) + size_t(SR * b0)) * 64;
                const size_t dstk = size_t(buf) * N * H + size_t(lane) * N * 64;
                auto copy = [&](int n0, int cnt) {
                  for (int i = 0; i < cnt * 64; ++i) hb[dstk + size_t(n0) * 64 + i] = hx[srck + size_t(n0) * 64 + i];
                };
                if (pipe) {
                  for (int q = 0; q < 2; ++q) {
                    const int rq = std::min(SR * nb - q * kPassRows, kPassRows), per = (rq + ncl - 1) / ncl;
                    const int n0 = q * kPassRows + crank * per, cnt = std::min(per, rq - crank * per);
                    if (cnt > 0) copy(n0, cnt);
                  }
                } else {
                  const int n0 = crank * blk_per, cnt = std::max(0, std::min(n0 + blk_per, SR * nb) - n0);
                  if (cnt > 0) copy(n0, cnt);
                }
              }
            // step 0's initialisation from h0 (= the same logical state)
            for (int i = 0; i < HBN * N * H; ++i) {
              const int kb = (i / (N * 64)) % KB, n = (i / 64) % N, pc = i % 64, s = n / SR;
              const int k = kb * 64 + (pc ^ ((n & 7) << 3));
              hb0[i] = i < N * H && s < nb ? hval(b0 + s, k, n & 1) : 0.f;
            }
            // step 0 reads buffer 0 (the initialised one); a copied step reads buffer bi(t) = buf
            const std::vector<float>& hbc = hb;
            // the product's reads: warpgroup ks, k16 tile kt = 16 ks + kk, pass q, row n of the pass, k in the tile
            for (int q = 0; q < NPS; ++q) {
              if (q == 1 && nb <= 16) break;
              for (int kt = 0; kt < H / 16; ++kt) {
                const size_t off = size_t(kt >> 2) * N * 64 + size_t(q) * NPR * 64;  // 1024-byte aligned
                const size_t base = size_t(buf) * N * H + off;
                const int start_chunk = (kt & 3) * 2;  // + 32 bytes per k16 slice
                if (base % 512 != 0) ++bad;            // 1024 bytes = 512 halves
                for (int nl = 0; nl < NPR; ++nl)
                  for (int kl = 0; kl < 16; ++kl) {
                    const int n = q * NPR + nl;  // row within the tile
                    const int chunk = (start_chunk + kl / 8) ^ (nl & 7);  // address bits [4:6] ^ [7:9]
                    const size_t a = base + size_t(nl / 8) * 512 + size_t(nl % 8) * 64 + size_t(chunk) * 8 + kl % 8;
                    const size_t a0 = off + size_t(nl / 8) * 512 + size_t(nl % 8) * 64 + size_t(chunk) * 8 + kl % 8;
                    const int s = n / SR, k = kt * 16 + kl;
                    // rows past the tile's sequences: zero after the initialisation, never copied, never summed
                    if (s >= nb) {
                      if (hb0[a0] != 0.f) ++bad;
                      continue;
                    }
                    const float want = hval(b0 + s, k, n & 1);
                    ++checked;
                    if (hbc[a] != want || hb0[a0] != want) {
                      if (bad < 10)
                        std::printf("NBS=%d B=%d groups=%d ncl=%d pipe=%d buf=%d g=%d q=%d kt=%d n=%d k=%d: copy %g init "
                                    "%g want %g\n", NBS, B, groups, ncl, pipe, buf, g, q, kt, n, k, hbc[a], hb0[a0], want);
                      ++bad;
                    }
                  }
              }
            }
          }
        }
  // The accumulator -> partial-sum mapping: register i of (warp mg, lane l) is row 16 mg + l/4 + 8 ((i/2)%2), column
  // 8 (i/4) + 2 (l%4) + i%2; pp[0] / pp[8] sum the column pair (2 s', 2 s' + 1) = (hi, lo) of sequence s' = 4 j + l%4.
  for (int NBS : {4, 8, 16, 32}) {
    const int N = 2 * NBS, NPS = N > 32 ? 2 : 1, NPR = N / NPS;
    std::vector<int> seen(64 * NBS, 0);
    for (int q = 0; q < NPS; ++q)
      for (int mg = 0; mg < 4; ++mg)
        for (int l = 0; l < 32; ++l)
          for (int j = 0; j < NPR / 8; ++j)
            for (int h = 0; h < 2; ++h) {
              const int i0 = 4 * j + 2 * h, row = 16 * mg + l / 4 + 8 * ((i0 / 2) % 2);
              const int col0 = 8 * (i0 / 4) + 2 * (l % 4) + i0 % 2;
              const int col1 = 8 * ((i0 + 1) / 4) + 2 * (l % 4) + (i0 + 1) % 2;
              const int sq = q * (NPR / 2) + j * 4 + l % 4;
              if (col0 != 2 * (sq - q * (NPR / 2)) || col1 != col0 + 1 || row != 16 * mg + l / 4 + 8 * h) ++bad;
              ++seen[row * NBS + sq];
            }
    for (int v : seen)
      if (v != 1) ++bad;
  }
  std::printf("checked %ld reads, %ld mismatches\n", checked, bad);
  return bad != 0;
}
