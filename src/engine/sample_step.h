// One generation step after the forward pass, per request: rows past the tokenizer's
// vocabulary are masked, the sampler draws, and the token's text goes through the streaming
// detokenizer and the stop-string matcher (EOS / stop tokens produce no text). The engine
// applies it to every request; the tests' reference decode loop applies the same step, so the
// two can be compared bit for bit.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "engine/stop_matcher.h"
#include "text/tokenizer.h"

namespace strata {

struct StepOutput {
  int32_t token = -1;
  std::string text;  // final text made by this step
  FinishReason finish = FinishReason::none;
  std::optional<SampledLogprobs> logprobs;
};

StepOutput sample_step(std::vector<float>& logits, int32_t tok_vocab, Sampler& sampler, SamplingScratch& scratch,
                       StreamDecoder& decoder, StopMatcher& stops);

}  // namespace strata
