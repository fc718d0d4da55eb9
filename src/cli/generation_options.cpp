#include "cli/generation_options.h"

#include <CLI/CLI.hpp>
#include <random>

#include "core/error.h"
#include "dist/world.h"

namespace strata::cli {

SamplingParams GenerationOptions::sampling() const {
  SamplingParams p;
  p.temperature = temperature;
  p.top_p = top_p;
  p.top_k = top_k;
  p.min_p = min_p;
  p.repetition_penalty = repetition_penalty;
  p.presence_penalty = presence_penalty;
  p.frequency_penalty = frequency_penalty;
  p.max_tokens = max_tokens;
  p.stop = stop;
  if (seed >= 0) {
    p.seed = uint64_t(seed);
  } else {
    // No --seed: a random one, so that runs differ, as with vLLM and llama.cpp. (Without a seed
    // the engine keys a request by its id, and a CLI run's only request is always id 1.)
    std::random_device rd;
    p.seed = uint64_t(rd()) << 32 | rd();
    p.seed = dist::broadcast_u64(*p.seed);  // every rank of an MPI job samples alike
  }
  p.validate();
  return p;
}

void add_generation_options(CLI::App& c, GenerationOptions& o, double default_temperature) {
  o.temperature = default_temperature;
  c.add_option("--temperature", o.temperature, "sampling temperature; 0 = greedy")->capture_default_str();
  c.add_option("--top-p", o.top_p, "nucleus sampling mass");
  c.add_option("--top-k", o.top_k, "sample among the k most likely tokens (0 = all)");
  c.add_option("--min-p", o.min_p, "drop tokens below min_p x the top probability");
  c.add_option("--repetition-penalty", o.repetition_penalty, "penalty on tokens already seen (1 = off)");
  c.add_option("--presence-penalty", o.presence_penalty, "OpenAI presence penalty");
  c.add_option("--frequency-penalty", o.frequency_penalty, "OpenAI frequency penalty");
  c.add_option("--max-tokens", o.max_tokens, "tokens to generate at most")->take_last();
  c.add_option("--seed", o.seed, "sampling seed: the same seed gives the same output; without one, each request draws a random seed "
                "(temperature 0 is greedy and needs none)");
  c.add_option("--stop", o.stop, "stop string (repeatable)");
  c.add_flag("--speculative", o.speculative,
             "speculative decoding: the MTP block drafts, the model verifies (output unchanged)");
  c.add_option("--spec-tokens", o.spec_tokens, "draft tokens per round at most (implies --speculative; 0 = off)")
      ->check(CLI::Range(0, 16));
}

int GenerationOptions::draft_tokens(int64_t config_nextn) const {
  if (spec_tokens >= 0) return spec_tokens;
  return speculative ? int(std::max<int64_t>(1, config_nextn)) : 0;
}

ChatRenderOptions chat_options_for(const std::string& thinking) {
  ChatRenderOptions c;
  if (thinking == "chat") {
    c.thinking = false;
  } else if (thinking == "high" || thinking == "max") {
    c.thinking = true;
    c.reasoning_effort = thinking;
  } else {
    throw Error("--thinking must be chat, high or max");
  }
  return c;
}

}  // namespace strata::cli
