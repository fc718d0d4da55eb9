// Routed experts spread over the ranks of src/dist (`mpirun -np N`). Every rank holds the
// whole batch's activations (attention, mHC, the shared expert and the head are replicated),
// so no activation travels: each rank runs its share of the (expert, row) pairs and the
// outputs (bf16 values, sent as bf16) are gathered on every rank, in rank order. The sum over
// a row's experts then runs in ascending expert id on every rank, as in one process, so the
// result is bitwise that of one process.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/expert_placement.h"

namespace strata {
class SafetensorsCheckpoint;
}

namespace strata::models {

// The placement a model loaded now gives its `experts` routed experts: contiguous shards over
// dist::size() ranks (one rank, everything local, inside a LocalExperts scope).
ExpertPlacement placement_at_load(int64_t experts);

// While one lives, models load with every expert local on this rank: a test's one-process
// reference inside an MPI job. Not thread-safe: loads happen on one thread.
class LocalExperts {
 public:
  LocalExperts();
  ~LocalExperts();
  LocalExperts(const LocalExperts&) = delete;
  LocalExperts& operator=(const LocalExperts&) = delete;
};

// The rank that computes the i-th row (in the job's row order) routed to `expert`: its holders
// in turn (as plan_dispatch deals them).
int computing_rank(const ExpertPlacement& p, int64_t expert, int64_t i);
// Whether every pair of the layer runs on this rank (one rank, or everything local).
inline bool all_local(const ExpertPlacement& p) { return p.ranks <= 1; }

// One routed expert's share of a layer's batch.
struct ExpertJob {
  int64_t expert = 0;
  int64_t rows = 0;
  float* out = nullptr;  // [rows, dim]
};
// Fills the rows of `jobs` (in ascending expert id) that other ranks computed, from their
// outputs; this rank's rows (computing_rank == rank) must hold its results, bf16 values.
// Every rank calls it with the same jobs (the routing is replicated).
void gather_expert_outputs(const ExpertPlacement& p, int rank, const std::vector<ExpertJob>& jobs, int64_t dim);

// The routed expert a tensor name belongs to (the number after `marker`, e.g.
// "layers.3.ffn.experts.17.w1.weight" → 17), none for other tensors.
std::optional<int64_t> routed_expert_of(const std::string& tensor, const std::string& marker = ".experts.");

// What each rank of an N-rank job reads of a checkpoint: every tensor but the routed experts
// of other ranks (contiguous shards of the experts its tensor names number).
struct RankShare {
  int rank = 0;
  int64_t first_expert = 0, experts = 0;
  uint64_t bytes = 0;
};
std::vector<RankShare> rank_shares(const SafetensorsCheckpoint& ckpt, int ranks);

}  // namespace strata::models
