// Parsing and validating OpenAI request bodies (/v1/chat/completions, /v1/completions) into
// token prompts and sampling parameters. Everything a client can get wrong is checked here and
// thrown as ApiError (status 400 / 404 with OpenAI's message shape), before the engine sees it.
//
// Chat prompts are rendered by the model's ChatFormat (text/chat_format.h). Chat extras
// (documented in docs/server.md):
//  - thinking on/off: "thinking": bool, or "chat_template_kwargs": {"thinking"|"enable_thinking": bool};
//    default off, except that a "reasoning_effort" alone turns it on.
//  - "reasoning_effort": "low" | "medium" | "high" | "max" ("minimal"/"low"/"medium" use the
//    model's default effort, "max" adds DeepSeek's Think-Max prompt; a chat template gets the
//    value as `reasoning_effort`).
//  - "chat_template_kwargs": passed to a chat template as variables.
//  - "tools" / "tool_choice": "none" leaves the tools out of the prompt, "auto" puts them in;
//    "required" and a named function also decode the output under the tool-call grammar
//    (grammar/tool_call_grammar.h), so the reply is calls with schema-shaped arguments.
//  - "response_format": json_object / json_schema decode under a grammar (response_format.h).
// Fields strata does not act on are 400s naming them (unsupported_fields.h); "logit_bias" ids
// are checked against the vocabulary here.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampling_params.h"

namespace strata {
class ChatFormat;
class Tokenizer;
}

namespace strata::server {

// What requests are checked against.
struct ModelInfo {
  std::string id;                 // the name served by /v1/models
  const Tokenizer* tokenizer = nullptr;
  const ChatFormat* chat_format = nullptr;  // renders chat prompts and parses chat output
  int64_t max_context = 0;        // prompt + generated tokens
  int32_t vocab_size = 0;         // ids accepted in token prompts: [0, vocab_size)
  int max_n = 64;                 // largest "n"
};

enum class Endpoint { chat, completions };

struct ApiRequest {
  Endpoint endpoint = Endpoint::chat;
  std::string model;
  std::vector<std::vector<int32_t>> prompts;  // one for chat; completions may send several
  SamplingParams sampling;                    // max_tokens always set (capped by the context)
  int n = 1;                                  // choices per prompt
  bool stream = false, include_usage = false;
  bool thinking = false;  // chat: the model's output starts inside its reasoning (the prompt opened it)
  int top_logprobs = -1;  // -1: no logprobs; otherwise alternatives per token (0 = sampled only)
  bool echo = false;                     // completions: each choice's text starts with its prompt
  std::vector<std::string> prompt_texts;  // with echo: the text of each prompt

  size_t choices() const { return prompts.size() * size_t(n); }
  // Choice c = prompt (c / n), sample (c % n). Sample j uses seed + j, so n > 1 gives n
  // different samples; without a seed in the request the seed is a random one.
  SamplingParams sampling_for(size_t choice) const;
  size_t prompt_of(size_t choice) const { return choice / size_t(n); }
};

// A request body as a JSON object; a 400 ApiError when it is not one.
nlohmann::ordered_json parse_json_body(std::string_view body);

ApiRequest parse_chat_request(std::string_view body, const ModelInfo& model);
ApiRequest parse_completion_request(std::string_view body, const ModelInfo& model);

}  // namespace strata::server
