// Each sampling step on its own, against hand-computed values and simple reference versions.
#include "engine/sampling_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/error.h"
#include "engine/penalties.h"
#include "engine/sampling_params.h"

namespace strata {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<int32_t> ids_of(std::vector<Candidate> c) {
  std::vector<int32_t> ids;
  for (const auto& x : c) ids.push_back(x.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<Candidate> process(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<Candidate> out;
  process_logits(logits, p, out);
  return out;
}

TEST(Argmax, LowestIdWinsTies) {
  EXPECT_EQ(argmax(std::vector<float>{1, 3, 3, 2}), 1);
  EXPECT_EQ(argmax(std::vector<float>{0, 0, 0, 0}), 0);
  EXPECT_EQ(argmax(std::vector<float>{-kInf, -5, -kInf, -5}), 1);
  EXPECT_EQ(argmax(std::vector<float>{-1, -2, 7}), 2);
}

// The drafts' unchecked choice: std::max_element's position wherever no NaN is present (random
// vectors of every length around the 16-lane body, with ties and -inf), NaN passed over.
TEST(FirstMaxIndex, EqualsMaxElementWithoutNan) {
  std::mt19937 rng(7);
  for (size_t n = 1; n <= 70; ++n)
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> v(n);
      for (auto& x : v) x = float(int(rng() % 9) - 4);  // small range: many ties
      if (trial % 3 == 0) v[rng() % n] = -kInf;
      if (trial % 5 == 0) v[rng() % n] = kInf;
      EXPECT_EQ(first_max_index(v), std::max_element(v.begin(), v.end()) - v.begin()) << n;
    }
  EXPECT_EQ(first_max_index(std::vector<float>{-kInf, -kInf}), 0);
  EXPECT_EQ(first_max_index(std::vector<float>{std::nanf(""), 1, 3, std::nanf(""), 3}), 2);
  EXPECT_EQ(first_max_index(std::vector<float>{std::nanf(""), std::nanf("")}), 0);
}

TEST(CheckedMax, RejectsNanInfAndAllMasked) {
  EXPECT_EQ(checked_max(std::vector<float>{-kInf, 2, 1}), 2.0f);
  EXPECT_THROW(checked_max(std::vector<float>{1, std::nanf(""), 2}), Error);
  EXPECT_THROW(checked_max(std::vector<float>{1, kInf}), Error);
  EXPECT_THROW(checked_max(std::vector<float>{-kInf, -kInf}), Error);
  EXPECT_THROW(argmax(std::vector<float>{std::nanf(""), 0}), Error);
}

TEST(Temperature, DividesShiftedLogits) {
  SamplingParams p;
  p.temperature = 0.5;
  auto c = process({1, 2, 3}, p);
  ASSERT_EQ(c.size(), 3u);
  // (l - 3) / 0.5
  EXPECT_EQ(c[0].logit, -4.0f);
  EXPECT_EQ(c[1].logit, -2.0f);
  EXPECT_EQ(c[2].logit, 0.0f);
  EXPECT_FLOAT_EQ(c[0].weight, std::exp(-4.0f));
  EXPECT_EQ(c[2].weight, 1.0f);
  // Masked tokens never become candidates.
  EXPECT_EQ(ids_of(process({1, -kInf, 3}, p)), (std::vector<int32_t>{0, 2}));
}

TEST(Temperature, TinyTemperatureDoesNotOverflow) {
  SamplingParams p;
  p.temperature = 1e-30;
  auto c = process({-1e30f, 0, 3e38f}, p);
  for (const auto& x : c) EXPECT_FALSE(std::isnan(x.weight));
  EXPECT_EQ(c.back().weight, 1.0f);
}

TEST(KthLargest, MatchesSortOnBothPaths) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(-50, 50);  // many ties
  std::vector<float> v(5000);
  for (auto& x : v) x = float(d(rng)) * 0.25f;
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  for (size_t k : {size_t(1), size_t(2), size_t(50), size_t(1024), size_t(1025), size_t(4000), size_t(5000)})
    EXPECT_EQ(kth_largest(v, k), sorted[k - 1]) << k;
  EXPECT_THROW(kth_largest(v, 0), Error);
  EXPECT_THROW(kth_largest(v, 5001), Error);
}

TEST(TopK, KeepsTheKLargest) {
  SamplingParams p;
  p.top_k = 2;
  EXPECT_EQ(ids_of(process({1, 5, 3, 4, 2}, p)), (std::vector<int32_t>{1, 3}));
  p.top_k = 1;
  EXPECT_EQ(ids_of(process({1, 5, 3, 4, 2}, p)), (std::vector<int32_t>{1}));
  p.top_k = 5;  // = vocabulary: disabled
  EXPECT_EQ(process({1, 5, 3, 4, 2}, p).size(), 5u);
  p.top_k = -1;
  EXPECT_EQ(process({1, 5, 3, 4, 2}, p).size(), 5u);
}

TEST(TopK, KeepsTiesWithTheKth) {
  // vLLM and HF mask logits < the k-th value, so every token equal to it survives.
  SamplingParams p;
  p.top_k = 2;
  EXPECT_EQ(ids_of(process({1, 5, 3, 3, 2}, p)), (std::vector<int32_t>{1, 2, 3}));
}

TEST(TopK, LargeVocabularyBothPaths) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0, 3);
  std::vector<float> v(129280);
  for (auto& x : v) x = d(rng);
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  SamplingParams p;
  for (int k : {1, 50, 2000}) {
    p.top_k = k;
    auto c = process(v, p);
    ASSERT_EQ(c.size(), size_t(k));  // continuous values: no ties
    for (const auto& x : c) EXPECT_GE(v[size_t(x.id)], sorted[size_t(k) - 1]);
  }
}

TEST(TopP, ExactBoundary) {
  // Four equal logits: each probability is exactly 1/4 and all sums are exact.
  SamplingParams p;
  std::vector<float> flat(4, 0.0f);
  p.top_p = 0.5;  // mass before token 2 is exactly 0.5, not < 0.5: the nucleus ends at 2 tokens
  EXPECT_EQ(ids_of(process(flat, p)), (std::vector<int32_t>{0, 1}));  // ties: lower ids first
  p.top_p = std::nextafter(0.5, 1.0);
  EXPECT_EQ(ids_of(process(flat, p)), (std::vector<int32_t>{0, 1, 2}));
  p.top_p = 0.25;
  EXPECT_EQ(ids_of(process(flat, p)), (std::vector<int32_t>{0}));
  p.top_p = 1e-9;
  EXPECT_EQ(ids_of(process(flat, p)), (std::vector<int32_t>{0}));
  p.top_p = 0.75;
  EXPECT_EQ(ids_of(process(flat, p)), (std::vector<int32_t>{0, 1, 2}));
  p.top_p = 1.0;
  EXPECT_EQ(process(flat, p).size(), 4u);
}

TEST(TopP, HandComputed) {
  // probabilities 0.5, 0.3, 0.15, 0.05 (logits are their logs)
  std::vector<float> l = {std::log(0.05f), std::log(0.5f), std::log(0.15f), std::log(0.3f)};
  SamplingParams p;
  p.top_p = 0.5;
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{1}));
  p.top_p = 0.6;
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{1, 3}));
  p.top_p = 0.9;
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{1, 2, 3}));
  p.top_p = 0.96;
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{0, 1, 2, 3}));
  // After top-k the mass is renormalized over the survivors: 0.5/0.8, 0.3/0.8.
  p.top_k = 2;
  p.top_p = 0.6;  // 0.625 >= 0.6 already
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{1}));
  p.top_p = 0.63;
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{1, 3}));
}

TEST(TopP, MatchesSortedReferenceOnLargeVocab) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0, 2);
  std::vector<float> v(20000);
  for (auto& x : v) x = d(rng);
  for (double top_p : {0.1, 0.5, 0.9, 0.99}) {
    SamplingParams p;
    p.top_p = top_p;
    auto got = ids_of(process(v, p));
    // Reference: sort everything, keep while the mass before the token is < p.
    SamplingParams none;
    auto all = process(v, none);
    std::sort(all.begin(), all.end(), precedes);
    double total = 0, before = 0;
    for (const auto& x : all) total += x.weight;
    std::vector<Candidate> kept;
    for (const auto& x : all) {
      if (before >= top_p * total) break;
      kept.push_back(x);
      before += x.weight;
    }
    EXPECT_EQ(got, ids_of(kept)) << top_p;
  }
}

TEST(TopP, LargeVocabWithTiesMatchesSortedReference) {
  // Few distinct logits: many ties inside every bucket and at the boundary.
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> d(-40, 0);
  std::vector<float> v(50000);
  for (auto& x : v) x = float(d(rng)) * 0.125f;
  for (double top_p : {0.05, 0.3, 0.7, 0.999}) {
    SamplingParams p;
    p.top_p = top_p;
    auto got = ids_of(process(v, p));
    SamplingParams none;
    auto all = process(v, none);
    std::sort(all.begin(), all.end(), precedes);
    double total = 0, before = 0;
    for (const auto& x : all) total += x.weight;
    std::vector<Candidate> kept;
    for (const auto& x : all) {
      if (before >= top_p * total) break;
      kept.push_back(x);
      before += x.weight;
    }
    EXPECT_EQ(got, ids_of(kept)) << top_p;
  }
}

TEST(TopP, LargeFlatVocabExactBoundary) {
  // 8192 equal logits (weights exactly 1): p = 1/2 keeps exactly the 4096 lowest ids.
  std::vector<float> flat(8192, 0.0f);
  SamplingParams p;
  p.top_p = 0.5;
  auto ids = ids_of(process(flat, p));
  ASSERT_EQ(ids.size(), 4096u);
  EXPECT_EQ(ids.back(), 4095);
  // One token far above the rest with p below its mass: only it survives.
  flat[5000] = 30.0f;
  EXPECT_EQ(ids_of(process(flat, p)), (std::vector<int32_t>{5000}));
}

TEST(TopP, TinyTemperatureOnLargeVocab) {
  // (l - max) / 1e-30 is -inf for every token but the top one.
  std::mt19937 rng(13);
  std::normal_distribution<float> d(0, 2);
  std::vector<float> v(10000);
  for (auto& x : v) x = d(rng);
  SamplingParams p;
  p.temperature = 1e-30;
  p.top_p = 0.9;
  auto c = process(v, p);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].id, argmax(v));
}

TEST(MinP, KeepsTokensAboveAFractionOfTheTop) {
  std::vector<float> l = {0.0f, std::log(0.5f), std::log(0.2f), std::log(0.05f)};
  SamplingParams p;
  p.min_p = 0.1;
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{0, 1, 2}));
  p.min_p = 0.3;
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{0, 1}));
  p.min_p = 1.0;
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{0}));
  // After temperature: T = 0.5 squares the ratios (1, .25, .04, .0025).
  p.min_p = 0.1;
  p.temperature = 0.5;
  EXPECT_EQ(ids_of(process(l, p)), (std::vector<int32_t>{0, 1}));
}

TEST(SampleIndex, InverseCdf) {
  std::vector<Candidate> c = {{0, 1, 10}, {0, 2, 11}, {0, 1, 12}};  // cdf 1/4, 3/4, 1
  EXPECT_EQ(sample_index(c, 0.0), 0u);
  EXPECT_EQ(sample_index(c, 0.2499), 0u);
  EXPECT_EQ(sample_index(c, 0.25), 1u);
  EXPECT_EQ(sample_index(c, 0.7499), 1u);
  EXPECT_EQ(sample_index(c, 0.75), 2u);
  EXPECT_EQ(sample_index(c, std::nextafter(1.0, 0.0)), 2u);
  std::vector<Candidate> zero_tail = {{0, 1, 0}, {-200, 0, 1}};
  EXPECT_EQ(sample_index(zero_tail, std::nextafter(1.0, 0.0)), 0u);  // never a zero weight
}

TEST(Penalties, HandComputed) {
  std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f, 1.0f, 0.0f};
  TokenHistory h;
  h.add_prompt(std::vector<int32_t>{0, 1, 5});
  for (int32_t t : {2, 2, 3}) h.add_output(t);
  SamplingParams p;
  p.repetition_penalty = 1.5;
  p.frequency_penalty = 0.5;
  p.presence_penalty = 0.25;
  ASSERT_TRUE(penalties_active(p));
  apply_penalties(l, h, p);
  EXPECT_FLOAT_EQ(l[0], 2.0f / 1.5f);                   // prompt, positive: divided
  EXPECT_FLOAT_EQ(l[1], -1.5f);                         // prompt, negative: multiplied
  EXPECT_FLOAT_EQ(l[2], 0.5f / 1.5f - 2 * 0.5f - 0.25f);  // output twice
  EXPECT_FLOAT_EQ(l[3], 3.0f / 1.5f - 0.5f - 0.25f);      // output once
  EXPECT_EQ(l[4], 1.0f);                                // unseen
  EXPECT_EQ(l[5], 0.0f);                                // zero stays zero
}

TEST(Penalties, EachAlone) {
  TokenHistory h;
  h.add_prompt(std::vector<int32_t>{0});
  for (int32_t t : {1, 1, 1}) h.add_output(t);
  auto run = [&](auto edit) {
    std::vector<float> l = {1.0f, 1.0f, 1.0f};
    SamplingParams p;
    edit(p);
    apply_penalties(l, h, p);
    return l;
  };
  // Presence and frequency ignore the prompt (OpenAI); repetition covers it (HF/vLLM).
  EXPECT_EQ(run([](auto& p) { p.presence_penalty = 1; }), (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(run([](auto& p) { p.frequency_penalty = 1; }), (std::vector<float>{1, -2, 1}));
  EXPECT_EQ(run([](auto& p) { p.frequency_penalty = -0.5; }), (std::vector<float>{1, 2.5, 1}));
  EXPECT_EQ(run([](auto& p) { p.repetition_penalty = 2; }), (std::vector<float>{0.5, 0.5, 1}));
  EXPECT_EQ(run([](auto& p) { p.repetition_penalty = 0.5; }), (std::vector<float>{2, 2, 1}));
  SamplingParams off;
  EXPECT_FALSE(penalties_active(off));
}

}  // namespace
}  // namespace strata
