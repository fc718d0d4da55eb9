// Walsh–Hadamard transform (Sylvester order, the matrix [[H, H], [H, -H]]) scaled by n^-1/2,
// in place. fp32 butterflies, then the scale, then one rounding to bf16 (the indexer's
// rotate_activation works on bf16 tensors). n must be a power of two.
#pragma once
#include <cstdint>

namespace strata::kernels {

void hadamard(float* x, int64_t n, bool round_bf16 = true);

}  // namespace strata::kernels
