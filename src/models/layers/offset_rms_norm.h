// RMSNorm with a zero-centred weight (Qwen3.5, Gemma, MiniMax: the checkpoint stores w and the
// norm multiplies by 1 + w): y = bf16((x · rsqrt(mean(x²) + eps)) · fp32(1 + w)), fp32 ops,
// mean(x²) the fp64 sum of squares rounded once to fp32, / n (the project's RMS rule).
#pragma once
#include <cstdint>

namespace strata::models {

// x, y: n values (y may alias x); w: n bf16.
void offset_rms_norm(const float* x, const uint16_t* w, int64_t n, float eps, float* y);

}  // namespace strata::models
