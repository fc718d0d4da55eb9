// Gemma 4's K=V full layers: one projection r = W_k x (bf16) gives both
//   k = RoPE(k_norm(r)) = RoPE(bf16(t · w_k)),  v = bf16(t),  t = r · rsqrt(mean(r²) + eps)
// (the norms share t: Gemma's v_norm has no weight). The cache keeps r alone, half the bytes
// of K + V, and K and V are rebuilt from it exactly as the layer first computed them.
#pragma once
#include <cstdint>


namespace strata::gemma4 {

// One position's `heads` rows of r (bf16 bits, D each) → k and v rows (bf16 bits). cos_sin: the
// position's row of a RopeTable (the `angles` rotating angles' cos, then their sin); the pairs
// past them rotate by angle 0, which leaves them as they are (RotateHalfRope::apply could turn
// a −0 into +0 there, which no dot product can tell).
void k_eq_v_rebuild(const uint16_t* r, int64_t heads, int64_t D, const uint16_t* k_norm, float eps,
                    const float* cos_sin, int64_t angles, uint16_t* k, uint16_t* v);

}  // namespace strata::gemma4
