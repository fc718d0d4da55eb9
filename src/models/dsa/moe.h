// The DSA models' FFN: a SwiGLU MLP in the first first_k_dense_replace layers, then a MoE with a
// group-limited sigmoid router (noaux_tc): s = sigmoid(x · Wg) in fp32, the choice by s + bias
// (with n_group > 1, only experts of the topk_group groups whose two best biased scores sum
// highest; ties to the lower group and expert), weights the unbiased s of the chosen experts,
// normalized to sum 1 (norm_topk_prob), times routed_scaling_factor. The output sums the routed
// experts in ascending id, then the shared expert, in fp32, rounded to bf16.
#pragma once
#include <cstdint>
#include <vector>

#include "models/dsa/config.h"
#include "models/dsa/weights.h"

namespace strata::dsa {

struct Routing {
  std::vector<int64_t> experts;  // ascending id
  std::vector<float> weights;
};

// One token's routing from its gate logits [E] (fp32, x · Wg).
Routing route(const Config& c, const MoeWeights& w, const float* logits);
// y [rows][d] = bf16(down(bf16(silu(gate(x)) · up(x)))).
void swiglu_mlp(const SwigluWeights& w, const float* x, int64_t rows, float* y);
// x, out: [rows][d].
void moe_forward(const Config& c, const MoeWeights& w, const float* x, int64_t rows, float* out);

}  // namespace strata::dsa
