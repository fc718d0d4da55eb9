// Qwen3.5's MLPs over rows: the dense SwiGLU, down(bf16(bf16(silu(gate x)) · up x)), and the
// MoE: a softmax router over every expert (fp32), the top k by probability (ties to the lower
// expert id), weights renormalised to sum to one and rounded to bf16; each chosen expert's
// SwiGLU times its weight added into a bf16 sum in ascending expert id; plus the shared expert
// times bf16(sigmoid(shared_expert_gate x)).
#pragma once
#include <cstdint>
#include <vector>

#include "models/qwen3_5/config.h"
#include "models/qwen3_5/weights.h"

namespace strata::qwen35 {

// x [n][d] → out [n][d] (bf16 values).
void swiglu_mlp(const SwigluWeights& w, const float* x, int64_t n, float* out);
void moe_mlp(const Config& c, const MoeWeights& w, const float* x, int64_t n, float* out);

// The router alone (tests): for each row its top-k expert ids and bf16 weights.
void moe_route(const Config& c, const MoeWeights& w, const float* x, int64_t n, std::vector<int64_t>& experts,
               std::vector<float>& weights, std::vector<float>* probs = nullptr);

}  // namespace strata::qwen35
