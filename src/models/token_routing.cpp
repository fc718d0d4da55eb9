#include "models/token_routing.h"

#include <string>

#include "core/error.h"
#include "models/deepseek_v4/model.h"

namespace strata::models {

std::vector<MoeLayerInfo> moe_layers(const Model& m) {
  std::vector<MoeLayerInfo> out;
  if (const auto* v4 = dynamic_cast<const dsv4::Model*>(&m))
    for (int64_t l = 0; l < v4->config().num_hidden_layers; ++l) {
      const auto& s = v4->moe_spec(l);
      out.push_back({l, s.experts, s.topk, s.dim, s.hash});
    }
  return out;
}

std::vector<int64_t> token_experts(const Model& m, int64_t layer, const int64_t* ids, int64_t n) {
  const auto* v4 = dynamic_cast<const dsv4::Model*>(&m);
  if (!v4 || layer < 0 || layer >= v4->config().num_hidden_layers || !v4->moe_spec(layer).hash)
    throw Error("layer " + std::to_string(layer) + " does not route by token id: its experts need its activations");
  const auto& s = v4->moe_spec(layer);
  const auto& w = v4->weights().layers[size_t(layer)].ffn;
  std::vector<int64_t> out;
  out.reserve(size_t(n * s.topk));
  for (int64_t i = 0; i < n; ++i) {
    const auto ex = dsv4::hash_experts(w, s, ids[i]);
    out.insert(out.end(), ex.begin(), ex.end());
  }
  return out;
}

DispatchPlan plan_token_dispatch(const ExpertPlacement& p, const Model& m, int64_t layer, const int64_t* ids, int64_t n) {
  const auto experts = token_experts(m, layer, ids, n);
  return plan_dispatch(p, experts.data(), n, dynamic_cast<const dsv4::Model&>(m).moe_spec(layer).topk);
}

}  // namespace strata::models
