// Logprobs: normalization, top-N order, ranks, and the candidate (processed) form.
#include "engine/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "engine/sampling_params.h"

namespace strata {
namespace {

TEST(Logprobs, RawAreNormalized) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0, 4);
  std::vector<float> l(300);
  for (auto& x : l) x = d(rng) + 1000.0f;  // large offset: needs the max shift
  double sum = 0;
  for (int32_t t = 0; t < 300; ++t) sum += std::exp(double(logprobs_from_logits(l, t, 0).logprob));
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

TEST(Logprobs, HandComputed) {
  std::vector<float> l = {0.0f, std::log(3.0f), -std::numeric_limits<float>::infinity()};
  auto r = logprobs_from_logits(l, 0, 3);
  EXPECT_NEAR(r.logprob, std::log(0.25), 1e-6);
  EXPECT_EQ(r.rank, 2);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].token, 1);
  EXPECT_NEAR(r.top[0].logprob, std::log(0.75), 1e-6);
  EXPECT_EQ(r.top[2].token, 2);
  EXPECT_EQ(r.top[2].logprob, -std::numeric_limits<float>::infinity());
}

TEST(Logprobs, TopNOrderAndTies) {
  std::vector<float> l = {1, 3, 2, 3, 0, 3};
  auto r = logprobs_from_logits(l, 2, 4);
  ASSERT_EQ(r.top.size(), 4u);
  std::vector<int32_t> ids;
  for (auto& t : r.top) ids.push_back(t.token);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 3, 5, 2}));  // equal logprobs: lower id first
  EXPECT_EQ(r.top[0].logprob, r.top[1].logprob);
  EXPECT_GT(r.top[2].logprob, r.top[3].logprob);
  EXPECT_EQ(r.rank, 4);  // three tokens strictly more likely
  EXPECT_TRUE(logprobs_from_logits(l, 2, 0).top.empty());
}

TEST(Logprobs, TopNMatchesFullSortOnLargeVocab) {
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0, 3);
  std::vector<float> l(129280);
  for (auto& x : l) x = d(rng);
  auto r = logprobs_from_logits(l, 17, kMaxLogprobs);
  std::vector<int32_t> order(l.size());
  for (size_t i = 0; i < l.size(); ++i) order[i] = int32_t(i);
  std::partial_sort(order.begin(), order.begin() + 20, order.end(),
                    [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
  ASSERT_EQ(r.top.size(), 20u);
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(r.top[i].token, order[i]);
  for (size_t i = 1; i < 20; ++i) EXPECT_GE(r.top[i - 1].logprob, r.top[i].logprob);
}

TEST(Logprobs, FromCandidates) {
  // Weights 1, 0.5, 0.5 -> probabilities 0.5, 0.25, 0.25; vocabulary of 6.
  std::vector<Candidate> c = {{std::log(0.5f), 0.5f, 4}, {0, 1, 2}, {std::log(0.5f), 0.5f, 1}};
  auto r = logprobs_from_candidates(c, 6, 4, 5);
  EXPECT_NEAR(r.logprob, std::log(0.25), 1e-6);
  EXPECT_EQ(r.rank, 2);
  ASSERT_EQ(r.top.size(), 5u);
  EXPECT_EQ(r.top[0].token, 2);
  EXPECT_NEAR(r.top[0].logprob, std::log(0.5), 1e-6);
  EXPECT_EQ(r.top[1].token, 1);
  EXPECT_EQ(r.top[2].token, 4);
  // Filled with the lowest ids outside the distribution, at -inf.
  EXPECT_EQ(r.top[3].token, 0);
  EXPECT_EQ(r.top[4].token, 3);
  EXPECT_EQ(r.top[4].logprob, -std::numeric_limits<float>::infinity());
  double sum = 0;
  for (auto& t : r.top) sum += std::exp(double(t.logprob));
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

}  // namespace
}  // namespace strata
