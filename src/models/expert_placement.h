// Which ranks hold which routed experts under expert parallelism. Every expert has a home
// rank (contiguous shards, the first E mod N ranks one expert more); EPLB may add replicas of
// the hottest experts on other ranks, within a per-rank slot budget, from per-expert load
// statistics (for hash-routed layers: token frequencies through tid2eid). Everything here is
// a pure function of its inputs, so every rank computes the same placement.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::models {

struct ExpertPlacement {
  int64_t experts = 0;
  int ranks = 0;
  // holders[e]: the ranks holding expert e, its home rank first, then replicas in the order
  // they were added.
  std::vector<std::vector<int>> holders;

  int home(int64_t e) const { return holders[size_t(e)].front(); }
  // Experts (home and replica slots) each rank holds.
  std::vector<int64_t> slots_used() const;
  // The experts rank r holds, ascending.
  std::vector<int64_t> experts_of(int r) const;
};

// Whether entry k of a row's routed experts is the expert's first listing in the row: an expert
// a tid2eid row names twice runs once for that row (moe_forward), so plans and loads count it
// once.
inline bool first_listing(const int64_t* row_experts, int64_t k) {
  for (int64_t j = 0; j < k; ++j)
    if (row_experts[j] == row_experts[k]) return false;
  return true;
}

// Experts [first, first + count) of rank r in contiguous shards of `experts` over `ranks`.
struct Shard {
  int64_t first = 0, count = 0;
};
Shard contiguous_shard(int64_t experts, int ranks, int r);

// Every expert on exactly one rank, in contiguous shards (Error for ranks < 1 or experts < 1).
ExpertPlacement contiguous_placement(int64_t experts, int ranks);

// Rank loads when expert e's load is split evenly among its holders.
std::vector<double> rank_loads(const ExpertPlacement& p, const std::vector<double>& expert_load);

// EPLB: `base` with replicas added while they help. Each step takes the most loaded rank
// (lowest id on ties), and the expert on it with the largest share of load per holder; that
// expert gets a replica on the least loaded rank with a free slot that does not hold it
// already, provided that rank's load stays below the busiest rank's. Then the next step, until
// no such move is left. A rank holds at most slots_per_rank experts (at least its home shard's
// count; Error when smaller than the largest shard). Loads use the even split of rank_loads.
ExpertPlacement replicate_hot_experts(const ExpertPlacement& base, const std::vector<double>& expert_load,
                                      int64_t slots_per_rank);

}  // namespace strata::models
