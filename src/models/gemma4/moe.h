// The 26B-A4B's routed experts, run beside the dense MLP on the layer's residual r:
//   router: n = bf16(bf16(rmsnorm(r) · scale) · d^-½);  probs = bf16(softmax(bf16(W n)));
//   top-k (ties to the lower id), w = bf16(top / bf16(Σ top)) · per_expert_scale (bf16);
//   experts on pre_feedforward_layernorm_2(r), each a GeGLU of the fused gate_up / down,
//   bf16(y · w) summed into a bf16 buffer in ascending expert id.
#pragma once
#include <cstdint>
#include <vector>

#include "models/gemma4/config.h"
#include "models/gemma4/weights.h"

namespace strata::gemma4 {

// Each row's top-k experts and weights (bf16 values).
void moe_route(const Config& c, const MoeWeights& w, const float* r, int64_t n, std::vector<int64_t>& experts,
               std::vector<float>& weights);
// out = the experts' bf16 sum (before post_feedforward_layernorm_2), from r, the residual.
void moe_experts(const Config& c, const MoeWeights& w, const float* r, int64_t n, float* out);

}  // namespace strata::gemma4
