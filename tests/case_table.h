// The tables of cases, generated: a full product over a core subset of the factors plus an all-pairs cover of every
// factor (each value of each factor meets each value of every other factor in at least one case), expanded over the
// backends this binary was built for. Names are unique within a table.
#pragma once

#include <vector>

#include "harness.h"

namespace ort {

// Shapes (I, H, B, T) used by the tables: odd sizes, I != H, H = 1, 3, 17 and 255.
struct Shape {
  int I, H, B, T;
};
const std::vector<Shape>& table_shapes();

// Forward-only cases: every cell x bias x 1-2 layers x directions x lengths x dtype (core product), plus all pairs
// of those with 3 layers, projection, layout, shape and inference/training mode.
std::vector<Case> forward_cases();
// Backward cases (float64 with finite differences, float32, and float16/bfloat16 in the pairs): every cell x bias x
// directions x lengths x {float64, float32} (core), plus all pairs with layers, projection, layout, shape.
std::vector<Case> backward_cases();

// Every case of a list once per compiled backend (the backend suffix keeps the names unique).
std::vector<Case> on_every_backend(const std::vector<Case>& cases);

// Greedy all-pairs cover (AETG style) of factors with the given domain sizes. pair_ok(f1, v1, f2, v2) says whether
// two values may meet in one case. Deterministic for a seed.
std::vector<std::vector<int>> all_pairs(const std::vector<int>& domains,
                                        bool (*pair_ok)(int f1, int v1, int f2, int v2), unsigned seed);

}  // namespace ort
