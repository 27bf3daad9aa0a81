// The per-case checks shared by the table tests and the feature tests.
#pragma once

#include "harness.h"

namespace ort {

// Runs the forward of c (in c.mode) on its backend and compares y, hy, cy with the float64 reference (float16 /
// bfloat16: against twice the error of the rounded reference model). Skips (GTEST_SKIP in the caller: returns
// false with *why) when the backend or the forced algorithm is unavailable.
bool check_forward_case(const Case& c, std::string* why);

// Forward(TRAINING), backward_data, backward_weights(SET) of c, compared with the reference's reverse-mode
// gradients; for float64 also central finite differences through the library's own forward: one direction per
// tensor (every weight tensor, x, hx, cx) always, and every weight element on its own when there are at most 2500.
// Returns false with *why when skipped.
bool check_backward_case(const Case& c, std::string* why);

// Gradient tolerances (relative, ||lib - ref|| / ||ref||) per dtype.
double backward_tolerance(openrnn_data_type t);

}  // namespace ort
