// Load statistics of an MoE layer's dispatch: how evenly the work falls on experts and ranks
// (max over mean: 1 is perfect balance, and the busiest one sets a step's pace), and the
// per-expert load that EPLB replicates from (for a layer routed by token id: token frequencies).
#pragma once
#include <cstdint>
#include <vector>

#include "models/dispatch_plan.h"

namespace strata::models {

struct LoadStats {
  double max = 0, mean = 0;
  double imbalance() const { return mean > 0 ? max / mean : 0; }  // max / mean
};
LoadStats load_stats(const std::vector<double>& loads);
LoadStats load_stats(const std::vector<int64_t>& loads);

struct DispatchLoad {
  LoadStats expert;  // (row, expert) pairs per expert, over all experts
  LoadStats rank;    // pairs computed per rank
  LoadStats sent;    // rows sent per rank
};
DispatchLoad dispatch_load(const DispatchPlan& plan, int64_t experts);

// (row, expert) pairs per expert.
std::vector<int64_t> expert_pairs(const DispatchPlan& plan, int64_t experts);

// Load per expert of rows seen `counts[i]` times each: experts [n_rows, topk] (a row's expert
// listed twice counts once, as in a plan).
std::vector<double> weighted_expert_load(const int64_t* experts, const int64_t* counts, int64_t n_rows, int64_t topk,
                                         int64_t n_experts);

}  // namespace strata::models
