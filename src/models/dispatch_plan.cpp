#include "models/dispatch_plan.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace strata::models {

std::vector<int64_t> DispatchPlan::send_counts() const {
  std::vector<int64_t> n;
  for (const auto& r : rows) n.push_back(int64_t(r.size()));
  return n;
}

std::vector<int64_t> DispatchPlan::rank_pairs() const {
  std::vector<int64_t> n(rows.size(), 0);
  for (const auto& q : pairs) ++n[size_t(q.rank)];
  return n;
}

DispatchPlan plan_dispatch(const ExpertPlacement& p, const int64_t* experts, int64_t n_rows, int64_t topk) {
  DispatchPlan plan;
  plan.rows.resize(size_t(p.ranks));
  std::vector<int64_t> dealt(size_t(p.experts), 0);  // rows given to each expert so far
  for (int64_t row = 0; row < n_rows; ++row) {
    const int64_t* ex = experts + row * topk;
    for (int64_t k = 0; k < topk; ++k) {
      const int64_t e = ex[k];
      if (e < 0 || e >= p.experts) throw Error("dispatch plan: expert " + std::to_string(e) + " out of range");
      if (!first_listing(ex, k)) continue;
      const auto& h = p.holders[size_t(e)];
      const int rank = h[size_t(dealt[size_t(e)]++ % int64_t(h.size()))];
      plan.pairs.push_back({row, e, rank});
      auto& dst = plan.rows[size_t(rank)];
      if (dst.empty() || dst.back() != row) dst.push_back(row);
    }
  }
  return plan;
}

}  // namespace strata::models
