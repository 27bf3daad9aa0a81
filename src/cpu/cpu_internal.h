// Shared pieces of the CPU backend's forward / backward passes: typed views of the caller's buffers, weight
// pointers, dropout masks, conversions of whole tensors between the caller's layout and the internal [T, B, .] one.
#pragma once

#include <immintrin.h>
#include <omp.h>
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "backend.h"
#include "cpu_convert.h"
#include "cpu_plan.h"
#include "philox.h"

namespace openrnn {
namespace cpu {

inline char* align64(void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<char*>((u + 63) & ~static_cast<uintptr_t>(63));
}

// The per-step barrier of the time loops (used inside an OpenMP region by all of its threads instead of
// `omp barrier`). It spins briefly, which is all a step needs on an idle machine (the partner arrives within a
// microsecond or two), then yields the core on every further poll: on a machine with more runnable threads than
// cores a pure spin keeps the partner we wait for off the CPU, and a step then costs a scheduler time slice.
class StepBarrier {
 public:
  // The team size; set by one thread (omp single, whose implied barrier publishes it) before the first wait:
  // OpenMP may grant fewer threads than asked for.
  void set_size(int n) { n_ = n; }
  void wait() {
    if (n_ <= 1) return;
    const unsigned gen = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      count_.store(0, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_release);
      return;
    }
    for (int i = 0; gen_.load(std::memory_order_acquire) == gen; ++i) {
      if (i < kSpins)
        _mm_pause();
      else
        sched_yield();
    }
  }

 private:
  static constexpr int kSpins = 2000;
  alignas(64) std::atomic<int> count_{0};
  alignas(64) std::atomic<unsigned> gen_{0};
  int n_ = 1;
};

// Threads worth waking for `work` units of work (elements or multiply-adds): below 2^17 units per extra
// thread the hand-off costs more than it saves. On an idle machine a fork/join or a barrier costs about a
// microsecond; on a machine with more runnable threads than cores (the 2-core build machine shared by several
// jobs) every synchronisation can wait a scheduler time slice, so small problems run on the calling thread alone.
// Measured (2026-11-21, shared 2-core AMD EPYC, load ~11): LSTM B=1 H=128 (64K multiply-adds per step) ran
// 5.5 us/step on one thread, 60-280 us/step on two.
// OPENRNN_CPU_MIN_WORK_PER_THREAD (read once; 1 forces every loop onto all threads) lets a run take the
// multi-threaded paths on small problems (no test or tool sets it today).
inline size_t min_work_per_thread() {
  static const size_t v = [] {
    const char* e = std::getenv("OPENRNN_CPU_MIN_WORK_PER_THREAD");
    if (e) {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(e, &end, 10);
      if (end != e && *end == '\0' && n >= 1) return static_cast<size_t>(n);
    }
    return size_t(1) << 17;
  }();
  return v;
}
inline int threads_for(size_t work, int nt) {
  const size_t useful = work / min_work_per_thread();
  return useful < 2 ? 1 : (useful < static_cast<size_t>(nt) ? static_cast<int>(useful) : nt);
}

// Threads of a whole call, decided once from the per-step multiply-adds of the recurrent products: when the time
// loop would run on one thread, every other loop and product of the call does too. Waking OpenMP's second thread
// for one product only leaves it spin-waiting (libgomp's default active wait) through the rest of the call on a
// core the caller's other work needs: measured LSTM B=1 H=128 at 159 us/step that way, 5.9 us/step without.
inline int call_threads(const Dims& d, int nt) {
  return threads_for(static_cast<size_t>(d.B) * d.GH * d.Hout + static_cast<size_t>(d.B) * d.P * d.H, nt);
}

template <typename S>
inline S* at(void* base, size_t off) {
  return off == kNone ? nullptr : reinterpret_cast<S*>(static_cast<char*>(base) + off);
}
template <typename S>
inline const S* at(const void* base, size_t off) {
  return off == kNone ? nullptr : reinterpret_cast<const S*>(static_cast<const char*>(base) + off);
}

// Weight tensors of one layer and direction, as S (the caller's buffer, or its float32 copy for 16-bit types).
template <typename S>
struct LayerWeights {
  const S* ih = nullptr;   // [G*H, I_l]
  const S* hh = nullptr;   // [G*H, Hout]
  const S* bih = nullptr;  // [G*H] or null
  const S* bhh = nullptr;  // [G*H] or null
  const S* hr = nullptr;   // [P, H] or null
};
template <typename S>
LayerWeights<S> layer_weights(const openrnn_rnn_desc& rnn, const S* w, int l, int dir) {
  LayerWeights<S> r;
  auto get = [&](openrnn_weight_kind k) -> const S* {
    const size_t off = rnn.weights.offset(l, dir, k, rnn.D);
    return off == SIZE_MAX ? nullptr : w + off;
  };
  r.ih = get(OPENRNN_WEIGHT_IH);
  r.hh = get(OPENRNN_WEIGHT_HH);
  r.bih = get(OPENRNN_BIAS_IH);
  r.bhh = get(OPENRNN_BIAS_HH);
  r.hr = get(OPENRNN_WEIGHT_HR);
  return r;
}

// The weights as S: the caller's buffer when its type is S, else converted into `scratch` (n elements).
template <typename S>
const S* weights_as(const void* w, openrnn_data_type dt, size_t n, S* scratch, int nt) {
  if (native<S>(dt)) return static_cast<const S*>(w);
  const long long N = static_cast<long long>(n);
#pragma omp parallel for num_threads(threads_for(n, nt)) schedule(static)
  for (long long i = 0; i < N; ++i) scratch[i] = load_elem<S>(w, dt, static_cast<size_t>(i));
  return scratch;
}

// dst [T, B, V] (sequence-major, S) from a caller tensor of the seq descriptor's layout; padding steps become 0.
template <typename S>
void gather_seq(const Dims& d, const openrnn_seq_desc& xs, const void* src, int V, S* dst, int nt) {
#pragma omp parallel for num_threads(threads_for(d.TB() * V, nt)) schedule(static)
  for (int t = 0; t < d.T; ++t)
    for (int b = 0; b < d.B; ++b) {
      S* row = dst + (static_cast<size_t>(t) * d.B + b) * V;
      if (t < xs.lengths[static_cast<size_t>(b)])
        load_row<S>(src, d.dt, xs.vec_offset(t, b, V), row, static_cast<size_t>(V));
      else
        for (int v = 0; v < V; ++v) row[v] = S(0);
    }
}

// A caller tensor of the seq descriptor's layout from src [T, B, V]; padding steps get the fill value.
template <typename S>
void scatter_seq(const Dims& d, const openrnn_seq_desc& xs, const S* src, int V, void* dst, int nt) {
#pragma omp parallel for num_threads(threads_for(d.TB() * V, nt)) schedule(static)
  for (int t = 0; t < d.T; ++t)
    for (int b = 0; b < d.B; ++b) {
      const size_t off = xs.vec_offset(t, b, V);
      if (t < xs.lengths[static_cast<size_t>(b)])
        store_row<S>(dst, d.dt, off, src + (static_cast<size_t>(t) * d.B + b) * V, static_cast<size_t>(V));
      else
        fill_row(dst, d.dt, off, xs.fill, static_cast<size_t>(V));
    }
}

// out[i] = keep(i) ? in[i] / (1 - p) : 0 for the n = T*B*W elements of layer `layer`'s input, i the sequence-major
// index (t * B + b) * W + u of openrnn::dropout_keep. One Philox call serves four consecutive indices, exactly as
// dropout_keep assigns them (word i % 4 of the block of counter i / 4); in may equal out.
template <typename S>
void dropout_apply(const S* in, S* out, size_t n, const openrnn_rnn_desc& rnn, int layer, int nt) {
  const uint64_t seed = rnn.cfg.dropout_seed, offset = rnn.dropout_offset;
  const uint32_t thr = dropout_threshold(rnn.cfg.dropout);
  const S scale = static_cast<S>(1.0 / (1.0 - rnn.cfg.dropout));
  const long long nq = static_cast<long long>((n + 3) / 4);
  const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
#pragma omp parallel for num_threads(threads_for(n * 8, nt)) schedule(static)
  for (long long q = 0; q < nq; ++q) {
    const uint64_t uq = static_cast<uint64_t>(q);
    const Philox4 c{{static_cast<uint32_t>(uq), static_cast<uint32_t>(uq >> 32), static_cast<uint32_t>(offset),
                     static_cast<uint32_t>(offset >> 32) ^ (static_cast<uint32_t>(layer) << 16)}};
    const Philox4 r = philox4x32_10(c, k0, k1);
    const size_t i0 = static_cast<size_t>(uq) * 4;
    for (int k = 0; k < 4 && i0 + k < n; ++k) {
      const bool keep = (r.v[k] >> 8) >= thr;
      out[i0 + k] = keep ? in[i0 + k] * scale : S(0);
    }
  }
}

// The three passes (cpu_forward.cpp, cpu_backward.cpp, cpu_wgrad.cpp), for S = float or double.
template <typename S>
void forward_pass(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& xs, const ForwardArgs& a, int nt);
template <typename S>
void backward_data_pass(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& xs, const BackwardDataArgs& a, int nt);
template <typename S>
void backward_weights_pass(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& xs, const BackwardWeightsArgs& a,
                           int nt);

}  // namespace cpu
}  // namespace openrnn
