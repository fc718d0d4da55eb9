// Expert-parallel planning without any transport: placements of routed experts over ranks
// (contiguous shards, EPLB replicas within a slot budget), dispatch plans, and their load
// statistics; for a hash-routed layer of a random flash-tiny checkpoint, the plan from the
// token ids alone equals the plan of the rows route() routes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"
#include "core/numfmt.h"
#include "models/dispatch_plan.h"
#include "models/dsv4_fixture.h"
#include "models/expert_load.h"
#include "models/expert_placement.h"
#include "models/token_routing.h"

namespace strata::dsv4 {
namespace {

using models::contiguous_placement;
using models::contiguous_shard;
using models::DispatchLoad;
using models::DispatchPlan;
using models::ExpertPlacement;
using models::load_stats;
using models::plan_dispatch;
using models::plan_token_dispatch;
using models::rank_loads;
using models::replicate_hot_experts;
using models::Shard;

// Ids skewed as text is: a few ids repeat often (the hash layers' hot experts).
std::vector<int64_t> skewed_ids(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (auto& t : ids) t = rng() % 2 ? int64_t(rng() % 5) : int64_t(rng() % uint32_t(vocab));
  return ids;
}

// Every holder list names distinct ranks in range, home first, and no rank over its budget.
void expect_valid(const ExpertPlacement& p, int64_t slots_per_rank) {
  for (int64_t e = 0; e < p.experts; ++e) {
    auto h = p.holders[size_t(e)];
    ASSERT_FALSE(h.empty()) << e;
    for (int r : h) {
      EXPECT_GE(r, 0);
      EXPECT_LT(r, p.ranks);
    }
    std::sort(h.begin(), h.end());
    EXPECT_EQ(std::unique(h.begin(), h.end()), h.end()) << "expert " << e << " held twice by a rank";
  }
  for (int64_t n : p.slots_used()) EXPECT_LE(n, slots_per_rank);
}

TEST(ExpertPlacement, ContiguousShardsHoldEveryExpertOnce) {
  for (int64_t experts : {16, 256, 7}) {
    for (int ranks : {1, 2, 3}) {
      const ExpertPlacement p = contiguous_placement(experts, ranks);
      ASSERT_EQ(int64_t(p.holders.size()), experts);
      std::vector<int> seen(size_t(experts), 0);
      for (int r = 0; r < ranks; ++r) {
        const auto mine = p.experts_of(r);
        const Shard s = contiguous_shard(experts, ranks, r);
        ASSERT_EQ(int64_t(mine.size()), s.count) << experts << " over " << ranks;
        for (size_t i = 0; i < mine.size(); ++i) {
          EXPECT_EQ(mine[i], s.first + int64_t(i));  // contiguous
          ++seen[size_t(mine[i])];
        }
        // shards differ by one expert at most (16 over 3: 6, 5, 5)
        EXPECT_LE(s.count, experts / ranks + 1);
        EXPECT_GE(s.count, experts / ranks);
      }
      for (int64_t e = 0; e < experts; ++e) {
        EXPECT_EQ(seen[size_t(e)], 1) << "expert " << e << " of " << experts << " over " << ranks;
        EXPECT_EQ(p.holders[size_t(e)].size(), 1u);
      }
    }
  }
  EXPECT_THROW(contiguous_placement(16, 0), Error);
}

// Zipf-like expert loads, hottest experts all in rank 0's shard: replicas move load off it.
std::vector<double> skewed_load(int64_t experts) {
  std::vector<double> l(static_cast<size_t>(experts));
  for (int64_t e = 0; e < experts; ++e) l[size_t(e)] = 1000.0 / std::pow(double(e + 1), 1.2);
  return l;
}

TEST(ExpertPlacement, ReplicasStayWithinTheSlotBudgetAndLowerTheBusiestRank) {
  const int64_t E = 16;
  const auto load = skewed_load(E);
  for (int ranks : {2, 3, 4}) {
    const ExpertPlacement base = contiguous_placement(E, ranks);
    const int64_t shard = contiguous_shard(E, ranks, 0).count;
    const auto before = rank_loads(base, load);
    for (int64_t extra : {1, 2, 4}) {
      const ExpertPlacement p = replicate_hot_experts(base, load, shard + extra);
      expect_valid(p, shard + extra);
      for (int64_t e = 0; e < E; ++e) EXPECT_EQ(p.home(e), base.home(e)) << "the home shard stays";
      const auto after = rank_loads(p, load);
      EXPECT_LT(load_stats(after).max, load_stats(before).max) << ranks << " ranks, " << extra << " extra slots";
      EXPECT_NEAR(load_stats(after).mean, load_stats(before).mean, 1e-9) << "replicas split load, never add it";
      // the hottest expert got a replica
      EXPECT_GT(p.holders[0].size(), 1u);
    }
    // no free slot (every shard full where the ranks divide the experts): nothing to add
    if (E % ranks == 0) {
      EXPECT_EQ(replicate_hot_experts(base, load, shard).holders, base.holders);
    }
    EXPECT_THROW(replicate_hot_experts(base, load, shard - 1), Error);
  }
  // a balanced load gains nothing from a replica
  const ExpertPlacement two = contiguous_placement(E, 2);
  EXPECT_EQ(replicate_hot_experts(two, std::vector<double>(size_t(E), 1.0), 12).holders, two.holders);
}

TEST(DispatchPlan, ReplicatedExpertRowsAreDealtInBatchOrder) {
  ExpertPlacement p = contiguous_placement(4, 2);  // experts 0-1 on rank 0, 2-3 on rank 1
  p.holders[0].push_back(1);                        // expert 0 also on rank 1
  // rows: {0,2}, {0,3}, {0,1}, {2,0}
  const std::vector<int64_t> ex = {0, 2, 0, 3, 0, 1, 2, 0};
  const DispatchPlan plan = plan_dispatch(p, ex.data(), 4, 2);
  const std::vector<DispatchPlan::Pair> want = {{0, 0, 0}, {0, 2, 1}, {1, 0, 1}, {1, 3, 1},
                                                {2, 0, 0}, {2, 1, 0}, {3, 2, 1}, {3, 0, 1}};
  EXPECT_EQ(plan.pairs, want);
  EXPECT_EQ(plan.rows[0], (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(plan.rows[1], (std::vector<int64_t>{0, 1, 3}));  // each row once however many experts
  EXPECT_EQ(plan.send_counts(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(plan.rank_pairs(), (std::vector<int64_t>{3, 5}));
  const DispatchLoad l = dispatch_load(plan, 4);
  EXPECT_DOUBLE_EQ(l.expert.max, 4.0);  // expert 0
  EXPECT_DOUBLE_EQ(l.expert.mean, 2.0);
  EXPECT_DOUBLE_EQ(l.rank.max, 5.0);
  EXPECT_DOUBLE_EQ(l.rank.mean, 4.0);
  // an expert listed twice in a row is computed once for it
  const std::vector<int64_t> dup = {1, 1};
  EXPECT_EQ(plan_dispatch(p, dup.data(), 1, 2).pairs.size(), 1u);
  const std::vector<int64_t> bad = {4, 0};
  EXPECT_THROW(plan_dispatch(p, bad.data(), 1, 2), Error);
}

// The plans of routed rows: route() per row with its activations (hash layers pick experts by
// the token id; the activations only weigh them) against plan_token_dispatch from the ids alone.
TEST(DispatchPlan, HashLayerPlanFromTokenIdsEqualsThePlanOfRoutedRows) {
  const testing::TinyModel tiny;
  const Model& m = *tiny.model;
  const int64_t n = 200, d = m.config().hidden_size;
  const auto ids = skewed_ids(n, m.config().vocab_size, 3);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(size_t(n * d));
  for (auto& v : x) v = round_bf16(nd(rng));
  const int64_t E = m.config().n_routed_experts;
  // the batch's distinct ids and their counts: EPLB's token frequencies
  std::vector<int64_t> distinct(ids), counts;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (int64_t t : distinct) counts.push_back(std::count(ids.begin(), ids.end(), t));
  const auto layers = models::moe_layers(m);
  ASSERT_EQ(int64_t(layers.size()), m.config().num_hidden_layers);
  for (int64_t layer = 0; layer < m.config().num_hash_layers; ++layer) {
    const MoeSpec& s = m.moe_spec(layer);
    const MoeWeights& w = m.weights().layers[size_t(layer)].ffn;
    ASSERT_TRUE(s.hash);
    ASSERT_TRUE(layers[size_t(layer)].by_token);
    EXPECT_EQ(layers[size_t(layer)].topk, s.topk);
    std::vector<int64_t> routed;  // route()'s experts, row by row
    for (int64_t r = 0; r < n; ++r) {
      const Routing rt = route(w, s, x.data() + r * d, ids[size_t(r)]);
      routed.insert(routed.end(), rt.experts.begin(), rt.experts.end());
    }
    const auto dk = models::token_experts(m, layer, distinct.data(), int64_t(distinct.size()));
    const auto load = models::weighted_expert_load(dk.data(), counts.data(), int64_t(distinct.size()), s.topk, E);
    for (int ranks : {1, 2, 3}) {
      const ExpertPlacement shards = contiguous_placement(E, ranks);
      const int64_t shard = contiguous_shard(E, ranks, 0).count;
      const ExpertPlacement replicated = replicate_hot_experts(shards, load, shard + 2);
      if (ranks > 1) {
        EXPECT_NE(replicated.holders, shards.holders) << "the repeated ids' experts get replicas";
      }
      for (const ExpertPlacement* p : {&shards, &replicated}) {
        const DispatchPlan from_ids = plan_token_dispatch(*p, m, layer, ids.data(), n);
        EXPECT_EQ(from_ids, plan_dispatch(*p, routed.data(), n, s.topk)) << "layer " << layer << ", " << ranks << " ranks";
        // every routed pair once, on a rank holding its expert, and its row sent there
        ASSERT_EQ(int64_t(from_ids.pairs.size()), n * s.topk);
        for (const auto& q : from_ids.pairs) {
          const auto& h = p->holders[size_t(q.expert)];
          EXPECT_NE(std::find(h.begin(), h.end(), q.rank), h.end());
          const auto& rows = from_ids.rows[size_t(q.rank)];
          EXPECT_TRUE(std::binary_search(rows.begin(), rows.end(), q.row));
        }
        // the same inputs, the same plan
        EXPECT_EQ(from_ids, plan_token_dispatch(*p, m, layer, ids.data(), n));
      }
      // the expert load from the counts is the plan's pairs per expert
      const auto pairs = models::expert_pairs(plan_token_dispatch(shards, m, layer, ids.data(), n), E);
      for (int64_t e = 0; e < E; ++e) EXPECT_EQ(double(pairs[size_t(e)]), load[size_t(e)]);
      if (ranks > 1) {
        const DispatchLoad before = models::dispatch_load(plan_token_dispatch(shards, m, layer, ids.data(), n), E);
        const DispatchLoad after = models::dispatch_load(plan_token_dispatch(replicated, m, layer, ids.data(), n), E);
        EXPECT_LT(after.rank.max, before.rank.max) << "layer " << layer << ", " << ranks << " ranks";
        EXPECT_EQ(after.rank.mean, before.rank.mean);
        EXPECT_EQ(after.expert.max, before.expert.max) << "replicas split an expert's rows, not its load";
      }
    }
  }
  // a score-routed layer's experts need its activations
  const int64_t scored = m.config().num_hash_layers;
  EXPECT_FALSE(layers[size_t(scored)].by_token);
  EXPECT_THROW(plan_token_dispatch(contiguous_placement(E, 2), m, scored, ids.data(), n), Error);
  const int64_t outside = m.config().vocab_size;
  EXPECT_THROW(models::token_experts(m, 0, &outside, 1), Error);
}

}  // namespace
}  // namespace strata::dsv4
