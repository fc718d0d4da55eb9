// Run under `mpirun -np N` (tests/CMakeLists.txt registers N = 2 and 3): the routed experts of a
// flash-tiny checkpoint spread over the ranks must give bitwise the logits of one process —
// batched prefill and decode, the MTP block, both numerics profiles. The one-process reference
// is the same checkpoint loaded inside a LocalExperts scope, on every rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "dist/world.h"
#include "models/deepseek_v4/make_model.h"
#include "models/deepseek_v4/model.h"
#include "models/deepseek_v4/presets.h"
#include "models/expert_parallel.h"
#include "models/numerics_profiles.h"

namespace strata::dsv4 {
namespace {

// Rank 0 writes the checkpoint; every rank reads the same directory.
std::string shared_model_dir() {
  static const std::string dir = [] {
    std::string d;
    if (dist::rank() == 0) {
      d = (std::filesystem::temp_directory_path() / ("strata_ep_" + std::to_string(::getpid()))).string();
      MakeModelOptions o;
      o.config = preset_config("flash-tiny");
      o.seed = 11;
      o.out_dir = d;
      make_model(o);
    }
    return dist::broadcast_string(d);
  }();
  return dir;
}

// Every even expert of every main layer held by all ranks (its rows dealt to them in turn), the
// odd ones by their home rank: the exchange's replicated case at its most.
models::ExpertPlacement replicated_placement(int64_t experts) {
  models::ExpertPlacement p = models::contiguous_placement(experts, dist::size());
  for (int64_t e = 0; e < experts; e += 2) {
    auto& h = p.holders[size_t(e)];
    for (int r = 0; r < dist::size(); ++r)
      if (r != h.front()) h.push_back(r);
  }
  return p;
}

struct Models {
  std::unique_ptr<Model> spread, replicated, local;
  Models() {
    spread = Model::load(shared_model_dir());
    replicated = Model::load(shared_model_dir());
    for (int64_t l = 0; l < replicated->config().num_hidden_layers; ++l)
      replicated->place_experts(l, replicated_placement(replicated->config().n_routed_experts));
    models::LocalExperts scope;
    local = Model::load(shared_model_dir());
  }
};

const Models& models_once() {
  static const Models m;
  return m;
}

std::vector<int64_t> ids(int64_t n, int64_t salt) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back((i * 7919 + salt * 104729 + 3) % 129280);
  return v;
}

TEST(ExpertParallelMpirun, RunsOnSeveralRanks) { EXPECT_GT(dist::size(), 1) << "start this test under mpirun -np N"; }

TEST(ExpertParallelMpirun, EachRankHoldsItsContiguousShard) {
  const Model& m = *models_once().spread;
  const int64_t E = m.config().n_routed_experts;
  const auto shard = models::contiguous_shard(E, dist::size(), dist::rank());
  EXPECT_EQ(m.weights().layers[0].ffn.placement.ranks, dist::size());
  for (int64_t e = 0; e < E; ++e) {
    const bool mine = e >= shard.first && e < shard.first + shard.count;
    EXPECT_EQ(m.holds_tensor("layers.1.ffn.experts." + std::to_string(e) + ".w2.weight"), mine) << e;
  }
  EXPECT_TRUE(m.holds_tensor("layers.0.ffn.shared_experts.w1.weight"));
  EXPECT_TRUE(m.holds_tensor("layers.0.attn.wq_a.weight"));
  EXPECT_TRUE(models_once().local->holds_tensor("layers.1.ffn.experts.0.w2.weight"));
  // replicas: every rank holds the even experts of the main layers, the MTP block keeps shards
  const Model& r = *models_once().replicated;
  for (int64_t e = 0; e < E; ++e) {
    const bool mine = e % 2 == 0 || (e >= shard.first && e < shard.first + shard.count);
    EXPECT_EQ(r.holds_tensor("layers.2.ffn.experts." + std::to_string(e) + ".w1.weight"), mine) << e;
  }
  EXPECT_EQ(r.holds_tensor("mtp.0.ffn.experts." + std::to_string(E - 2) + ".w1.weight"),
            E - 2 >= shard.first && E - 2 < shard.first + shard.count);
  EXPECT_THROW(const_cast<Model&>(r).place_experts(0, models::contiguous_placement(E + 1, dist::size())), Error);
}

class ExpertParallelEveryProfile : public strata::testing::ProfileTest {};

class ExpertParallelEveryLayout : public ::testing::TestWithParam<std::tuple<Numerics, bool>> {
 protected:
  ScopedNumerics profile_{std::get<0>(GetParam())};
};

TEST_P(ExpertParallelEveryLayout, BatchedLogitsEqualOneProcess) {
  const Model& ep = std::get<1>(GetParam()) ? *models_once().replicated : *models_once().spread;
  const Model& one = *models_once().local;
  std::vector<SequenceState> a, b;
  for (int i = 0; i < 3; ++i) a.push_back(ep.new_state()), b.push_back(one.new_state());
  for (int step = 0; step < 4; ++step) {
    // step 0: prefills of different lengths in one batch; then decode, with a chunk at step 2
    const std::vector<int64_t> n = {step == 0 ? 37 : 1, step == 0 ? 5 : 1, step == 0 ? 130 : (step == 2 ? 9 : 1)};
    std::vector<std::vector<int64_t>> chunk;
    for (int i = 0; i < 3; ++i) chunk.push_back(ids(n[size_t(i)], 10 * step + i));
    std::vector<Model::BatchItem> x, y;
    for (int i = 0; i < 3; ++i) {
      x.push_back({&a[size_t(i)], chunk[size_t(i)].data(), n[size_t(i)], true, false});
      y.push_back({&b[size_t(i)], chunk[size_t(i)].data(), n[size_t(i)], true, false});
    }
    ep.forward_batch(x);
    one.forward_batch(y);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(x[size_t(i)].out, y[size_t(i)].out) << "step " << step << " seq " << i;
  }
  // a single sequence alone (decode at batch 1)
  const auto t = ids(1, 99);
  EXPECT_EQ(ep.forward(a[0], t.data(), 1), one.forward(b[0], t.data(), 1));
}

TEST_P(ExpertParallelEveryProfile, MtpBlockEqualsOneProcess) {
  const Model& ep = *models_once().spread;
  const Model& one = *models_once().local;
  ASSERT_GE(ep.n_mtp(), 1);
  SequenceState a = ep.new_state(), b = one.new_state();
  const auto p = ids(24, 5);
  std::vector<float> ha, hb;
  ep.forward(a, p.data(), 24, &ha);
  one.forward(b, p.data(), 24, &hb);
  ASSERT_EQ(ha, hb);
  const auto next = ids(24, 6);
  EXPECT_EQ(ep.mtp_forward(a, ha.data(), next.data(), 24), one.mtp_forward(b, hb.data(), next.data(), 24));
}

STRATA_EVERY_PROFILE(ExpertParallelEveryProfile);
INSTANTIATE_TEST_SUITE_P(Layouts, ExpertParallelEveryLayout,
                         ::testing::Combine(::testing::Values(Numerics::exact, Numerics::fast), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(numerics_name(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_replicated" : "_shards");
                         });

TEST(ExpertParallelMpirun, DisagreementNamesTheRank) {
  dist::check_same_on_all_ranks("value", "same");  // no throw
  try {
    dist::check_same_on_all_ranks("checkpoint", dist::rank() == dist::size() - 1 ? "other" : "same");
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(dist::size() - 1) + "'s checkpoint differs"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace strata::dsv4

int main(int argc, char** argv) {
  strata::dist::init(&argc, &argv);
  // --stuck-last-rank (tests/dist/stuck_rank_test.sh): the last rank never joins; the others
  // must end the job after STRATA_MPI_TIMEOUT seconds instead of waiting for ever.
  if (argc > 1 && std::string(argv[1]) == "--stuck-last-rank") {
    if (strata::dist::rank() == strata::dist::size() - 1) {
      ::sleep(120);
      return 3;
    }
    strata::dist::allgather_string("waiting");
    return 4;  // not reached: the timeout ends the job
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (strata::dist::rank() == 0) {
    std::error_code ec;
    std::filesystem::remove_all(strata::dsv4::shared_model_dir(), ec);
  }
  strata::dist::finalize();
  return rc;
}
