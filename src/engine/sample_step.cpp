#include "engine/sample_step.h"

#include <limits>

namespace strata {

StepOutput sample_step(std::vector<float>& logits, int32_t tok_vocab, Sampler& sampler, SamplingScratch& scratch,
                       StreamDecoder& decoder, StopMatcher& stops) {
  const int32_t vocab = sampler.vocab_size();
  // rows past the tokenizer's vocabulary have no text: never sample them
  for (int32_t i = tok_vocab; i < vocab; ++i) logits[size_t(i)] = -std::numeric_limits<float>::infinity();
  SampleResult r = sampler.sample(logits, scratch);
  StepOutput out;
  out.token = r.token;
  out.logprobs = std::move(r.logprobs);
  const bool is_eos = r.finish == FinishReason::stop;  // EOS or a stop token: its text is not output
  if (!is_eos) {
    auto m = stops.feed(decoder.push(r.token));
    out.text = std::move(m.emit);
    if (m.stopped) r.finish = FinishReason::stop;
  }
  if (r.finish != FinishReason::none && !stops.stopped()) out.text += stops.feed(decoder.flush()).emit + stops.flush();
  out.finish = r.finish;
  return out;
}

}  // namespace strata
