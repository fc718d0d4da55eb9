// EPLB in a running job: the hottest experts of each layer routed by token id get replicas on
// other ranks, from token-frequency statistics (a sample of text the job's traffic resembles).
// Every rank must call it with the same ids (rank 0's, broadcast), so every rank places the
// same replicas; the exchange deals a replicated expert's rows to its holders in turn, so the
// output stays bitwise that of one process. Layers routed by their activations keep their
// contiguous shards: their load is not known before they run.
#pragma once
#include <cstdint>
#include <vector>

#include "models/model.h"

namespace strata::models {

struct LayerBalance {
  int64_t layer = 0;
  int64_t replicas = 0;                    // replica slots added
  double rank_imbalance_before = 0;        // busiest rank / mean on the sample, contiguous shards
  double rank_imbalance_after = 0;         // the same with the replicas
};

// Places replicas on every token-routed layer of m (a DeepSeek-V4 model; Error for another)
// within `extra_slots` slots per rank beyond the largest shard (-1: an eighth of it, at least
// 1). Nothing in a one-rank job.
std::vector<LayerBalance> balance_experts(Model& m, const std::vector<int64_t>& sample_ids, int64_t extra_slots);

}  // namespace strata::models
