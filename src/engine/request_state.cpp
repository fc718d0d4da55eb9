#include "engine/request_state.h"

#include <limits>
#include <nlohmann/json.hpp>

namespace strata::engine {

RequestState::RequestState(uint64_t id_, int64_t arrival_, std::vector<int32_t> prompt, const SamplingParams& params,
                           int32_t model_vocab, std::vector<int32_t> eos, const Tokenizer& tok, EventCallback cb)
    : id(id_),
      arrival(arrival_),
      prompt_tokens(int64_t(prompt.size())),
      tokens(std::move(prompt)),
      sampler(params, model_vocab, id_, tokens, eos),
      stops(params.stop),
      decoder(tok, /*skip_special=*/true),
      on_event(std::move(cb)),
      submitted(clock::now()) {}

RequestState::RequestState(uint64_t id_, int64_t arrival_, RequestSnapshot snap, const Tokenizer& tok, EventCallback cb)
    : id(id_),
      arrival(arrival_),
      prompt_tokens(snap.prompt_tokens),
      tokens(std::move(snap.tokens)),
      sampler(Sampler::from_bytes(snap.sampler)),
      stops(StopMatcher::from_json(nlohmann::json::from_cbor(snap.stops))),
      decoder(tok, /*skip_special=*/true),
      on_event(std::move(cb)),
      submitted(clock::now()),
      last_token(submitted),
      cached_prompt_tokens(snap.cached_prompt_tokens) {
  for (int64_t i = prompt_tokens; i < int64_t(tokens.size()); ++i) decoder.push(tokens[size_t(i)]);
  first_token_done = generated() > 0;
  if (snap.has_state) {
    state = std::move(snap.state);
    computed_high = state->pos;
  }
}

RequestSnapshot RequestState::snapshot() const {
  RequestSnapshot s;
  s.id = id;
  s.tokens = tokens;
  s.prompt_tokens = prompt_tokens;
  s.cached_prompt_tokens = cached_prompt_tokens;
  s.has_state = state.has_value();
  if (state) s.state = *state;
  s.sampler = sampler.to_bytes();
  s.stops = nlohmann::json::to_cbor(stops.to_json());
  return s;
}

Event RequestState::on_logits(std::vector<float>& logits, int32_t tok_vocab, SamplingScratch& scratch) {
  const int32_t vocab = sampler.vocab_size();
  for (int32_t i = tok_vocab; i < vocab; ++i) logits[size_t(i)] = -std::numeric_limits<float>::infinity();
  SampleResult r = sampler.sample(logits, scratch);
  tokens.push_back(r.token);
  Event ev;
  ev.request_id = id;
  ev.kind = EventKind::token;
  ev.token = r.token;
  ev.logprobs = std::move(r.logprobs);
  const bool is_eos = r.finish == FinishReason::stop;  // EOS or a stop token: its text is not output
  if (!is_eos) {
    auto m = stops.feed(decoder.push(r.token));
    ev.text = std::move(m.emit);
    if (m.stopped) r.finish = FinishReason::stop;
  }
  if (r.finish != FinishReason::none && !stops.stopped()) ev.text += stops.feed(decoder.flush()).emit + stops.flush();
  ev.finish = r.finish;
  if (ev.finish != FinishReason::none) {
    ev.prompt_tokens = prompt_tokens;
    ev.generated_tokens = generated();
    ev.cached_prompt_tokens = cached_prompt_tokens;
  }
  return ev;
}

Event RequestState::end_event(bool cancelled, std::string error) const {
  Event ev;
  ev.request_id = id;
  ev.kind = EventKind::finished;
  ev.cancelled = cancelled;
  ev.error = std::move(error);
  ev.prompt_tokens = prompt_tokens;
  ev.generated_tokens = generated();
  ev.cached_prompt_tokens = cached_prompt_tokens;
  return ev;
}

}  // namespace strata::engine
