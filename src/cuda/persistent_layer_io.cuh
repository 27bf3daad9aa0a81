// The elementwise kernels around one layer's persistent forward launch (persistent_algo.cu, forward_typed): the
// prep kernel before it (with training's reserve initialisation), the hy / cy kernel after it, and the reserve
// initialisation of the LSTM projection. One translation unit
// includes this (persistent_algo.cu); the kernels are templates on the storage type T.
#pragma once

#include <cstdint>

#include "cuda_common.cuh"
#include "persistent_plan.h"      // kMaxGroups
#include "standard_kernels.cuh"  // st_split: the reserve's split state format

namespace openrnn {
namespace cuda {
namespace persist_io {

// What one layer's launch needs prepared, per direction, done by one launch for both directions before it (on an
// H100 each dependent launch or memset on the stream costs ~1-2 µs; at B = 1, T = 100 the five to seven per direction
// this replaces were ~0.1 µs per step: docs/performance.md, session 19):
// - bx / bh (float32 [G*H]) from the canonical biases (either may be absent);
// - the kernel's float32 h0 / c0 [B, H] from hx / cx (zero where absent; null: not needed, no cell state or the kernel
//   reads the caller's float32 hx / cx itself);
// - the group counters flags [kMaxGroups] and, where hg is set, v10's tagged words hg [hg_words] zeroed (LaunchArgs::
//   prep tells launch() not to do it again);
// - training (rs_hs set): the reserve's state slots the kernel does not write (reserve_slots below; before session 20
//   a launch of its own per direction).
template <typename T>
struct PrepDir {
  const T* bih = nullptr;
  const T* bhh = nullptr;
  float* bx = nullptr;
  float* bh = nullptr;
  const T* hx = nullptr;
  float* h0 = nullptr;
  const T* cx = nullptr;
  float* c0 = nullptr;
  unsigned* flags = nullptr;
  unsigned long long* hg = nullptr;
  T* rs_hs = nullptr;     // training: the reserve's states (StdReserveDir::hs) and cell states (cs)
  float* rs_cs = nullptr;
};
template <typename T>
struct PrepArgs {
  PrepDir<T> d[2];
  long long n = 0;  // the largest of GH, BH, kMaxGroups, hg_words
  int GH = 0, H = 0;
  long long BH = 0, hg_words = 0;
  bool gru = false;
  const int32_t* lens = nullptr;  // training: the reserve slots of direction 1 depend on each sequence's length
  int steps = 0, B = 0;
};

// Training, before the launch: the reserve state slots the kernel does not write, for element i = b * Hr + u of
// [B, Hr]. Forward direction: slot 0 = h0 (c0). Reverse direction: slots len_b..T (the state entering the padding
// steps and the first real step) = h0; the kernel writes slots 0..len_b-1. hs rows are [Hr * S] of TW (S = 2: hi/lo
// pairs for 16-bit types).
template <typename T>
__device__ __forceinline__ void reserve_slots(long long i, float h, float c, T* hs, float* cs, const int32_t* lens,
                                              int T_, int B, int Hr, bool reverse) {
  const int b = static_cast<int>(i / Hr), u = static_cast<int>(i % Hr);
  const int len = lens ? lens[b] : T_;
  const int first = reverse ? len : 0, last = reverse ? T_ : 0;
  constexpr int S = sizeof(T) == 2 ? 2 : 1;
  for (int slot = first; slot <= last; ++slot) {
    st_split(hs + (static_cast<size_t>(slot) * B + b) * (static_cast<size_t>(Hr) * S) + u, Hr, h);
    if (cs) cs[(static_cast<size_t>(slot) * B + b) * Hr + u] = c;
  }
}

// grid (x, D): direction blockIdx.y, a grid-stride loop over the largest of the index ranges. It lets the forward
// kernel launched after it (as a programmatic dependent, LaunchArgs::prep) start at once: that kernel reads nothing
// this one writes before its griddepcontrol.wait, which returns when this grid has finished and its writes are
// visible.
template <typename T>
__global__ void layer_prep_kernel(PrepArgs<T> a) {
  pdl_trigger();  // cuda_common.cuh
  const PrepDir<T>& q = a.d[blockIdx.y];
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < a.n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    if (i < a.GH) {
      const float x = q.bih ? to_f(q.bih[i]) : 0.f;
      const float y = q.bhh ? to_f(q.bhh[i]) : 0.f;
      const bool n_gate = a.gru && i >= 2 * a.H;  // GRU: b_hn stays inside r * (W_hn h + b_hn)
      q.bx[i] = n_gate ? x : x + y;
      q.bh[i] = n_gate ? y : 0.f;
    }
    if (i < a.BH) {
      const float h = q.hx ? to_f(q.hx[i]) : 0.f, c = q.cx ? to_f(q.cx[i]) : 0.f;
      if (q.h0) q.h0[i] = h;
      if (q.c0) q.c0[i] = c;
      if (q.rs_hs) reserve_slots(i, h, c, q.rs_hs, q.rs_cs, a.lens, a.steps, a.B, a.H, blockIdx.y == 1);
    }
    if (i < persist::kMaxGroups) q.flags[i] = 0u;
    if (q.hg && i < a.hg_words) q.hg[i] = 0ull;
  }
}

// After the launch, for both directions at once: the final states hn / cn (float32 [B, H]) into hy / cy (either null:
// not asked for). grid (x, D). Only where the kernel cannot write them itself (FwdParams::hy): the projection's cy,
// and a float32 hy / cy that aliases hx / cx.
template <typename T>
struct PostArgs {
  const float* hn[2] = {nullptr, nullptr};
  const float* cn[2] = {nullptr, nullptr};
  T* hy[2] = {nullptr, nullptr};
  T* cy[2] = {nullptr, nullptr};
  long long BH = 0;
};

template <typename T>
__global__ void layer_post_kernel(PostArgs<T> a) {
  const int d = blockIdx.y;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < a.BH;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    if (a.hy[d]) st(a.hy[d] + i, a.hn[d][i]);
    if (a.cy[d]) st(a.cy[d] + i, a.cn[d][i]);
  }
}

// Blocks of 256 threads for n elements, at most 512 (a grid-stride loop does the rest).
inline unsigned prep_blocks(long long n) {
  const long long b = (n + 255) / 256;
  return static_cast<unsigned>(b < 1 ? 1 : b > 512 ? 512 : b);
}

// Training with the LSTM projection (its float32 state slots; the prep kernel does the others): reserve_slots as a
// launch of its own.
template <typename T>
__global__ void reserve_init_kernel(const float* h0, const float* c0, T* hs, float* cs, const int32_t* lens, int T_,
                                    int B, int Hr, bool reverse) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(B) * Hr) return;
  reserve_slots(i, h0 ? h0[i] : 0.f, c0 ? c0[i] : 0.f, hs, cs, lens, T_, B, Hr, reverse);
}

}  // namespace persist_io
}  // namespace cuda
}  // namespace openrnn
