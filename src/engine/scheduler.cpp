#include "engine/scheduler.h"

#include <algorithm>

namespace strata::engine {

StepPlan plan_step(const std::vector<SchedSeq>& seqs, int64_t token_budget, int64_t cache_budget,
                   const std::function<int64_t(int64_t)>& bytes_for) {
  const size_t n = seqs.size();
  std::vector<bool> alive(n, true);
  StepPlan plan;
  while (true) {
    plan.chunk.assign(n, 0);
    int64_t left = std::max<int64_t>(token_budget, 1);
    for (size_t i = 0; i < n && left > 0; ++i)
      if (alive[i] && seqs[i].pending == 1) plan.chunk[i] = 1, --left;
    for (size_t i = 0; i < n && left > 0; ++i)
      if (alive[i] && seqs[i].pending > 1) {
        plan.chunk[i] = std::min(seqs[i].pending, left);
        left -= plan.chunk[i];
      }
    plan.bytes = 0;
    for (size_t i = 0; i < n; ++i)
      if (alive[i]) plan.bytes += bytes_for(seqs[i].context + plan.chunk[i]);
    size_t live = 0, newest = n;
    for (size_t i = 0; i < n; ++i)
      if (alive[i]) ++live, newest = i;
    // The oldest request alone always stays: submit() rejected requests the pool cannot hold.
    if (plan.bytes <= cache_budget || live <= 1) return plan;
    alive[newest] = false;
    plan.preempt.push_back(newest);
  }
}

}  // namespace strata::engine
