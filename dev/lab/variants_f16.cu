// Instantiates the lab's kernel variants for __half storage (one file per type so they compile in parallel).
#include "variants.cuh"

namespace lab {
void add_variants_f16(std::vector<std::unique_ptr<Variant>>& v) { add_variants<__half>(v); }
}  // namespace lab
