// Repetition, presence and frequency penalties, and the token history they are computed from.
//
// Semantics follow vLLM (which follows HF transformers for repetition and OpenAI for the other
// two), applied in vLLM's order, repetition first:
//   repetition  (tokens seen in the prompt or the output): l > 0 ? l / r : l * r
//   frequency   (output tokens only):                      l -= f * count
//   presence    (output tokens only):                      l -= p * (count > 0)
// All arithmetic is float, like vLLM's float32 tensors.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>

namespace strata {

struct SamplingParams;

// Distinct tokens a request has seen, for penalties. Sparse: a request sees far fewer
// distinct tokens than the vocabulary has, and penalties only touch seen tokens.
struct TokenHistory {
  struct Seen {
    uint32_t output = 0;  // times generated
    bool prompt = false;  // appears in the prompt
  };
  std::unordered_map<int32_t, Seen> tokens;

  void add_prompt(std::span<const int32_t> prompt);
  void add_output(int32_t token);
};

bool penalties_active(const SamplingParams& p);

// Applies the penalties of `p` in place to the logits of the seen tokens (ids must be < size).
// The order in which the map is walked does not matter: each token is adjusted independently.
void apply_penalties(std::span<float> logits, const TokenHistory& history, const SamplingParams& p);

}  // namespace strata
