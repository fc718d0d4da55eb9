#include "models/expert_placement.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "core/error.h"

namespace strata::models {

std::vector<int64_t> ExpertPlacement::slots_used() const {
  std::vector<int64_t> n(size_t(ranks), 0);
  for (const auto& h : holders)
    for (int r : h) ++n[size_t(r)];
  return n;
}

std::vector<int64_t> ExpertPlacement::experts_of(int r) const {
  std::vector<int64_t> out;
  for (int64_t e = 0; e < experts; ++e) {
    const auto& h = holders[size_t(e)];
    if (std::find(h.begin(), h.end(), r) != h.end()) out.push_back(e);
  }
  return out;
}

Shard contiguous_shard(int64_t experts, int ranks, int r) {
  const int64_t base = experts / ranks, extra = experts % ranks;
  return {r * base + std::min<int64_t>(r, extra), base + (r < extra ? 1 : 0)};
}

ExpertPlacement contiguous_placement(int64_t experts, int ranks) {
  if (ranks < 1 || experts < 1)
    throw Error("expert placement: " + std::to_string(experts) + " experts over " + std::to_string(ranks) + " ranks");
  ExpertPlacement p;
  p.experts = experts;
  p.ranks = ranks;
  p.holders.resize(size_t(experts));
  for (int r = 0; r < ranks; ++r) {
    const Shard s = contiguous_shard(experts, ranks, r);
    for (int64_t e = s.first; e < s.first + s.count; ++e) p.holders[size_t(e)] = {r};
  }
  return p;
}

std::vector<double> rank_loads(const ExpertPlacement& p, const std::vector<double>& expert_load) {
  if (int64_t(expert_load.size()) != p.experts) throw Error("expert placement: one load per expert expected");
  std::vector<double> l(size_t(p.ranks), 0.0);
  for (int64_t e = 0; e < p.experts; ++e) {
    const auto& h = p.holders[size_t(e)];
    for (int r : h) l[size_t(r)] += expert_load[size_t(e)] / double(h.size());
  }
  return l;
}

ExpertPlacement replicate_hot_experts(const ExpertPlacement& base, const std::vector<double>& expert_load,
                                      int64_t slots_per_rank) {
  ExpertPlacement p = base;
  std::vector<int64_t> used = p.slots_used();
  if (slots_per_rank < *std::max_element(used.begin(), used.end()))
    throw Error("expert placement: " + std::to_string(slots_per_rank) + " slots per rank cannot hold a shard of " +
                std::to_string(*std::max_element(used.begin(), used.end())) + " experts");
  // Each step adds one replica, so the slots bound the steps.
  for (;;) {
    const std::vector<double> load = rank_loads(p, expert_load);
    const int busiest = int(std::max_element(load.begin(), load.end()) - load.begin());
    const double top = load[size_t(busiest)];
    // The busiest rank's experts by load per holder, largest first (lower id on ties).
    std::vector<int64_t> mine = p.experts_of(busiest);
    const auto share = [&](int64_t e) { return expert_load[size_t(e)] / double(p.holders[size_t(e)].size()); };
    std::stable_sort(mine.begin(), mine.end(), [&](int64_t a, int64_t b) { return share(a) > share(b); });
    // The other ranks, least loaded first (lower id on ties).
    std::vector<int> targets(size_t(p.ranks));
    std::iota(targets.begin(), targets.end(), 0);
    std::stable_sort(targets.begin(), targets.end(), [&](int a, int b) { return load[size_t(a)] < load[size_t(b)]; });
    bool moved = false;
    for (int64_t e : mine) {
      if (share(e) <= 0) break;
      auto& h = p.holders[size_t(e)];
      const double new_share = expert_load[size_t(e)] / double(h.size() + 1);
      for (int t : targets) {
        if (used[size_t(t)] >= slots_per_rank || std::find(h.begin(), h.end(), t) != h.end()) continue;
        // A target at or above the busiest load would only move the peak.
        if (load[size_t(t)] + new_share >= top) break;
        h.push_back(t);
        ++used[size_t(t)];
        moved = true;
        break;
      }
      if (moved) break;
    }
    if (!moved) return p;
  }
}

}  // namespace strata::models
