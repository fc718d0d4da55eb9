#include "models/expert_balance.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "core/error.h"
#include "dist/world.h"
#include "models/deepseek_v4/model.h"
#include "models/expert_load.h"
#include "models/token_routing.h"

namespace strata::models {

std::vector<LayerBalance> balance_experts(Model& m, const std::vector<int64_t>& sample_ids, int64_t extra_slots) {
  auto* v4 = dynamic_cast<dsv4::Model*>(&m);
  if (!v4) throw Error("expert balancing: model type " + m.facts().model_type + " has no token-routed experts to balance");
  if (extra_slots < -1) throw Error("expert balancing: extra slots must be 0 or more");
  if (sample_ids.empty()) throw Error("expert balancing: the token sample is empty");
  std::vector<LayerBalance> out;
  if (dist::size() == 1) return out;
  std::map<int64_t, int64_t> freq;
  for (int64_t id : sample_ids) ++freq[id];
  std::vector<int64_t> ids, counts;
  for (const auto& [id, c] : freq) ids.push_back(id), counts.push_back(c);
  for (const MoeLayerInfo& L : moe_layers(m)) {
    if (!L.by_token) continue;
    const ExpertPlacement base = contiguous_placement(L.experts, dist::size());
    const auto ex = token_experts(m, L.layer, ids.data(), int64_t(ids.size()));
    const auto load = weighted_expert_load(ex.data(), counts.data(), int64_t(ids.size()), L.topk, L.experts);
    const int64_t shard = contiguous_shard(L.experts, dist::size(), 0).count;
    const int64_t extra = extra_slots >= 0 ? extra_slots : std::max<int64_t>(1, shard / 8);
    const ExpertPlacement p = replicate_hot_experts(base, load, shard + extra);
    v4->place_experts(L.layer, p);
    const auto used = p.slots_used();
    out.push_back({L.layer, std::accumulate(used.begin(), used.end(), int64_t(0)) - L.experts,
                   load_stats(rank_loads(base, load)).imbalance(), load_stats(rank_loads(p, load)).imbalance()});
  }
  return out;
}

}  // namespace strata::models
