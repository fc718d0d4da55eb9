// One engine step's plan, as a pure function of the running requests so it can be tested
// without a model: which requests run how many tokens, and which must be preempted to stay
// inside the cache budget.
//
// Policy: every request that is decoding (one token pending) gets its token first, in arrival
// order; the rest of the token budget goes to prefill chunks (prompts, or the recompute of a
// preempted request), also in arrival order, so the oldest request's prefill finishes first.
// When the cache the step would hold exceeds the budget, the most recently arrived request is
// preempted (its cache freed, recomputed later) until the step fits: the oldest requests keep
// making progress, so nothing starves and nothing thrashes forever.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace strata::engine {

struct SchedSeq {
  int64_t arrival = 0;   // submit order
  int64_t context = 0;   // tokens already in the cache
  int64_t pending = 0;   // tokens known but not yet in the cache (>= 1 while running)
};

struct StepPlan {
  std::vector<int64_t> chunk;      // per input sequence: tokens to run this step (0 = idle)
  std::vector<size_t> preempt;     // input indices to preempt, newest first
  int64_t bytes = 0;               // cache held after the step by the sequences that stay
};

// bytes_for(context) = cache one request holds at that context (the ledger's block-rounded
// figure). seqs must be in arrival order.
StepPlan plan_step(const std::vector<SchedSeq>& seqs, int64_t token_budget, int64_t cache_budget,
                   const std::function<int64_t(int64_t)>& bytes_for);

}  // namespace strata::engine
