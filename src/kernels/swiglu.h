// SwiGLU with DeepSeek-V4's clamp (swiglu_limit > 0): up is clamped to [-limit, limit], gate
// only from above, then silu(gate) · up (silu(x) = x / (1 + e^-x)), optionally times the
// routing weight, all in fp32. out is rounded to bf16 (the reference casts back before w2).
#pragma once
#include <cstdint>

namespace strata::kernels {

void swiglu(const float* gate, const float* up, int64_t n, float limit, float weight, bool apply_weight, float* out);

}  // namespace strata::kernels
