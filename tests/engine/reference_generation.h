// One request generated to completion on one sequence: prefill, then sample / decode until a
// finish reason, streaming detokenized text with stop strings applied. This is what the CLI
// runs; the batching engine runs many such requests per step with the same pieces (Sampler,
// StopMatcher, StreamDecoder), so a request's output is the same either way.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/finish_reason.h"
#include "engine/logprobs.h"
#include "engine/sampling_params.h"
#include "engine/speculative.h"
#include "models/model.h"
#include "text/tokenizer.h"

namespace strata {

struct GenerationEvent {
  int32_t token = -1;           // the token just sampled (-1 for the final flush)
  std::string text;             // text that became final with it (stop strings removed)
  FinishReason finish = FinishReason::none;
  std::optional<SampledLogprobs> logprobs;
};

struct GenerationStats {
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  FinishReason finish = FinishReason::none;
  std::vector<int32_t> tokens;  // generated ids
  bool cancelled = false;
  SpeculativeStats spec;        // with speculation
};

// Runs `prompt` on `state` (which may already hold earlier tokens: only the new ones are
// computed). on_event returns false to cancel. The model's vocabulary may be larger than the
// tokenizer's (V4: 129,280 rows, 128,818 tokens); rows without a token are never sampled.
// With spec.max_draft > 0 the MTP block drafts and the main model verifies (speculative.h):
// the tokens, text and final state are bitwise the same as without.
GenerationStats generate(const models::Model& model, models::Sequence& state, const Tokenizer& tok,
                         const std::vector<int32_t>& prompt, const SamplingParams& params, uint64_t request_id,
                         const std::function<bool(const GenerationEvent&)>& on_event,
                         const SpeculativeOptions& spec = {});

}  // namespace strata
