// DeepSeek-V4 MoE (reference classes Gate, Expert, MoE). Router: fp32 scores = Wg·x,
// sqrt(softplus) (or softmax / sigmoid per scoring_func); experts chosen by top-k of
// scores + bias (ties to the lower id), or by the token id's tid2eid row in hash layers;
// weights = the unbiased scores of the chosen experts, normalized to sum 1 (not for softmax),
// times routed_scaling_factor. Each expert is a SwiGLU FFN with the clamp (FP4 or FP8
// weights, FP8-quantized activations); the shared expert (FP8) gets the same clamp and no
// weight. The output sums the routed experts in ascending expert id, then the shared expert,
// in fp32, and is rounded to bf16.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/deepseek_v4/weights.h"

namespace strata::dsv4 {

struct MoeSpec {
  int64_t dim = 0, experts = 0, topk = 0, inter = 0;
  std::string scoring = "sqrtsoftplus";
  float route_scale = 1.0f, swiglu_limit = 0.0f;
  bool hash = false;
  int64_t vocab = 0;
};

struct Routing {
  std::vector<int64_t> experts;  // [topk]
  std::vector<float> weights;    // [topk]
};

// A hash layer's experts for a token: its tid2eid row, in table order (Error for an id outside
// the vocabulary or a row naming no expert).
std::vector<int64_t> hash_experts(const MoeWeights& w, const MoeSpec& s, int64_t token);
// Routing of one token: x [dim] (bf16 values), token id for hash layers.
Routing route(const MoeWeights& w, const MoeSpec& s, const float* x, int64_t token);
// The same from the token's gate scores (x · gateᵀ, fp32, [experts]) computed by the caller.
Routing route_scored(const MoeWeights& w, const MoeSpec& s, std::vector<float> scores, int64_t token);
// x: [rows, dim]; ids: [rows]; out: [rows, dim].
void moe_forward(const MoeWeights& w, const MoeSpec& s, const float* x, const int64_t* ids, int64_t rows, float* out);
// One SwiGLU expert on rows of x; weight per row (nullptr: none). out [rows, dim], bf16 values.
void expert_forward(const ExpertWeights& e, const MoeSpec& s, const float* x, int64_t rows, const float* row_weight,
                    float* out);

}  // namespace strata::dsv4
