// RMSNorm as DeepSeek's reference computes it: fp32 throughout, y = w * (x * rsqrt(mean(x²) + eps)),
// the product rounded to bf16 (the reference's activations are bf16 tensors). The sum of
// squares uses the canonical dot order (kernels/dot.h).
#pragma once
#include <cstdint>

namespace strata::kernels {

// weight: n bf16 values, or nullptr for no learned scale. round_bf16 = round the output.
void rms_norm(const float* x, const uint16_t* weight, int64_t n, float eps, float* y, bool round_bf16 = true);

// rsqrt(mean(x²) + eps): mean and +eps in fp32, the rsqrt in fp64 rounded once.
float rms_scale(const float* x, int64_t n, float eps);

}  // namespace strata::kernels
