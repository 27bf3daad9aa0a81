// Instantiates the lab's kernel variants for float storage (one file per type so they compile in parallel).
#include "variants.cuh"

namespace lab {
void add_variants_f32(std::vector<std::unique_ptr<Variant>>& v) { add_variants<float>(v); }
}  // namespace lab
