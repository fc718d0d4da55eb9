#include "engine/sampler.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "engine/philox.h"

namespace strata {

namespace {

constexpr int kStateVersion = 1;

}  // namespace

Sampler::Sampler(SamplingParams params, int32_t vocab_size, uint64_t request_id,
                 std::span<const int32_t> prompt_tokens, std::span<const int32_t> eos_token_ids)
    : params_(std::move(params)),
      vocab_size_(vocab_size),
      key_(request_rng_key(params_.seed, request_id)),
      eos_(eos_token_ids.begin(), eos_token_ids.end()) {
  params_.validate();
  if (vocab_size_ <= 0) throw Error("sampler: vocabulary size must be positive");
  for (int32_t t : params_.stop_token_ids) check_token(t, "stop_token_ids");
  for (const auto& [t, b] : params_.logit_bias) check_token(t, "logit_bias");
  for (int32_t t : eos_) check_token(t, "EOS token");
  for (int32_t t : prompt_tokens) check_token(t, "prompt");
  history_.add_prompt(prompt_tokens);
}

void Sampler::check_token(int32_t token, const char* what) const {
  if (token < 0 || token >= vocab_size_)
    throw Error(std::string(what) + " contains token " + std::to_string(token) +
                ", outside the vocabulary of " + std::to_string(vocab_size_) + " tokens");
}

SampleResult Sampler::sample(std::span<const float> logits) {
  SamplingScratch scratch;
  return sample(logits, scratch);
}

SampleResult Sampler::sample(std::span<const float> logits, SamplingScratch& s) {
  if (logits.size() != size_t(vocab_size_))
    throw Error("sampler: got " + std::to_string(logits.size()) + " logits for a vocabulary of " +
                std::to_string(vocab_size_));
  // Bias and penalties touch few tokens but must not modify the caller's logits (raw logprobs
  // are computed from them), so they work on a copy, made only when one of them is set.
  // The bias comes first (vLLM's order, logit_bias.h).
  if (params_.structured && !matcher_) throw Error("sampler: structured output without its compiled grammar");
  std::span<const float> work = logits;
  const bool biased = !params_.logit_bias.empty(), penalized = penalties_active(params_);
  const bool masked = matcher_ && matcher_->active();
  if (biased || penalized || masked) {
    s.logits.assign(logits.begin(), logits.end());
    if (masked) matcher_->apply(s.logits, eos_);  // the grammar first: bias cannot revive a masked token
    if (biased) apply_logit_bias(s.logits, params_.logit_bias);
    if (penalized) apply_penalties(s.logits, history_, params_);
    work = s.logits;
  }

  SampleResult r{};
  const bool processed = params_.logprobs_mode == LogprobsMode::processed;
  if (params_.greedy()) {
    r.token = argmax(work);
    // Greedy's processed distribution is the penalized softmax: no temperature, no truncation.
    if (params_.logprobs && processed) r.logprobs = logprobs_from_logits(work, r.token, *params_.logprobs);
  } else {
    process_logits(work, params_, s.cands);
    // Draw number `generated_` of this request's stream: a function of (key, step) only.
    r.token = s.cands[sample_index(s.cands, philox_uniform(key_, generated_))].id;
    if (params_.logprobs && processed)
      r.logprobs = logprobs_from_candidates(s.cands, vocab_size_, r.token, *params_.logprobs);
  }
  if (params_.logprobs && !processed) r.logprobs = logprobs_from_logits(logits, r.token, *params_.logprobs);
  r.finish = append(r.token);
  return r;
}

void Sampler::attach_grammar(std::shared_ptr<const grammar::CompiledGrammar> g) {
  if (!params_.structured) throw Error("sampler: a grammar for a request without structured output");
  matcher_.emplace(std::move(g), params_.structured->after_token);
  if (!saved_grammar_state_.empty()) matcher_->restore_state(nlohmann::json::parse(saved_grammar_state_));
  saved_grammar_state_.clear();
}

FinishReason Sampler::append(int32_t token) {
  check_token(token, "generated output");
  if (params_.structured) {
    if (!matcher_) throw Error("sampler: structured output without its compiled grammar");
    matcher_->accept(token, eos_);
  }
  history_.add_output(token);
  ++generated_;
  return finish_after(token);
}

FinishReason Sampler::finish_after(int32_t token) const {
  // EOS and stop tokens win over length when the last allowed token is also a stop token.
  if (std::find(params_.stop_token_ids.begin(), params_.stop_token_ids.end(), token) !=
      params_.stop_token_ids.end())
    return FinishReason::stop;
  if (!params_.ignore_eos && std::find(eos_.begin(), eos_.end(), token) != eos_.end())
    return FinishReason::stop;
  if (params_.max_tokens && generated_ >= uint64_t(*params_.max_tokens)) return FinishReason::length;
  return FinishReason::none;
}

nlohmann::json Sampler::to_json() const {
  std::vector<int32_t> prompt;
  std::vector<std::pair<int32_t, uint32_t>> output;
  for (const auto& [id, seen] : history_.tokens) {
    if (seen.prompt) prompt.push_back(id);
    if (seen.output) output.emplace_back(id, seen.output);
  }
  std::sort(prompt.begin(), prompt.end());
  std::sort(output.begin(), output.end());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [id, n] : output) out.push_back({id, n});
  return {{"version", kStateVersion},  {"params", params_},         {"vocab_size", vocab_size_},
          {"rng_key", key_},           {"generated", generated_},   {"eos_token_ids", eos_},
          {"prompt_tokens", prompt},   {"output_counts", out},
          {"grammar_state", matcher_ ? matcher_->state_json()
                            : saved_grammar_state_.empty() ? nlohmann::json()
                                                           : nlohmann::json::parse(saved_grammar_state_)}};
}

Sampler Sampler::from_json(const nlohmann::json& j) {
  Sampler s;
  try {
    if (!j.is_object() || j.at("version").get<int>() != kStateVersion)
      throw Error("sampler state: unsupported version");
    s.params_ = j.at("params").get<SamplingParams>();
    s.vocab_size_ = j.at("vocab_size").get<int32_t>();
    s.key_ = j.at("rng_key").get<uint64_t>();
    s.generated_ = j.at("generated").get<uint64_t>();
    s.eos_ = j.at("eos_token_ids").get<std::vector<int32_t>>();
    if (s.vocab_size_ <= 0) throw Error("sampler state: vocabulary size must be positive");
    for (int32_t t : s.params_.stop_token_ids) s.check_token(t, "stop_token_ids");
    for (const auto& [t, b] : s.params_.logit_bias) s.check_token(t, "logit_bias");
    for (int32_t t : s.eos_) s.check_token(t, "EOS token");
    for (int32_t t : j.at("prompt_tokens").get<std::vector<int32_t>>()) {
      s.check_token(t, "sampler state prompt");
      s.history_.tokens[t].prompt = true;
    }
    uint64_t counted = 0;
    for (const auto& e : j.at("output_counts")) {
      auto id = e.at(0).get<int32_t>();
      auto n = e.at(1).get<uint32_t>();
      s.check_token(id, "sampler state output");
      if (n == 0 || s.history_.tokens[id].output != 0)
        throw Error("sampler state: bad output count for token " + std::to_string(id));
      s.history_.tokens[id].output = n;
      counted += n;
    }
    if (counted != s.generated_) throw Error("sampler state: output counts do not add up to generated");
    if (j.contains("grammar_state") && !j["grammar_state"].is_null()) {
      if (!s.params_.structured) throw Error("sampler state: a grammar state without structured output");
      s.saved_grammar_state_ = j["grammar_state"].dump();
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("sampler state: ") + e.what());
  }
  return s;
}

std::vector<uint8_t> Sampler::to_bytes() const { return nlohmann::json::to_cbor(to_json()); }

Sampler Sampler::from_bytes(std::span<const uint8_t> bytes) {
  nlohmann::json j;
  try {
    j = nlohmann::json::from_cbor(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("sampler state: ") + e.what());
  }
  return from_json(j);
}

}  // namespace strata
