// OpenAI's logit_bias: a bias in [-100, 100] added to chosen tokens' logits before sampling
// (greedy included), so -100 in effect bans a token and +100 in effect forces it.
//
// Applied first among the logits processors, before the penalties (vLLM's order: logit bias is
// one of its non-argmax-invariant logits processors, which run before the penalties). The bias
// is part of the request's SamplingParams, so the request's own Sampler applies it wherever it
// samples — plain decoding, speculative verification, a restored snapshot — and the output
// stays a function of the request alone.
#pragma once
#include <cstdint>
#include <map>
#include <span>

#include <nlohmann/json_fwd.hpp>

namespace strata {

// Token id -> bias. Ordered, so its JSON (and a snapshot's bytes) depend on the contents only.
using LogitBias = std::map<int32_t, double>;

inline constexpr double kMaxLogitBias = 100.0;

// Throws strata::Error ("logit_bias ...") for a negative id or a bias outside [-100, 100].
void validate_logit_bias(const LogitBias& bias);

// OpenAI's JSON form: an object whose keys are token ids written as decimal integers and whose
// values are numbers. Throws strata::Error ("logit_bias ...") naming the bad key or value.
LogitBias logit_bias_from_json(const nlohmann::json& j);
nlohmann::json logit_bias_to_json(const LogitBias& bias);

// Adds each bias to its token's logit, in float like the rest of sampling (ids must be < size).
void apply_logit_bias(std::span<float> logits, const LogitBias& bias);

}  // namespace strata
