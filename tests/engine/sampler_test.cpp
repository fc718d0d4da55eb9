// The per-request Sampler end to end: greedy, penalties, stop tokens, length, seeds,
// determinism under batching and threads, serialization, logprobs, and the sampled
// distribution (chi-square) for temperature, top-k, top-p and min-p.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <thread>

#include "core/error.h"

namespace strata {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const std::vector<int32_t> kNoTokens;

Sampler make(SamplingParams p, int32_t vocab, uint64_t request_id = 0,
             std::vector<int32_t> prompt = {}, std::vector<int32_t> eos = {}) {
  return Sampler(std::move(p), vocab, request_id, prompt, eos);
}

// Logits of step `step` of a fake model: a fixed pseudo-random function of the step.
std::vector<float> fake_logits(int32_t vocab, uint64_t step) {
  std::mt19937_64 rng(step * 7919 + 1);
  std::normal_distribution<float> d(0, 2);
  std::vector<float> l(static_cast<size_t>(vocab));
  for (auto& x : l) x = d(rng);
  return l;
}

std::vector<int32_t> generate(Sampler& s, int n, uint64_t first_step = 0) {
  std::vector<int32_t> out;
  SamplingScratch scratch;
  for (int i = 0; i < n; ++i) out.push_back(s.sample(fake_logits(s.vocab_size(), first_step + uint64_t(i)), scratch).token);
  return out;
}

SamplingParams sampled(double temperature = 1.0) {
  SamplingParams p;
  p.temperature = temperature;
  return p;
}

TEST(Sampler, GreedyTakesLowestIdOfTheMaxima) {
  SamplingParams p;
  p.temperature = 0;
  auto s = make(p, 4);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.sample(std::vector<float>{1, 3, 3, -kInf}).token, 1);
  EXPECT_EQ(s.generated(), 3u);
}

TEST(Sampler, RepetitionPenaltyCoversThePrompt) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0;
  // Token 0 is in the prompt: 3 / 2 = 1.5 < 2, so token 1 wins; unpenalized it would be 0.
  auto s = make(p, 3, 0, {0});
  EXPECT_EQ(s.sample(std::vector<float>{3, 2, -1}).token, 1);
  // Now 1 is penalized too: 1.5 vs 1 -> 0.
  EXPECT_EQ(s.sample(std::vector<float>{3, 2, -1}).token, 0);
  // The caller's logits are not modified.
  std::vector<float> l = {3, 2, -1};
  s.sample(l);
  EXPECT_EQ(l, (std::vector<float>{3, 2, -1}));
}

TEST(Sampler, FrequencyAndPresencePenaltiesHandComputed) {
  SamplingParams p;
  p.temperature = 0;
  p.frequency_penalty = 1.0;
  auto f = make(p, 2);
  std::vector<int32_t> got;
  for (int i = 0; i < 4; ++i) got.push_back(f.sample(std::vector<float>{2.0f, 1.5f}).token);
  // 2 vs 1.5 -> 0; 1 vs 1.5 -> 1; 1 vs 0.5 -> 0; 0 vs 0.5 -> 1
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 0, 1}));

  p.frequency_penalty = 0;
  p.presence_penalty = 1.0;
  auto q = make(p, 2);
  got.clear();
  for (int i = 0; i < 4; ++i) got.push_back(q.sample(std::vector<float>{2.0f, 1.5f}).token);
  // 2 vs 1.5 -> 0; 1 vs 1.5 -> 1; 1 vs 0.5 -> 0; 1 vs 0.5 -> 0 (presence does not grow)
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 0, 0}));
}

TEST(Sampler, LogitBiasIsAddedBeforeSamplingGreedyToo) {
  SamplingParams p;
  p.temperature = 0;
  p.logit_bias = {{2, 1.5}};
  auto s = make(p, 3);
  std::vector<float> l = {3, 2, 2};
  EXPECT_EQ(s.sample(l).token, 2);  // 2 + 1.5 > 3
  EXPECT_EQ(l, (std::vector<float>{3, 2, 2}));  // the caller's logits are not modified
  // -100 bans a token whatever the temperature; +100 forces one.
  p.temperature = 1.5;
  p.seed = 3;
  p.logit_bias = {{0, -100}, {1, -100}};
  auto ban = make(p, 4);
  for (int i = 0; i < 200; ++i) EXPECT_GE(ban.sample(std::vector<float>{5, 5, 0, 0}).token, 2);
  p.logit_bias = {{3, 100}};
  auto force = make(p, 4);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(force.sample(std::vector<float>{5, 5, 5, 0}).token, 3);
}

TEST(Sampler, LogitBiasComesBeforeThePenalties) {
  // vLLM's order: bias, then the repetition penalty. Token 0 (in the prompt) has logit 1 and
  // bias +3: (1 + 3) / 2 = 2 < 2.5, so token 1 wins; the other order, 1 / 2 + 3 = 3.5, picks 0.
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0;
  p.logit_bias = {{0, 3}};
  auto s = make(p, 2, 0, {0});
  EXPECT_EQ(s.sample(std::vector<float>{1, 2.5f}).token, 1);
}

TEST(Sampler, LogitBiasInLogprobsAndState) {
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = 2;
  p.logit_bias = {{1, std::log(3.0)}};
  std::vector<float> l = {0, 0, 0, -kInf};
  // Raw logprobs (the default) describe the model's output; processed ones include the bias.
  auto raw = make(p, 4).sample(l);
  EXPECT_EQ(raw.token, 1);
  EXPECT_NEAR(raw.logprobs->logprob, std::log(1.0 / 3), 1e-6);
  p.logprobs_mode = LogprobsMode::processed;
  auto processed = make(p, 4).sample(l);
  EXPECT_NEAR(processed.logprobs->logprob, std::log(3.0 / 5), 1e-6);
  // The bias is part of the state a snapshot carries.
  auto s = make(p, 4);
  auto r = Sampler::from_bytes(s.to_bytes());
  EXPECT_EQ(r.params().logit_bias, p.logit_bias);
  EXPECT_EQ(r.sample(l).token, 1);
  // Ids outside the vocabulary are refused when the request is made.
  p.logit_bias = {{4, 1}};
  try {
    make(p, 4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "logit_bias contains token 4, outside the vocabulary of 4 tokens");
  }
}

TEST(Sampler, StopTokensEosAndLength) {
  auto force = [](int32_t t) {
    std::vector<float> l(8, -kInf);
    l[size_t(t)] = 0;
    return l;
  };
  SamplingParams p;
  p.max_tokens = 3;
  p.stop_token_ids = {5};
  {
    auto s = make(p, 8, 0, {}, {7});
    EXPECT_EQ(s.sample(force(1)).finish, FinishReason::none);
    EXPECT_EQ(s.sample(force(7)).finish, FinishReason::stop);  // EOS
  }
  {
    auto s = make(p, 8, 0, {}, {7});
    EXPECT_EQ(s.sample(force(5)).finish, FinishReason::stop);  // stop token
  }
  {
    auto s = make(p, 8, 0, {}, {7});
    EXPECT_EQ(s.sample(force(1)).finish, FinishReason::none);
    EXPECT_EQ(s.sample(force(2)).finish, FinishReason::none);
    EXPECT_EQ(s.sample(force(3)).finish, FinishReason::length);
  }
  {
    auto s = make(p, 8, 0, {}, {7});
    s.sample(force(1));
    s.sample(force(2));
    EXPECT_EQ(s.sample(force(7)).finish, FinishReason::stop);  // EOS on the last token: stop
  }
  p.ignore_eos = true;
  {
    auto s = make(p, 8, 0, {}, {7});
    EXPECT_EQ(s.sample(force(7)).finish, FinishReason::none);
    EXPECT_EQ(s.sample(force(5)).finish, FinishReason::stop);  // stop_token_ids still apply
  }
  EXPECT_STREQ(finish_reason_name(FinishReason::stop), "stop");
  EXPECT_STREQ(finish_reason_name(FinishReason::length), "length");
  EXPECT_EQ(finish_reason_name(FinishReason::none), nullptr);
}

TEST(Sampler, AppendCountsLikeASampledToken) {
  SamplingParams p;
  p.max_tokens = 2;
  auto s = make(p, 4);
  EXPECT_EQ(s.append(3), FinishReason::none);
  EXPECT_EQ(s.append(3), FinishReason::length);
  EXPECT_EQ(s.history().tokens.at(3).output, 2u);
  EXPECT_THROW(s.append(4), Error);
}

TEST(Sampler, RejectsBadInputs) {
  SamplingParams p;
  p.stop_token_ids = {10};
  try {
    make(p, 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "stop_token_ids contains token 10, outside the vocabulary of 8 tokens");
  }
  p.stop_token_ids = {};
  p.top_p = 0;
  EXPECT_THROW(make(p, 8), Error);
  auto s = make(SamplingParams{}, 8);
  EXPECT_THROW(s.sample(std::vector<float>(7, 0.0f)), Error);
  EXPECT_THROW(s.sample(std::vector<float>(8, -kInf)), Error);
  EXPECT_THROW(make(SamplingParams{}, 8, 0, {8}), Error);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferent) {
  SamplingParams p = sampled(1.0);
  p.seed = 1234;
  auto a = make(p, 1000, /*request_id=*/1);
  auto b = make(p, 1000, /*request_id=*/2);  // the seed, not the id, decides
  auto ta = generate(a, 200), tb = generate(b, 200);
  EXPECT_EQ(ta, tb);
  p.seed = 1235;
  auto c = make(p, 1000, 1);
  auto tc = generate(c, 200);
  EXPECT_NE(ta, tc);
  // How often two different streams agree: about sum p_i^2 of these distributions, far
  // below 1; 200 steps all agreeing would be a broken generator.
  int same = 0;
  for (size_t i = 0; i < 200; ++i) same += ta[i] == tc[i];
  EXPECT_LT(same, 100);
}

TEST(Sampler, UnseededStreamsFollowTheRequestId) {
  auto a = make(sampled(), 1000, 7), b = make(sampled(), 1000, 7), c = make(sampled(), 1000, 8);
  auto ta = generate(a, 100);
  EXPECT_EQ(ta, generate(b, 100));
  EXPECT_NE(ta, generate(c, 100));
}

TEST(Sampler, BatchingAndThreadsDoNotChangeTheOutput) {
  // Alone: each request by itself.
  std::vector<std::vector<int32_t>> alone;
  for (uint64_t id = 0; id < 6; ++id) {
    auto s = make(sampled(0.8), 500, id);
    alone.push_back(generate(s, 60));
  }
  // Batched: all requests stepped together, in a different order every step.
  std::vector<Sampler> batch;
  for (uint64_t id = 0; id < 6; ++id) batch.push_back(make(sampled(0.8), 500, id));
  std::vector<std::vector<int32_t>> batched(6);
  std::vector<size_t> order = {0, 1, 2, 3, 4, 5};
  std::mt19937 shuffle(5);
  SamplingScratch shared;  // one scratch lent to every request
  for (uint64_t step = 0; step < 60; ++step) {
    std::shuffle(order.begin(), order.end(), shuffle);
    for (size_t i : order) batched[i].push_back(batch[i].sample(fake_logits(500, step), shared).token);
  }
  EXPECT_EQ(alone, batched);
  // Threads: each request on its own thread, all at once.
  std::vector<std::vector<int32_t>> threaded(6);
  std::vector<std::thread> threads;
  for (uint64_t id = 0; id < 6; ++id)
    threads.emplace_back([&, id] {
      auto s = make(sampled(0.8), 500, id);
      threaded[id] = generate(s, 60);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(alone, threaded);
}

TEST(Sampler, SerializationContinuesTheStreamExactly) {
  SamplingParams p = sampled(0.9);
  p.top_k = 50;
  p.top_p = 0.95;
  p.repetition_penalty = 1.2;
  p.presence_penalty = 0.3;
  p.frequency_penalty = 0.2;
  p.seed = 99;
  p.stop_token_ids = {3};
  p.max_tokens = 1000;
  auto s = make(p, 800, 5, {1, 2, 2, 700}, {0});
  generate(s, 30);
  auto bytes = s.to_bytes();
  auto r = Sampler::from_bytes(bytes);
  EXPECT_EQ(r.to_bytes(), bytes);
  EXPECT_EQ(r.to_json(), s.to_json());
  EXPECT_EQ(r.generated(), 30u);
  EXPECT_EQ(generate(s, 40, 30), generate(r, 40, 30));
  auto j = Sampler::from_json(nlohmann::json::parse(s.to_json().dump()));
  EXPECT_EQ(j.to_json(), s.to_json());
}

TEST(Sampler, CorruptStateIsRejected) {
  auto s = make(sampled(), 16, 1, {3});
  generate(s, 5);
  auto bytes = s.to_bytes();
  EXPECT_THROW(Sampler::from_bytes(std::span(bytes).first(bytes.size() / 2)), Error);
  auto j = s.to_json();
  j["generated"] = 6;
  EXPECT_THROW(Sampler::from_json(j), Error);
  j = s.to_json();
  j["version"] = 2;
  EXPECT_THROW(Sampler::from_json(j), Error);
  j = s.to_json();
  j["prompt_tokens"] = {16};
  EXPECT_THROW(Sampler::from_json(j), Error);
  j = s.to_json();
  j["params"]["temperature"] = 5;
  EXPECT_THROW(Sampler::from_json(j), Error);
}

TEST(Sampler, RawLogprobsIgnoreProcessing) {
  SamplingParams p = sampled(0.3);
  p.top_k = 2;
  p.logprobs = 3;
  p.seed = 1;
  auto s = make(p, 4);
  std::vector<float> l = {0.0f, std::log(3.0f), std::log(2.0f), std::log(2.0f)};  // probs 1/8 3/8 2/8 2/8
  auto r = s.sample(l);
  ASSERT_TRUE(r.logprobs);
  ASSERT_EQ(r.logprobs->top.size(), 3u);
  EXPECT_EQ(r.logprobs->top[0].token, 1);
  EXPECT_NEAR(r.logprobs->top[0].logprob, std::log(3.0 / 8), 1e-6);
  EXPECT_EQ(r.logprobs->top[1].token, 2);
  EXPECT_EQ(r.logprobs->top[2].token, 3);
  EXPECT_NEAR(r.logprobs->logprob, std::log(std::exp(double(l[size_t(r.token)])) / 8), 1e-6);
}

TEST(Sampler, ProcessedLogprobsDescribeTheSampledDistribution) {
  SamplingParams p = sampled(1.0);
  p.top_k = 2;
  p.logprobs = 3;
  p.logprobs_mode = LogprobsMode::processed;
  auto s = make(p, 4, 3);
  std::vector<float> l = {0.0f, std::log(3.0f), std::log(1.0f), std::log(2.0f)};
  auto r = s.sample(l);
  ASSERT_TRUE(r.logprobs);
  // top-2 = {1, 3} renormalized: 3/5, 2/5; the third entry is outside: -inf.
  EXPECT_EQ(r.logprobs->top[0].token, 1);
  EXPECT_NEAR(r.logprobs->top[0].logprob, std::log(0.6), 1e-6);
  EXPECT_EQ(r.logprobs->top[1].token, 3);
  EXPECT_NEAR(r.logprobs->top[1].logprob, std::log(0.4), 1e-6);
  EXPECT_EQ(r.logprobs->top[2].logprob, -kInf);
  EXPECT_TRUE(r.token == 1 || r.token == 3);
  // Greedy's processed distribution is the penalized softmax.
  p.temperature = 0;
  auto g = make(p, 4);
  auto rg = g.sample(l);
  EXPECT_EQ(rg.token, 1);
  EXPECT_NEAR(rg.logprobs->logprob, std::log(3.0 / 7), 1e-6);
}

// ---- Distribution tests ----------------------------------------------------------------
//
// 200,000 draws from an 8-token vocabulary, compared with the distribution each processing
// step should produce, computed here independently in double precision. Tokens the
// processing removes must never be drawn; over the rest Pearson's statistic is ~chi2(df =
// kept - 1) for a correct sampler. The bound is chi2's 0.999 quantile: with the fixed seed
// the test is deterministic, and a correct sampler passes for all but 1 in 1000 seeds. The
// test has power: a probability off by d changes the statistic by about N d^2 / p, so
// d = 0.004 on p = 0.125 already adds ~26.

constexpr int kDraws = 200000;
constexpr double kChi2Quantile999[] = {0, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322};
const std::vector<float> kLogits = {1.2f, -0.3f, 0.8f, 2.0f, -1.5f, 0.1f, 1.9f, -0.7f};

// temperature -> top-k -> top-p -> min-p on plain doubles, one sort, straight from the
// definitions. Returns probabilities by token (0 for removed tokens).
std::vector<double> expected_distribution(const SamplingParams& p) {
  size_t n = kLogits.size();
  std::vector<double> q(n);
  for (size_t i = 0; i < n; ++i) q[i] = std::exp(double(kLogits[i]) / p.temperature);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return q[a] > q[b]; });
  auto normalize = [&] {
    double t = std::accumulate(q.begin(), q.end(), 0.0);
    for (auto& x : q) x /= t;
  };
  normalize();
  if (p.top_k > 0)
    for (size_t r = size_t(p.top_k); r < n; ++r) q[order[r]] = 0;
  normalize();
  double before = 0;
  for (size_t r = 0; r < n && p.top_p < 1.0; ++r) {
    // Keep these tests away from the top-p boundary, where rounding could decide.
    EXPECT_GT(std::abs(before - p.top_p), 1e-6);
    if (before >= p.top_p) q[order[r]] = 0;
    before += q[order[r]];
  }
  normalize();
  double top = *std::max_element(q.begin(), q.end());
  for (auto& x : q)
    if (x < p.min_p * top) x = 0;
  normalize();
  return q;
}

// Draws kDraws tokens and returns Pearson's statistic; checks removed tokens never appear.
double chi_square(const SamplingParams& p, int* df) {
  auto expect = expected_distribution(p);
  auto s = make(p, int32_t(kLogits.size()));
  std::vector<int> count(kLogits.size());
  SamplingScratch scratch;
  for (int i = 0; i < kDraws; ++i) ++count[size_t(s.sample(kLogits, scratch).token)];
  double chi2 = 0;
  *df = -1;
  for (size_t i = 0; i < expect.size(); ++i) {
    if (expect[i] == 0) {
      EXPECT_EQ(count[i], 0) << "token " << i << " should have been removed";
      continue;
    }
    double e = expect[i] * kDraws;
    chi2 += (count[i] - e) * (count[i] - e) / e;
    ++*df;
  }
  return chi2;
}

void expect_distribution(SamplingParams p, int expected_df) {
  p.seed = 20261129;
  int df = 0;
  double chi2 = chi_square(p, &df);
  ASSERT_EQ(df, expected_df);
  std::printf("chi2 %.2f, df %d, bound %.3f\n", chi2, df, kChi2Quantile999[df]);
  EXPECT_LT(chi2, kChi2Quantile999[df]) << "df " << df;
}

TEST(SamplerDistribution, Temperature) {
  expect_distribution(sampled(1.0), 7);
  expect_distribution(sampled(0.6), 7);
  expect_distribution(sampled(1.7), 7);
}

TEST(SamplerDistribution, TopK) {
  SamplingParams p = sampled(1.0);
  p.top_k = 3;
  expect_distribution(p, 2);
}

TEST(SamplerDistribution, TopP) {
  SamplingParams p = sampled(1.0);
  p.top_p = 0.8;
  expect_distribution(p, 3);  // probabilities .33 .30 .15 .10 .05 ...: 4 tokens reach 0.8
}

TEST(SamplerDistribution, MinP) {
  SamplingParams p = sampled(1.0);
  p.min_p = 0.2;
  expect_distribution(p, 3);  // ratios to the top .90 .45 .30 .15 ...: 4 tokens reach 0.2
}

TEST(SamplerDistribution, AllTogether) {
  SamplingParams p = sampled(1.3);
  p.top_k = 6;
  p.top_p = 0.9;
  p.min_p = 0.15;
  int df = 0;
  auto q = expected_distribution(p);
  df = int(std::count_if(q.begin(), q.end(), [](double x) { return x > 0; })) - 1;
  ASSERT_GE(df, 2);
  expect_distribution(p, df);
}

TEST(SamplerDistribution, DetectsAWrongDistribution) {
  // The same draws judged against the untruncated distribution fail by far: the test's
  // bound is not so loose that anything passes.
  SamplingParams p = sampled(1.0);
  p.top_k = 3;
  p.seed = 20261129;
  auto s = make(p, int32_t(kLogits.size()));
  std::vector<int> count(kLogits.size());
  for (int i = 0; i < kDraws; ++i) ++count[size_t(s.sample(kLogits).token)];
  auto wrong = expected_distribution(sampled(1.0));
  double chi2 = 0;
  for (size_t i = 0; i < wrong.size(); ++i) {
    double e = wrong[i] * kDraws;
    chi2 += (count[i] - e) * (count[i] - e) / e;
  }
  EXPECT_GT(chi2, 1000 * kChi2Quantile999[7]);
}

}  // namespace
}  // namespace strata
