// Log-probabilities reported with a sampled token (OpenAI "logprobs"/"top_logprobs").
//
// Which distribution they describe is SamplingParams::logprobs_mode: by default the raw model
// output (vLLM v1's default, "raw_logprobs": before penalties, temperature and truncation),
// or the processed distribution the token was drawn from.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampling_ops.h"

namespace strata {

struct TokenLogprob {
  int32_t token;
  float logprob;
};

struct SampledLogprobs {
  float logprob;                  // of the sampled token
  int64_t rank;                   // 1 + number of tokens with a strictly larger logprob
  std::vector<TokenLogprob> top;  // the top-N, largest first, lower id first among ties
};

// From the log-softmax of a full logits vector (log-sum-exp accumulated in double).
SampledLogprobs logprobs_from_logits(std::span<const float> logits, int32_t token, int top_n);

// From the distribution over `cands` (their weights, renormalized); tokens outside it have
// logprob -inf. When fewer than top_n candidates exist the list is filled with the lowest
// ids outside the candidates at -inf, so it always has top_n entries as OpenAI's does.
// `token` must be one of the candidates.
SampledLogprobs logprobs_from_candidates(std::span<const Candidate> cands, int32_t vocab_size,
                                         int32_t token, int top_n);

}  // namespace strata
