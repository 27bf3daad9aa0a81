// Instantiates the lab's kernel variants for __nv_bfloat16 storage (one file per type so they compile in parallel).
#include "variants.cuh"

namespace lab {
void add_variants_bf16(std::vector<std::unique_ptr<Variant>>& v) { add_variants<__nv_bfloat16>(v); }
}  // namespace lab
