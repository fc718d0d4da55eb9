// Expert parallelism's pieces that run in one process: which rank computes an expert's rows,
// tensor names to experts, each rank's share of a checkpoint, and the gather's one-rank case.
// The bitwise equality with one process under mpirun is tests/dist/expert_parallel_mpirun.cpp.
#include <gtest/gtest.h>

#include "dist/world.h"
#include "io/safetensors.h"
#include "models/dsv4_fixture.h"
#include "models/expert_balance.h"
#include "models/expert_parallel.h"

namespace strata::models {
namespace {

TEST(ExpertParallel, RoutedExpertOfReadsTheNumberAfterTheMarker) {
  EXPECT_EQ(routed_expert_of("layers.3.ffn.experts.17.w1.weight"), 17);
  EXPECT_EQ(routed_expert_of("mtp.0.ffn.experts.0.w2.scale"), 0);
  EXPECT_EQ(routed_expert_of("model.layers.1.mlp.experts.255.down_proj.weight"), 255);
  EXPECT_FALSE(routed_expert_of("layers.3.ffn.shared_experts.w1.weight"));
  EXPECT_FALSE(routed_expert_of("layers.3.ffn.experts.w1"));
  EXPECT_FALSE(routed_expert_of("layers.3.ffn.experts.12"));
  EXPECT_FALSE(routed_expert_of("layers.3.attn.wq_a.weight"));
}

TEST(ExpertParallel, ReplicatedExpertsDealTheirRowsInTurn) {
  ExpertPlacement p = contiguous_placement(4, 2);
  p.holders[1] = {0, 1};
  EXPECT_EQ(computing_rank(p, 1, 0), 0);
  EXPECT_EQ(computing_rank(p, 1, 1), 1);
  EXPECT_EQ(computing_rank(p, 1, 2), 0);
  EXPECT_EQ(computing_rank(p, 3, 5), 1);
  EXPECT_TRUE(all_local(contiguous_placement(4, 1)));
  EXPECT_FALSE(all_local(p));
}

TEST(ExpertParallel, OneProcessLoadsEveryExpertHere) {
  EXPECT_EQ(dist::size(), 1);
  EXPECT_TRUE(all_local(placement_at_load(256)));
  std::vector<float> out = {1.0f, 2.0f};
  gather_expert_outputs(placement_at_load(256), 0, {{3, 1, out.data()}}, 2);  // nothing to gather
  EXPECT_EQ(out, (std::vector<float>{1.0f, 2.0f}));
  // a placement over more ranks than the job has is refused, not half-gathered
  EXPECT_THROW(gather_expert_outputs(contiguous_placement(4, 2), 0, {{3, 1, out.data()}}, 2), Error);
}

TEST(ExpertParallel, RankSharesSplitOnlyTheRoutedExperts) {
  dsv4::testing::TinyModel tiny;
  const auto& ck = tiny.model->checkpoint();
  uint64_t file_bytes = 0, expert_bytes = 0;
  for (const auto& f : ck.files()) file_bytes += f->mapped().size();
  for (const TensorInfo* t : ck.all())
    if (routed_expert_of(t->name)) expert_bytes += t->nbytes;
  ASSERT_GT(expert_bytes, 0u);
  const auto one = rank_shares(ck, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].bytes, file_bytes);
  EXPECT_EQ(one[0].experts, 16);
  const auto three = rank_shares(ck, 3);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[0].experts, 6);
  EXPECT_EQ(three[1].first_expert, 6);
  EXPECT_EQ(three[2].first_expert + three[2].experts, 16);
  // every expert's bytes are read by exactly one rank; the rest by all
  uint64_t sum = 0;
  for (const auto& s : three) sum += s.bytes;
  EXPECT_EQ(sum, 3 * (file_bytes - expert_bytes) + expert_bytes);
  EXPECT_THROW(rank_shares(ck, 0), Error);
}

TEST(ExpertParallel, TheModelHoldsEveryTensorInOneProcess) {
  dsv4::testing::TinyModel tiny;
  EXPECT_TRUE(tiny.model->expert_parallel());
  EXPECT_TRUE(tiny.model->holds_tensor("layers.0.ffn.experts.5.w1.weight"));
  EXPECT_TRUE(all_local(tiny.model->weights().layers[0].ffn.placement));
}

TEST(ExpertParallel, BalancingInOneProcessPlacesNothingAndChecksItsInput) {
  dsv4::testing::TinyModel tiny;
  EXPECT_TRUE(balance_experts(*tiny.model, {1, 2, 3, 3, 3}, 2).empty());
  EXPECT_TRUE(all_local(tiny.model->weights().layers[0].ffn.placement));
  EXPECT_THROW(balance_experts(*tiny.model, {}, 2), Error);
  EXPECT_THROW(balance_experts(*tiny.model, {1}, -2), Error);
  // a placement for another rank count than the job's is refused
  EXPECT_THROW(tiny.model->place_experts(0, contiguous_placement(16, 2)), Error);
  EXPECT_THROW(tiny.model->place_experts(99, contiguous_placement(16, 1)), Error);
  tiny.model->place_experts(0, contiguous_placement(16, 1));
}

TEST(DistWorld, AWorldOfOneIsANoOp) {
  EXPECT_EQ(dist::rank(), 0);
  EXPECT_EQ(dist::size(), 1);
  EXPECT_EQ(dist::broadcast_u64(42), 42u);
  EXPECT_EQ(dist::broadcast_string("x"), "x");
  EXPECT_EQ(dist::allgather_string("abc"), (std::vector<std::string>{"abc"}));
  std::vector<int64_t> sizes;
  const char data[] = "hello";
  EXPECT_EQ(dist::allgatherv(data, 5, &sizes).size(), 5u);
  EXPECT_EQ(sizes, (std::vector<int64_t>{5}));
  dist::check_same_on_all_ranks("anything", "value");
}

}  // namespace
}  // namespace strata::models
