// A loaded model's routed-expert MoE layers for expert-parallel planning, and the layers that
// pick experts from the token id alone (DeepSeek-V4's hash layers, through their tid2eid
// table): their dispatch plan follows from the ids as soon as a batch is formed, before the
// forward pass reaches them.
#pragma once
#include <cstdint>
#include <vector>

#include "models/dispatch_plan.h"
#include "models/model.h"

namespace strata::models {

struct MoeLayerInfo {
  int64_t layer = 0, experts = 0, topk = 0, hidden = 0;
  bool by_token = false;  // experts from the token id, not from the activations
};

// The main layers with routed experts, in order (empty for a model without them).
std::vector<MoeLayerInfo> moe_layers(const Model& m);

// A by_token layer's experts of each id, [n][topk] in routing order (strata::Error for another
// layer or an id outside the vocabulary).
std::vector<int64_t> token_experts(const Model& m, int64_t layer, const int64_t* ids, int64_t n);

// The dispatch plan of a by_token layer from the ids alone.
DispatchPlan plan_token_dispatch(const ExpertPlacement& p, const Model& m, int64_t layer, const int64_t* ids, int64_t n);

}  // namespace strata::models
