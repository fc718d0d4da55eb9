#include "engine/generation.h"

#include <chrono>

#include "core/error.h"
#include "engine/sample_step.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"

namespace strata {

GenerationStats generate(dsv4::Model& model, dsv4::SequenceState& state, const Tokenizer& tok,
                         const std::vector<int32_t>& prompt, const SamplingParams& params, uint64_t request_id,
                         const std::function<bool(const GenerationEvent&)>& on_event) {
  using clock = std::chrono::steady_clock;
  if (prompt.empty()) throw Error("the prompt is empty");
  const auto& cfg = model.config();
  const int32_t vocab = int32_t(cfg.vocab_size);
  const int64_t room = model.max_positions() - state.pos;
  if (int64_t(prompt.size()) > room)
    throw Error("prompt of " + std::to_string(prompt.size()) + " tokens exceeds the context (" +
                std::to_string(room) + " positions left of " + std::to_string(model.max_positions()) + ")");
  SamplingParams p = params;
  const int64_t max_new = room - int64_t(prompt.size());
  if (!p.max_tokens || *p.max_tokens > max_new) p.max_tokens = max_new;

  std::vector<int32_t> eos;
  if (cfg.eos_token_id >= 0) eos.push_back(int32_t(cfg.eos_token_id));
  if (tok.eos_id() >= 0 && tok.eos_id() != cfg.eos_token_id) eos.push_back(tok.eos_id());
  Sampler sampler(p, vocab, request_id, prompt, eos);
  StopMatcher stops(p.stop);
  StreamDecoder decoder(tok, /*skip_special=*/true);
  SamplingScratch scratch;

  GenerationStats st;
  st.prompt_tokens = int64_t(prompt.size());
  const auto t0 = clock::now();
  std::vector<int64_t> ids(prompt.begin(), prompt.end());
  std::vector<float> logits = model.forward(state, ids.data(), int64_t(ids.size()));
  auto t1 = clock::now();
  st.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  const int32_t tok_vocab = tok.vocab_size();

  while (true) {
    StepOutput r = sample_step(logits, tok_vocab, sampler, scratch, decoder, stops);
    st.tokens.push_back(r.token);
    ++st.generated_tokens;
    GenerationEvent ev;
    ev.token = r.token;
    ev.text = std::move(r.text);
    ev.logprobs = std::move(r.logprobs);
    ev.finish = r.finish;
    st.finish = r.finish;
    if (!on_event(ev)) {
      st.cancelled = true;
      break;
    }
    if (r.finish != FinishReason::none) break;
    logits = model.decode(state, r.token);
  }
  st.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return st;
}

}  // namespace strata
