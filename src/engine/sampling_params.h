// Per-request sampling parameters, with OpenAI/vLLM names, defaults and validation.
//
// validate() throws strata::Error with a one-line OpenAI-style message ("temperature must be
// in [0, 2]") so that the server can return it verbatim as an HTTP 400.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/logit_bias.h"

namespace strata {

// Which distribution reported logprobs come from. vLLM (v1) defaults to the raw model output,
// before penalties, temperature and truncation; "processed" is the distribution actually
// sampled from (after every step; truncated tokens get -inf).
enum class LogprobsMode { raw, processed };

inline constexpr int kMaxLogprobs = 20;

// Structured output: the output must be a JSON text the schema accepts (grammar/json_schema.h),
// or tool calls in the chat format's markup (grammar/tool_call_grammar.h); exactly one is set.
// The engine compiles it against its vocabulary and masks every step's logits.
struct StructuredOutput {
  std::string json_schema;   // the schema's JSON text; {"type":"object"} is any JSON object
  std::string tool_calls;    // a tool-call grammar's spec, JSON text
  int32_t after_token = -1;  // constrained only after this token (the end of a reasoning block)
  bool operator==(const StructuredOutput&) const = default;

  static StructuredOutput schema(std::string json_schema) {
    StructuredOutput s;
    s.json_schema = std::move(json_schema);
    return s;
  }
  static StructuredOutput tool_call_spec(std::string spec) {
    StructuredOutput s;
    s.tool_calls = std::move(spec);
    return s;
  }
};

struct SamplingParams {
  double temperature = 1.0;         // 0 = greedy; OpenAI range [0, 2]
  int32_t top_k = 0;                // 0 or -1 = disabled (vLLM accepts both)
  double top_p = 1.0;               // (0, 1]; 1 = disabled
  double min_p = 0.0;               // [0, 1]; 0 = disabled
  double repetition_penalty = 1.0;  // > 0; 1 = disabled; over prompt + generated tokens
  double presence_penalty = 0.0;    // [-2, 2]; over generated tokens
  double frequency_penalty = 0.0;   // [-2, 2]; over generated tokens
  std::optional<int64_t> max_tokens;  // none = bounded only by the context (the engine's limit)
  std::vector<std::string> stop;      // stop strings, matched on the detokenized text
  std::vector<int32_t> stop_token_ids;  // stop tokens in addition to EOS
  bool ignore_eos = false;
  std::optional<uint64_t> seed;       // none = derived from the request id
  std::optional<int> logprobs;        // top-N alternatives, [0, 20]; 0 = sampled token only
  LogprobsMode logprobs_mode = LogprobsMode::raw;
  LogitBias logit_bias;               // token id -> bias in [-100, 100]; ids checked by the Sampler
  std::optional<StructuredOutput> structured;

  bool greedy() const { return temperature == 0.0; }

  // Throws strata::Error naming the first invalid field.
  void validate() const;
};

// JSON with the OpenAI/vLLM field names; missing fields keep their defaults, unknown fields are
// ignored (the server owns the rest of the request). from_json validates and throws
// strata::Error on a wrongly typed or out-of-range field. "stop" may be a string or an array.
void to_json(nlohmann::json& j, const SamplingParams& p);
void from_json(const nlohmann::json& j, SamplingParams& p);

}  // namespace strata
