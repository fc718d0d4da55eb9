// Sampling and chat options shared by `strata generate` and `strata chat`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "text/chat_format.h"

namespace CLI { class App; }

namespace strata::cli {

struct GenerationOptions {
  double temperature = 0.0, top_p = 1.0, min_p = 0.0;
  double repetition_penalty = 1.0, presence_penalty = 0.0, frequency_penalty = 0.0;
  int32_t top_k = 0;
  int64_t max_tokens = 256;
  int64_t seed = -1;  // -1: none
  std::vector<std::string> stop;
  // Speculative decoding with the MTP block: --speculative drafts the config's
  // num_nextn_predict_layers tokens per round, --spec-tokens N sets N (0 = off).
  bool speculative = false;
  int spec_tokens = -1;  // -1: not given
  SamplingParams sampling() const;  // validated
  // Draft tokens per round for a model with these MTP layers (0 = no speculation).
  int draft_tokens(int64_t config_nextn) const;
};

void add_generation_options(CLI::App& cmd, GenerationOptions& o, double default_temperature);
// "chat" → no reasoning; "high" / "max" → thinking mode with that reasoning effort.
ChatRenderOptions chat_options_for(const std::string& thinking);

}  // namespace strata::cli
