// PERSISTENT, host side: which compiled kernel configuration runs a problem (the forward's choose, the backward
// data's choose_bwd), the developer switches that steer that choice, and the trace that prints it
// (OPENRNN_PERSIST_TRACE=1). persistent_algo.cu runs what is chosen; the AUTO rule there asks persist_v7_mode and
// v7_preferred. The rules' measurements are in the comments of persistent_choice.cu and in docs/performance.md.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "persistent_plan.h"

namespace openrnn {
namespace cuda {
namespace persist {

// The forward kernel for a problem and its plan; k == nullptr where none can take it (why says so in words).
struct Choice {
  const Kernel* k = nullptr;
  Plan plan;
  std::string why;
};
// The backward-data kernel for a problem and its plan; k == nullptr where STANDARD's per-step loop runs instead.
struct BwdChoice {
  const BwdKernel* k = nullptr;
  Plan plan;
};

// H_: the problem's hidden size (padded to a compiled one inside), B: batch, D: directions.
Choice choose(const cudaDeviceProp& prop, openrnn_cell cell, openrnn_data_type dt, int H_, int B, int D);
BwdChoice choose_bwd(const cudaDeviceProp& prop, openrnn_cell cell, openrnn_data_type dt, int H_, int B, int D);

// OPENRNN_PERSIST_V7 (developer switch, read at every call): 0 never v7, 1 wherever it applies, else the rule.
int persist_v7_mode();
// Where the 16-bit v7 forward runs by default (B >= 16).
bool v7_preferred(int B, int H);
// Whether v10's 16-bit LSTM / GRU tiles of 32 may run (B = 33-64 in one launch at H = 1024; session 55): v10 not
// switched off and no other tile forced (OPENRNN_PERSIST_V10 / _NBS). The AUTO rule asks it.
bool v10_tile32_on();
// Whether choose() may take v10's wgmma tile of 32 (16-bit LSTM): unless OPENRNN_PERSIST_V10_WG=0.
bool v10_wg_on();

// OPENRNN_PERSIST_TRACE=1: one line per distinct kernel choice / input projection inside the launch, on stderr.
void trace_line(const char* what, const std::string& name, const Plan& pl, int B, int D);
void trace_choice(const Choice& ch, int B, int D);
void trace_xprod(const std::string& name, int P, size_t smem, int B, int D, int Il);

}  // namespace persist
}  // namespace cuda
}  // namespace openrnn
