#include "engine/request_state.h"

#include "core/error.h"
#include "engine/sample_step.h"

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

RequestState::RequestState(uint64_t id_, int64_t arrival_, RequestSnapshot snap, std::unique_ptr<models::Sequence> st,
                           const Tokenizer& tok, EventCallback cb)
    : id(id_),
      arrival(arrival_),
      prompt_tokens(snap.prompt_tokens),
      tokens(std::move(snap.tokens)),
      sampler(Sampler::from_bytes(snap.sampler)),
      stops(StopMatcher::from_bytes(snap.stops)),
      decoder(tok, /*skip_special=*/true),
      on_event(std::move(cb)),
      submitted(clock::now()),
      last_token(submitted),
      cached_prompt_tokens(snap.cached_prompt_tokens) {
  for (int64_t i = prompt_tokens; i < int64_t(tokens.size()); ++i) decoder.push(tokens[size_t(i)]);
  first_token_done = generated() > 0;
  if (st) {
    state = std::move(st);
    computed_high = state->pos;
  }
}

RequestSnapshot RequestState::snapshot(const std::string& model_type, const cache::CacheLayout& layout) const {
  RequestSnapshot s;
  s.id = id;
  s.tokens = tokens;
  s.prompt_tokens = prompt_tokens;
  s.cached_prompt_tokens = cached_prompt_tokens;
  s.has_state = state != nullptr;
  s.model_type = model_type;
  if (state) {
    s.pos = state->pos;
    s.mtp_pos = state->mtp_pos;
    s.mtp_hidden = state->mtp_hidden;
    s.caches = cache::export_caches(state->cache_map(layout), layout);
  }
  s.sampler = sampler.to_bytes();
  s.stops = stops.to_bytes();
  return s;
}

Event RequestState::on_logits(std::vector<float>& logits, int32_t tok_vocab, SamplingScratch& scratch) {
  StepOutput r = sample_step(logits, tok_vocab, sampler, scratch, decoder, stops);
  tokens.push_back(r.token);
  Event ev;
  ev.request_id = id;
  ev.kind = EventKind::token;
  ev.token = r.token;
  ev.text = std::move(r.text);
  ev.logprobs = std::move(r.logprobs);
  ev.finish = r.finish;
  if (ev.finish != FinishReason::none) {
    ev.prompt_tokens = prompt_tokens;
    ev.generated_tokens = generated();
    ev.cached_prompt_tokens = cached_prompt_tokens;
    ev.spec_rounds = spec.rounds;
    ev.spec_drafted = spec.drafted;
    ev.spec_accepted = spec.accepted;
  }
  return ev;
}

Event RequestState::replay_one(int32_t t) {
  // EOS and stop tokens have no text; the token that reaches max_tokens has.
  FinishReason f = sampler.append(t);
  Event ev;
  ev.request_id = id;
  ev.token = t;
  if (f != FinishReason::stop) {
    auto m = stops.feed(decoder.push(t));
    ev.text = std::move(m.emit);
    if (m.stopped) f = FinishReason::stop;
  }
  tokens.push_back(t);
  ev.finish = f;
  return ev;
}

std::vector<Event> RequestState::replay(const std::vector<int32_t>& accepted) {
  std::vector<Event> out;
  out.reserve(accepted.size());
  for (int32_t t : accepted) {
    out.push_back(replay_one(t));
    if (out.back().finish != FinishReason::none)
      throw Error("the accepted tokens end the request at token " + std::to_string(generated()) + " of " +
                  std::to_string(accepted.size()));
  }
  first_token_done = generated() > 0;
  return out;
}

std::vector<Event> RequestState::replay_to_end(const std::vector<int32_t>& generated_tokens) {
  std::vector<Event> out;
  out.reserve(generated_tokens.size() + 1);
  for (int32_t t : generated_tokens) {
    Event ev = replay_one(t);
    if (ev.finish == FinishReason::none) {
      out.push_back(std::move(ev));
      continue;
    }
    if (generated() != int64_t(generated_tokens.size()))
      throw Error("the tokens end the request at token " + std::to_string(generated()) + " of " +
                  std::to_string(generated_tokens.size()));
    if (!stops.stopped()) ev.text += stops.feed(decoder.flush()).emit + stops.flush();  // as sample_step
    ev.prompt_tokens = prompt_tokens;
    ev.generated_tokens = generated();
    ev.cached_prompt_tokens = cached_prompt_tokens;
    out.push_back(std::move(ev));
    return out;
  }
  out.push_back(cancel_event());
  return out;
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
  ev.spec_rounds = spec.rounds;
  ev.spec_drafted = spec.drafted;
  ev.spec_accepted = spec.accepted;
  return ev;
}

Event RequestState::cancel_event() {
  Event ev = end_event(true, "");
  if (!stops.stopped()) ev.text = stops.feed(decoder.flush()).emit + stops.flush();
  return ev;
}

}  // namespace strata::engine
