// Validation messages (the server returns them as HTTP 400) and the JSON form.
#include "engine/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace strata {
namespace {

std::string error_of(const std::function<void(SamplingParams&)>& edit) {
  SamplingParams p;
  edit(p);
  try {
    p.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SamplingParams, DefaultsAreValid) {
  SamplingParams p;
  EXPECT_NO_THROW(p.validate());
  EXPECT_FALSE(p.greedy());
}

TEST(SamplingParams, RejectsEachOutOfRangeField) {
  const double nan = std::nan("");
  EXPECT_EQ(error_of([](auto& p) { p.temperature = -0.1; }), "temperature must be in [0, 2]");
  EXPECT_EQ(error_of([](auto& p) { p.temperature = 2.5; }), "temperature must be in [0, 2]");
  EXPECT_EQ(error_of([&](auto& p) { p.temperature = nan; }), "temperature must be in [0, 2]");
  EXPECT_EQ(error_of([](auto& p) { p.top_k = -2; }), "top_k must be at least 1, or 0 or -1 to disable it");
  EXPECT_EQ(error_of([](auto& p) { p.top_p = 0; }), "top_p must be in (0, 1]");
  EXPECT_EQ(error_of([](auto& p) { p.top_p = 1.01; }), "top_p must be in (0, 1]");
  EXPECT_EQ(error_of([&](auto& p) { p.top_p = nan; }), "top_p must be in (0, 1]");
  EXPECT_EQ(error_of([](auto& p) { p.min_p = -0.01; }), "min_p must be in [0, 1]");
  EXPECT_EQ(error_of([](auto& p) { p.min_p = 1.5; }), "min_p must be in [0, 1]");
  EXPECT_EQ(error_of([](auto& p) { p.repetition_penalty = 0; }),
            "repetition_penalty must be a finite number greater than 0");
  EXPECT_EQ(error_of([](auto& p) { p.repetition_penalty = INFINITY; }),
            "repetition_penalty must be a finite number greater than 0");
  EXPECT_EQ(error_of([](auto& p) { p.presence_penalty = 2.1; }), "presence_penalty must be in [-2, 2]");
  EXPECT_EQ(error_of([](auto& p) { p.frequency_penalty = -2.1; }), "frequency_penalty must be in [-2, 2]");
  EXPECT_EQ(error_of([](auto& p) { p.max_tokens = 0; }), "max_tokens must be at least 1");
  EXPECT_EQ(error_of([](auto& p) { p.stop = {"a", ""}; }), "stop strings must not be empty");
  EXPECT_EQ(error_of([](auto& p) { p.stop_token_ids = {3, -1}; }), "stop_token_ids must not contain negative ids");
  EXPECT_EQ(error_of([](auto& p) { p.logprobs = 21; }), "logprobs must be in [0, 20]");
  EXPECT_EQ(error_of([](auto& p) { p.logprobs = -1; }), "logprobs must be in [0, 20]");
  EXPECT_EQ(error_of([](auto& p) { p.logit_bias = {{5, 100.5}}; }),
            "logit_bias values must be in [-100, 100] (token 5 has 100.5)");
  EXPECT_EQ(error_of([&](auto& p) { p.logit_bias = {{5, nan}}; }).rfind("logit_bias values must be in", 0), 0u);
  EXPECT_EQ(error_of([](auto& p) { p.logit_bias = {{-3, 1}}; }), "logit_bias contains the negative token id -3");
}

TEST(SamplingParams, AcceptsTheBoundaries) {
  for (auto edit : std::vector<std::function<void(SamplingParams&)>>{
           [](auto& p) { p.temperature = 0; }, [](auto& p) { p.temperature = 2; },
           [](auto& p) { p.top_k = -1; }, [](auto& p) { p.top_k = 1; },
           [](auto& p) { p.top_p = 1e-9; }, [](auto& p) { p.min_p = 1; },
           [](auto& p) { p.presence_penalty = -2; }, [](auto& p) { p.frequency_penalty = 2; },
           [](auto& p) { p.max_tokens = 1; }, [](auto& p) { p.logprobs = 0; },
           [](auto& p) { p.logprobs = 20; }, [](auto& p) { p.logit_bias = {{0, -100}, {7, 100}}; }})
    EXPECT_EQ(error_of(edit), "");
}

TEST(SamplingParams, JsonRoundTrip) {
  SamplingParams p;
  p.temperature = 0.7;
  p.top_k = 40;
  p.top_p = 0.95;
  p.min_p = 0.05;
  p.repetition_penalty = 1.1;
  p.presence_penalty = 0.5;
  p.frequency_penalty = -0.25;
  p.max_tokens = 128;
  p.stop = {"\n\n", "。"};
  p.stop_token_ids = {1, 2};
  p.ignore_eos = true;
  p.seed = 0xFFFFFFFFFFFFFFFFull;
  p.logprobs = 5;
  p.logprobs_mode = LogprobsMode::processed;
  p.logit_bias = {{3, -100}, {20, 0.25}, {1000, 7}};
  nlohmann::json j = p;
  EXPECT_EQ(j["logit_bias"], nlohmann::json::parse(R"({"3": -100.0, "20": 0.25, "1000": 7.0})"));
  auto q = j.get<SamplingParams>();
  EXPECT_EQ(nlohmann::json(q), j);
  EXPECT_EQ(q.logit_bias, p.logit_bias);
  EXPECT_EQ(q.seed, p.seed);
  EXPECT_EQ(q.temperature, 0.7);
  EXPECT_EQ(q.stop, p.stop);
}

TEST(SamplingParams, JsonFromAnOpenAiRequest) {
  auto p = nlohmann::json::parse(R"({"temperature": 0, "stop": "###", "seed": -1, "max_tokens": null,
                                     "model": "x", "messages": []})")
               .get<SamplingParams>();
  EXPECT_TRUE(p.greedy());
  EXPECT_EQ(p.stop, std::vector<std::string>{"###"});
  EXPECT_EQ(p.seed, 0xFFFFFFFFFFFFFFFFull);
  EXPECT_FALSE(p.max_tokens);
  EXPECT_EQ(p.top_p, 1.0);  // absent: default
}

TEST(SamplingParams, JsonErrors) {
  auto err = [](const char* text) {
    try {
      nlohmann::json::parse(text).get<SamplingParams>();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err(R"({"temperature": "hot"})"), "temperature must be a number");
  EXPECT_EQ(err(R"({"temperature": 3})"), "temperature must be in [0, 2]");
  EXPECT_EQ(err(R"({"top_k": 1.5})"), "top_k must be an integer");
  EXPECT_EQ(err(R"({"stop": 3})"), "stop must be a string or an array of strings");
  EXPECT_EQ(err(R"({"stop": ["a", 1]})"), "stop must be a string or an array of strings");
  EXPECT_EQ(err(R"({"logprobs": 30})"), "logprobs must be in [0, 20]");
  EXPECT_EQ(err(R"({"ignore_eos": 1})"), "ignore_eos must be a boolean");
  EXPECT_EQ(err(R"({"logprobs_mode": "cooked"})"), "logprobs_mode must be \"raw\" or \"processed\"");
  EXPECT_EQ(err(R"([1])"), "sampling parameters must be a JSON object");
  // logit_bias: OpenAI's map of token ids (decimal strings) to numbers in [-100, 100]
  EXPECT_EQ(err(R"({"logit_bias": {"50256": -100, "7": 2.5}})"), "");
  EXPECT_EQ(err(R"({"logit_bias": [1, 2]})"),
            "logit_bias must be an object mapping token ids (as strings) to biases in [-100, 100]");
  for (const char* key : {"-1", "1.0", " 7", "0x10", "abc", "", "99999999999"})
    EXPECT_EQ(err((std::string(R"({"logit_bias": {")") + key + R"(": 1}})").c_str()),
              std::string("logit_bias keys must be token ids written as decimal integers; got \"") + key + "\"");
  EXPECT_EQ(err(R"({"logit_bias": {"7": "up"}})"), "logit_bias values must be numbers (token 7)");
  EXPECT_EQ(err(R"({"logit_bias": {"7": -101}})"), "logit_bias values must be in [-100, 100] (token 7 has -101.0)");
  EXPECT_EQ(err(R"({"logit_bias": {"7": 1, "007": 2}})"), "logit_bias names token 7 twice");
}

}  // namespace
}  // namespace strata
