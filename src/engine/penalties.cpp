#include "engine/penalties.h"

#include "engine/sampling_params.h"

namespace strata {

void TokenHistory::add_prompt(std::span<const int32_t> prompt) {
  for (int32_t t : prompt) tokens[t].prompt = true;
}

void TokenHistory::add_output(int32_t token) { ++tokens[token].output; }

bool penalties_active(const SamplingParams& p) {
  return p.repetition_penalty != 1.0 || p.presence_penalty != 0.0 || p.frequency_penalty != 0.0;
}

void apply_penalties(std::span<float> logits, const TokenHistory& history, const SamplingParams& p) {
  const float rep = float(p.repetition_penalty);
  const float presence = float(p.presence_penalty);
  const float frequency = float(p.frequency_penalty);
  for (const auto& [id, seen] : history.tokens) {
    float& l = logits[size_t(id)];
    if (rep != 1.0f) l = l > 0.0f ? l / rep : l * rep;
    if (seen.output > 0) {
      l -= frequency * float(seen.output);
      l -= presence;
    }
  }
}

}  // namespace strata
