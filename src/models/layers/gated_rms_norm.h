// The gated RMSNorm after a Gated DeltaNet core (Qwen3.5's RMSNormGated, plain weight), in the
// order the official torch path rounds: o_b = bf16(o); n = bf16(o_b · rsqrt(mean(o_b²) + eps));
// n = bf16(w · n); y = bf16(n · silu(z)) with silu in fp32 (fp64 rounded once).
#pragma once
#include <cstdint>

namespace strata::models {

// One head: o (the core's fp32 output), z (bf16 values), w: n bf16; y may alias o.
void gated_rms_norm(const float* o, const float* z, const uint16_t* w, int64_t n, float eps, float* y);

}  // namespace strata::models
