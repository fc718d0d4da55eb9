// One request inside the engine: its tokens, its cache state (absent while waiting or after
// preemption), and its per-request pieces — Sampler, StopMatcher, StreamDecoder — applied to
// each step's logits by sample_step.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "cache/pool.h"
#include "cache/undo_log.h"
#include "engine/engine.h"
#include "engine/request_snapshot.h"
#include "engine/sampler.h"
#include "engine/speculative.h"
#include "engine/stop_matcher.h"
#include "models/model.h"
#include "text/tokenizer.h"

namespace strata::engine {

struct RequestState {
  using clock = std::chrono::steady_clock;

  RequestState(uint64_t id, int64_t arrival, std::vector<int32_t> prompt, const SamplingParams& params,
               int32_t model_vocab, std::vector<int32_t> eos, const Tokenizer& tok, EventCallback cb);

  // Restored from a snapshot: the decoder is rebuilt by replaying the generated tokens (its
  // held-back bytes depend only on them); sampler and stop matcher continue where they were.
  // state: the snapshot's sequence state, rebuilt by the engine (null when it had none).
  RequestState(uint64_t id, int64_t arrival, RequestSnapshot snap, std::unique_ptr<models::Sequence> state,
               const Tokenizer& tok, EventCallback cb);
  // The state's caches are exported as the specs of `layout` (every cache the state holds).
  RequestSnapshot snapshot(const std::string& model_type, const cache::CacheLayout& layout) const;

  uint64_t id;
  int64_t arrival;                 // submit order: the queue's and the scheduler's fairness key
  int64_t prompt_tokens;
  std::vector<int32_t> tokens;     // prompt, then every sampled token
  std::unique_ptr<models::Sequence> state;  // tokens[0 .. state->pos) are in the cache
  cache::PoolSeq pool;             // its slot and blocks in the engine's pool (empty when state is)
  bool in_pool = false;            // state lives in `pool` (pool_binding.h), not in its own memory
  Sampler sampler;
  StopMatcher stops;
  StreamDecoder decoder;
  EventCallback on_event;
  clock::time_point submitted, last_token;
  bool first_token_done = false;
  int64_t cached_prompt_tokens = 0;
  int64_t computed_high = 0;       // most tokens ever in the cache (more than context() after a preemption)
  // Speculative decoding (engine option spec_tokens): the adaptive draft length, this step's
  // verified tokens [pending, drafts...] (empty when the step does not speculate), the undo
  // log of their state writes and the main streams of the step's tokens (the MTP's input).
  std::optional<DraftLength> draft_length;
  SpeculativeStats spec;  // this request's rounds so far (reported on its last event)
  std::vector<int64_t> spec_feed;
  std::vector<int32_t> forced_drafts;  // Request::forced_drafts
  cache::UndoLog undo;
  std::vector<float> hidden;

  int64_t context() const { return state ? state->pos : 0; }
  int64_t pending() const { return int64_t(tokens.size()) - context(); }
  int64_t generated() const { return int64_t(tokens.size()) - prompt_tokens; }

  // Samples the next token from the logits of the last token and builds its event (text with
  // stop strings applied, finish reason, usage on the last one). Masks rows past the
  // tokenizer's vocabulary first.
  Event on_logits(std::vector<float>& logits, int32_t tok_vocab, SamplingScratch& scratch);
  // Advances the request over tokens it generated before (Request::accepted) as if it had
  // sampled them. Returns their events (token and final text), which it does not deliver.
  // Throws strata::Error when one of them would end it.
  std::vector<Event> replay(const std::vector<int32_t>& accepted);
  // Advances the request over every token it generated before, the last allowed to end it:
  // their events as it delivered them, the one that ends it with its finish, usage and
  // released text as on_logits gives them; tokens that stop short of an end are followed by
  // cancel_event(). Throws strata::Error when a token before the last ends it.
  std::vector<Event> replay_to_end(const std::vector<int32_t>& generated);
  // The last event of a request that did not finish by itself.
  Event end_event(bool cancelled, std::string error) const;
  // The last event of a cancelled request: it carries the text held back so far (a partial
  // stop string, an incomplete character), released as a length finish releases it, so that
  // the events' text adds up to everything generated.
  Event cancel_event();

 private:
  Event replay_one(int32_t token);  // as sample_step, minus the draw
};

}  // namespace strata::engine
