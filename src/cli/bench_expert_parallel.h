// `strata bench --ep-ranks N`: expert-parallel dispatch planning of a model's routed experts
// over N ranks, from its routing tables alone (nothing is timed or run). A Zipf-distributed
// token stream over the vocabulary (seeded: the same stream on every run) goes through each
// MoE layer that routes by token id (models/token_routing.h); per layer it reports the FP8 dispatch bytes per
// token, the max/mean load of experts and of ranks in contiguous shards, and the ranks' load
// after EPLB replicates hot experts from token frequencies: those of a second, independent
// stream of the same distribution, of 64K tokens or the batch's if longer (replicas are placed
// before the traffic they serve), and
// those of the batch itself (the bound a planner that knows the batch's ids could reach).
// Score-routed layers pick experts from their activations and are listed as not planned.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::cli {

struct ExpertParallelOptions {
  int ranks = 2;
  double zipf = 1.1;          // exponent s: token of frequency rank k drawn with p ∝ k^-s
  int64_t tokens = 4096;      // the batch planned
  int64_t extra_slots = -1;   // replica slots per rank beyond the largest shard; -1: an eighth of it, at least 1
  uint64_t seed = 1;
};

// `count` token ids over [0, vocab), Zipf-distributed with exponent s, drawn with `seed`.
// Which id has which frequency rank is one fixed permutation, so that frequency does not
// follow id order and every seed samples the same frequent ids.
std::vector<int64_t> zipf_tokens(int64_t vocab, double s, int64_t count, uint64_t seed);

nlohmann::ordered_json bench_expert_parallel(const std::string& model_dir, const ExpertParallelOptions& o);
void print_expert_parallel(const nlohmann::ordered_json& j);

}  // namespace strata::cli
