// Problem dimensions and the layout of the CPU backend's workspace and reserve space.
//
// Every internal activation buffer is sequence-major, [T, B, .], whatever the caller's layout, so that the rows of
// one step are contiguous for the per-step products, and it holds S (double for float64 problems, float otherwise).
//
// Reserve (forward TRAINING writes it, backward_data rewrites the gate buffers in place, backward_weights reads):
//   H0 [L*D, B, Hout], C0 [L*D, B, H]   copies of hx / cx (zeros when null); backward does not receive them.
//   per layer l:
//     Y   [T, B, D*Hout]  the layer's output, direction d in columns [d*Hout, (d+1)*Hout). At a padding step
//                         (t >= len[b]) it holds the state carried through that step ("frozen": the state after the
//                         sequence's last step for d = 0, the initial state for d = 1), so the h_prev of every step
//                         is simply Y of the previous step in processing order (or H0), finite everywhere.
//     Xd  [T, B, D*Hout]  (l > 0, dropout > 0) the dropped-out input of layer l, Y_{l-1} * mask / (1 - p).
//     per direction d:
//       Gt  [T, B, G*H]   forward: the input projection X W_ih^T, then the gate activations (LSTM i f g o, GRU r z n,
//                         RNN: the pre-activation); backward_data overwrites it with the pre-activation gradients
//                         (GRU linear-before-reset: the input-side ones d(xr), d(xz), d(xn)); zero at padding steps.
//       C   [T, B, H]     LSTM: c after step t (frozen at padding steps).
//       HP  [T, B, H]     LSTM with projection: h~ = o * tanh(c), the input of W_hr (zero at padding steps).
//       DHP [T, B, P]     LSTM with projection: backward_data's gradient w.r.t. the projected h, for dW_hr.
//       HN  [T, B, H]     GRU linear-before-reset: hn = W_hn h + b_hn; backward_data overwrites it with d(hn).
//       RH  [T, B, H]     GRU reset-before: r * h_prev, the input of W_hn.
// Sub-buffers start on 64-byte boundaries relative to the reserve's base (the base itself is the caller's; only
// element alignment is assumed). The workspace's base is aligned up to 64 bytes at run time (64 bytes of slack are
// included in its size).
#pragma once

#include <cstddef>
#include <cstdint>

#include "descriptor.h"
#include "openrnn/openrnn.h"

namespace openrnn {
namespace cpu {

constexpr size_t kNone = SIZE_MAX;

struct Dims {
  openrnn_cell cell;
  openrnn_data_type dt;
  int T, B, I, H, P, Hout, G, GH, L, D, W;  // P = 0 without projection; W = D * Hout
  bool lstm, gru_lbr, gru_rb, rnn, relu, proj;
  bool seq_major, all_full;
  double clip, dropout;
  size_t nweights;  // elements of the weight buffer
  size_t es;  // bytes of S: 8 for float64 problems, 4 otherwise
  int in_size(int l) const { return l == 0 ? I : W; }
  size_t TB() const { return static_cast<size_t>(T) * static_cast<size_t>(B); }
};

Dims make_dims(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x);

// Byte offsets from a base; kNone where absent.
struct ResDir {
  size_t G = kNone, C = kNone, HP = kNone, DHP = kNone, HN = kNone, RH = kNone;
};
struct ResLayer {
  size_t Y = kNone, Xd = kNone;
  ResDir dir[2];
};
struct ResHeader {
  size_t H0 = kNone, C0 = kNone;
  size_t bytes = 0;  // of the header
};

ResHeader reserve_header(const Dims& d);
// Layer l's offsets (computed by formula: no allocation).
ResLayer reserve_layer(const Dims& d, int l);
size_t reserve_bytes(const Dims& d);

// Forward workspace. In training the activation buffers (Y, Gt, C, HP, HN, RH, H0, C0) are in the reserve instead
// and the fields below for them are kNone.
struct FwdWs {
  size_t Wf = kNone;              // [weights] float32 copy of float16/bfloat16 weights
  size_t X0 = kNone;              // [T, B, I] layer 0's input, converted / made sequence-major
  size_t bx = kNone, bhn = kNone;  // [G*H] summed biases added to every pre-activation; [H] GRU-LBR b_hn
  size_t Pk = kNone, Pr = kNone;   // packed W_hh^T (G groups of ceil(H/NR) panels of Hout x NR), packed W_hr^T
  // inference only
  size_t Ya = kNone, Yb = kNone;  // [T, B, W] layer outputs, ping-pong
  size_t XW = kNone;              // [T, B, G*H]
  size_t C = kNone, HP = kNone, HN = kNone, RH = kNone;  // [B, H] per-step state / scratch
  size_t H0 = kNone, C0 = kNone;
  size_t bytes = 0;
};
FwdWs forward_ws(const Dims& d, bool training);

struct BwdWs {
  size_t Wf = kNone;
  size_t dA = kNone, dB = kNone;  // [T, B, max(I, W)] dY of a layer / dX of a layer (ping-pong)
  size_t DH = kNone, DHD = kNone;  // [B, Hout] gradient carried into the previous step (double-buffered)
  size_t DC = kNone;               // [B, H]
  size_t DHT = kNone, DRH = kNone;  // [B, H] LSTM-projection dh~; GRU-RB d(r * h)
  size_t bytes = 0;
};
BwdWs backward_ws(const Dims& d);

struct WgWs {
  size_t X0 = kNone;  // [T, B, I] x converted, sequence-major, zero at padding steps
  size_t Gw = kNone;  // [weights] float32 gradient before it is combined with float16/bfloat16 dweights
  size_t bytes = 0;
};
WgWs wgrad_ws(const Dims& d);

// X0 is needed when x cannot be used in place: another storage type or batch-major (forward); backward_weights
// also needs finite zeros at padding steps (0 * NaN would poison the weight gradient).
inline bool fwd_needs_x0(const Dims& d, bool native) { return !native || !d.seq_major; }
inline bool wg_needs_x0(const Dims& d, bool native) { return !native || !d.seq_major || !d.all_full; }

// Thread partition: blocks of NR units, thread tid of nt gets [nb * tid / nt, nb * (tid + 1) / nt).
inline void split_blocks(int nb, int tid, int nt, int& b0, int& b1) {
  b0 = static_cast<int>(static_cast<long long>(nb) * tid / nt);
  b1 = static_cast<int>(static_cast<long long>(nb) * (tid + 1) / nt);
}

}  // namespace cpu
}  // namespace openrnn
