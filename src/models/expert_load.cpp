#include "models/expert_load.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace strata::models {

LoadStats load_stats(const std::vector<double>& loads) {
  LoadStats s;
  if (loads.empty()) return s;
  double sum = 0;
  for (double v : loads) sum += v;
  s.max = *std::max_element(loads.begin(), loads.end());
  s.mean = sum / double(loads.size());
  return s;
}

LoadStats load_stats(const std::vector<int64_t>& loads) { return load_stats(std::vector<double>(loads.begin(), loads.end())); }

std::vector<int64_t> expert_pairs(const DispatchPlan& plan, int64_t experts) {
  std::vector<int64_t> n(size_t(experts), 0);
  for (const auto& q : plan.pairs) ++n[size_t(q.expert)];
  return n;
}

DispatchLoad dispatch_load(const DispatchPlan& plan, int64_t experts) {
  return {load_stats(expert_pairs(plan, experts)), load_stats(plan.rank_pairs()), load_stats(plan.send_counts())};
}

std::vector<double> weighted_expert_load(const int64_t* experts, const int64_t* counts, int64_t n_rows, int64_t topk,
                                         int64_t n_experts) {
  std::vector<double> load(size_t(n_experts), 0.0);
  for (int64_t i = 0; i < n_rows; ++i) {
    const int64_t* ex = experts + i * topk;
    for (int64_t k = 0; k < topk; ++k) {
      if (ex[k] < 0 || ex[k] >= n_experts) throw Error("expert load: expert " + std::to_string(ex[k]) + " out of range");
      if (first_listing(ex, k)) load[size_t(ex[k])] += double(counts[i]);
    }
  }
  return load;
}

}  // namespace strata::models
