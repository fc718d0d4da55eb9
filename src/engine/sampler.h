// The per-request sampler: turns each step's logits into the next token.
//
// A Sampler owns everything that makes a request's output depend only on the request: its
// parameters, its Philox key (from the seed, or the request id when there is none) and the
// count of tokens sampled so far, which is the Philox counter of the next draw, and the token
// history used by the penalties. No state is shared between requests, so a request samples
// the same tokens alone or in any batch, on any thread. The same is true after to_bytes() /
// from_bytes(): the restored sampler continues the stream exactly.
//
// Stop strings are matched on text, not here: see stop_matcher.h.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/finish_reason.h"
#include "engine/logprobs.h"
#include "engine/penalties.h"
#include "engine/sampling_ops.h"
#include "engine/sampling_params.h"
#include "grammar/matcher.h"

namespace strata {

// Working memory for one sample() call. Not part of a request's state: a worker thread can
// keep one and lend it to every request it samples, instead of every request holding ~2 MB.
struct SamplingScratch {
  std::vector<float> logits;       // penalized copy of the logits
  std::vector<Candidate> cands;    // the processed distribution
};

struct SampleResult {
  int32_t token;
  FinishReason finish;  // from the token and the length; stop strings are StopMatcher's
  std::optional<SampledLogprobs> logprobs;  // when params.logprobs is set
};

class Sampler {
 public:
  // Validates params (strata::Error) and checks stop/EOS ids against the vocabulary. The
  // prompt feeds the repetition penalty; eos_token_ids stop generation unless ignore_eos.
  Sampler(SamplingParams params, int32_t vocab_size, uint64_t request_id,
          std::span<const int32_t> prompt_tokens, std::span<const int32_t> eos_token_ids);

  // Samples the next token from logits over the whole vocabulary and records it.
  SampleResult sample(std::span<const float> logits, SamplingScratch& scratch);
  SampleResult sample(std::span<const float> logits);

  // Records a token that was not drawn by sample() (e.g. replayed after a restore): it
  // counts for penalties, max_tokens and the RNG counter exactly like a sampled token.
  FinishReason append(int32_t token);

  // Binds the compiled grammar of params().structured (the engine compiles it: the Sampler has
  // no vocabulary). Until then a structured request samples nothing. A restored sampler
  // continues from its saved grammar state.
  void attach_grammar(std::shared_ptr<const grammar::CompiledGrammar> g);
  const grammar::Matcher* matcher() const { return matcher_ ? &*matcher_ : nullptr; }

  const SamplingParams& params() const { return params_; }
  int32_t vocab_size() const { return vocab_size_; }
  uint64_t rng_key() const { return key_; }
  uint64_t generated() const { return generated_; }
  const TokenHistory& history() const { return history_; }

  // Serialized state: parameters, key, counter, EOS ids and history (sorted, so equal
  // states give equal bytes). to_bytes is the CBOR encoding of to_json.
  nlohmann::json to_json() const;
  static Sampler from_json(const nlohmann::json& j);
  std::vector<uint8_t> to_bytes() const;
  static Sampler from_bytes(std::span<const uint8_t> bytes);

 private:
  Sampler() = default;
  void check_token(int32_t token, const char* what) const;
  FinishReason finish_after(int32_t token) const;

  SamplingParams params_;
  int32_t vocab_size_ = 0;
  uint64_t key_ = 0;
  uint64_t generated_ = 0;
  std::vector<int32_t> eos_;
  TokenHistory history_;
  std::optional<grammar::Matcher> matcher_;
  std::string saved_grammar_state_;  // from a snapshot, until the grammar is attached
};

}  // namespace strata
