// The dispatch of one MoE layer's batch under expert parallelism: which rank computes each
// (row, expert) pair, and which rows go to each rank. A replicated expert's rows are dealt
// to its holders in turn, by their order in the batch (the i-th row routed to it goes to
// holder i mod count), so the plan depends only on the routing and the placement, never on
// timing, and every rank computes the same one. A layer routed by token id (DeepSeek-V4's
// hash layers: Model::token_experts) has its plan from the ids alone, before the layer's
// activations exist.
#pragma once
#include <cstdint>
#include <vector>

#include "models/expert_placement.h"

namespace strata::models {

struct DispatchPlan {
  struct Pair {
    int64_t row = 0, expert = 0;
    int rank = 0;
    bool operator==(const Pair&) const = default;
  };
  // Every (row, expert) pair in row order, each row's experts in routing order. An expert
  // listed twice in a row appears once (moe_forward runs it once for that row).
  std::vector<Pair> pairs;
  // rows[r]: the rows sent to rank r, ascending, each once however many of its experts r
  // computes (the order of the rank's receive buffer).
  std::vector<std::vector<int64_t>> rows;

  std::vector<int64_t> send_counts() const;  // rows[r].size() per rank
  std::vector<int64_t> rank_pairs() const;   // pairs computed per rank (its expert work)
  bool operator==(const DispatchPlan&) const = default;
};

// experts: [n_rows, topk] expert ids, row-major, each row in routing order.
DispatchPlan plan_dispatch(const ExpertPlacement& p, const int64_t* experts, int64_t n_rows, int64_t topk);

}  // namespace strata::models
