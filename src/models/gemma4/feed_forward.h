// Gemma 4's feed-forward: GeGLU, down(bf16(bf16(gelu_tanh(gate x)) · up x)), every step a bf16
// tensor; and the 26B's routed experts beside it (moe.h).
#pragma once
#include <cstdint>

#include "models/gemma4/weights.h"

namespace strata::gemma4 {

void geglu_mlp(const GegluWeights& w, const float* x, int64_t n, float* out);

}  // namespace strata::gemma4
