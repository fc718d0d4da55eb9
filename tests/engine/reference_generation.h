// The tests' reference decode loop: one request generated to completion on one sequence by
// the plainest path — prefill, then sample / decode (or draft with the MTP block, verify, roll
// back) until a finish reason — with the same per-token pieces the engine applies (sample_step:
// Sampler, StopMatcher, StreamDecoder). The product's one decode loop is the engine's; the
// engine's outputs are checked against this one bit for bit.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache/undo_log.h"
#include "core/error.h"
#include "engine/finish_reason.h"
#include "engine/logprobs.h"
#include "engine/sample_step.h"
#include "engine/sampler.h"
#include "engine/sampling_params.h"
#include "engine/speculative.h"
#include "engine/stop_matcher.h"
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
inline GenerationStats generate(const models::Model& model, models::Sequence& state, const Tokenizer& tok,
                                const std::vector<int32_t>& prompt, const SamplingParams& params, uint64_t request_id,
                                const std::function<bool(const GenerationEvent&)>& on_event,
                                const SpeculativeOptions& spec = {}) {
  using clock = std::chrono::steady_clock;
  if (prompt.empty()) throw Error("the prompt is empty");
  const auto& facts = model.facts();
  const int32_t vocab = int32_t(facts.vocab_size);
  const int64_t room = model.max_positions() - state.pos;
  if (int64_t(prompt.size()) > room)
    throw Error("prompt of " + std::to_string(prompt.size()) + " tokens exceeds the context (" +
                std::to_string(room) + " positions left of " + std::to_string(model.max_positions()) + ")");
  SamplingParams p = params;
  const int64_t max_new = room - int64_t(prompt.size());
  if (!p.max_tokens || *p.max_tokens > max_new) p.max_tokens = max_new;

  std::vector<int32_t> eos;
  for (int64_t e : facts.eos_token_ids) eos.push_back(int32_t(e));
  if (tok.eos_id() >= 0 && std::find(eos.begin(), eos.end(), tok.eos_id()) == eos.end()) eos.push_back(tok.eos_id());
  Sampler sampler(p, vocab, request_id, prompt, eos);
  StopMatcher stops(p.stop);
  StreamDecoder decoder(tok, /*skip_special=*/true);
  SamplingScratch scratch;

  GenerationStats st;
  st.prompt_tokens = int64_t(prompt.size());
  const auto t0 = clock::now();
  std::vector<int64_t> ids(prompt.begin(), prompt.end());
  const bool speculate = spec.max_draft > 0;
  if (speculate && model.n_mtp() == 0) throw Error("speculative decoding needs an MTP block; the checkpoint has none");
  MtpDrafter drafter(model);
  std::vector<float> hidden;
  std::vector<float> logits = model.forward(state, ids.data(), int64_t(ids.size()), speculate ? &hidden : nullptr);
  if (speculate) drafter.sync(state, ids.data(), int64_t(ids.size()), hidden.data());
  auto t1 = clock::now();
  st.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  const int32_t tok_vocab = tok.vocab_size();

  // Samples one row of logits and reports it; false when generation ends there.
  auto emit = [&](std::vector<float>& row) {
    StepOutput r = sample_step(row, tok_vocab, sampler, scratch, decoder, stops);
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
      return false;
    }
    return r.finish == FinishReason::none;
  };

  if (!speculate) {
    while (emit(logits)) logits = model.decode(state, st.tokens.back());
  } else if (emit(logits)) {
    DraftLength length(spec.max_draft);
    const int64_t V = facts.vocab_size;
    std::vector<float> row(static_cast<size_t>(V));
    cache::UndoLog undo;
    bool going = true;
    while (going) {
      const int64_t pending = st.tokens.back(), pos0 = state.pos;
      // Drafts past max_tokens or the context would never be kept.
      int64_t k = spec.adaptive ? length.next(spec.load) : spec.max_draft;
      k = std::min({k, *p.max_tokens - st.generated_tokens - 1, model.max_positions() - pos0 - 1});
      const auto tv = clock::now();  // drafting + verification: what a round with drafts costs
      std::vector<int64_t> feed{pending};
      if (k > 0) {
        auto d = drafter.draft(state, pending, int(k), tok_vocab, &p.logit_bias);
        if (spec.forced) force_drafts(d, *spec.forced, st.generated_tokens);
        feed.insert(feed.end(), d.begin(), d.end());
      }
      const int64_t n = int64_t(feed.size());
      auto all = model.forward_all(state, feed.data(), n, undo, &hidden);
      length.observe_time(n, std::chrono::duration<double>(clock::now() - tv).count());
      int64_t keep = 0;
      while (keep < n) {
        std::copy_n(all.begin() + keep * V, V, row.begin());
        going = emit(row);
        ++keep;
        if (!going || keep == n || st.tokens.back() != feed[size_t(keep)]) break;
      }
      model.rollback(state, undo, pos0 + keep);
      undo.clear();
      drafter.sync(state, feed.data(), keep, hidden.data());
      const int64_t accepted = keep - 1;
      length.observe(int(n - 1), int(accepted));
      st.spec.rounds += 1;
      st.spec.drafted += n - 1;
      st.spec.accepted += accepted;
      st.spec.emitted += keep;
    }
  }
  st.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return st;
}

}  // namespace strata
