// PERSISTENT algorithm: present in this build (select.cu includes this header with __has_include and then calls
// make_persistent_algo(), defined in persistent_algo.cu). The host-side interface is persistent_plan.h.
#pragma once

#include "persistent_plan.h"

namespace openrnn {
namespace cuda {

// AUTO's measured rule for a problem PERSISTENT supports (dev/lab/README.md, lab v3 and v4 on an H200, T=100, one
// layer, against cuDNN's STANDARD algorithm in the same run): PERSISTENT was faster for every H=256 row (B 1..256)
// except 16-bit LSTM at B=256 (v4), and for H=512/1024 up to B=64, except the 16-bit types at H=1024, where it loses
// from B=64 on (FFMA matvec, no tensor cores yet). Elsewhere STANDARD's batched GEMMs win. Padded hidden sizes and
// RNN cells (not timed) stay on STANDARD under AUTO.
// Training (persistent forward writing STANDARD's reserve, then STANDARD's backward; H100 2026-11-21, T=100, LSTM
// and GRU, float32 and bfloat16, B 1/16/64, H 256/1024): PERSISTENT was faster on every row but B=64 with H=1024
// (float32 3%, bfloat16 1.6-1.7x slower), so training adds that exclusion to the inference rule.
// prop: the handle's device (the rules that depend on a kernel only sm_90a has check its compute capability).
bool persistent_preferred(const openrnn_rnn_desc& rnn, const openrnn_seq_desc& x, openrnn_fwd_mode mode,
                          const cudaDeviceProp& prop);

}  // namespace cuda
}  // namespace openrnn
