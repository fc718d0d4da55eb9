// Parsing and validating an OpenAI Responses API request (POST /v1/responses) into the chat
// request it amounts to: `instructions` and `input` become chat messages rendered by the
// model's chat format, flat function tools become chat tools, `text.format` becomes the same
// StructuredOutput as chat's response_format, `reasoning.effort` turns thinking on like chat's
// reasoning_effort, and `tool_choice` follows chat's rules ("required" or a named function
// decode under the tool-call grammar, forced_tool_call.h). Every field is checked here (a 400
// naming it), and every field strata does not act on is a 400 too: it keeps no responses
// (`previous_response_id`, `background`), runs no built-in tools, adds no `include` extras.
//
// Input items: messages {"role": user|system|developer|assistant, "content": string or
// input_text / output_text parts}, function_call {"call_id", "name", "arguments"} (joined to
// the assistant turn before it), function_call_output {"call_id", "output"} (a tool message),
// reasoning items from an earlier output (their reasoning_text becomes the next assistant
// turn's reasoning_content, which the chat format keeps or drops as it does for chat).
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace strata::server {

struct ResponsesRequest {
  ApiRequest api;  // what the engine runs: one chat prompt, n = 1
  // The request's settings as the response object repeats them (OpenAI's defaults filled in):
  // instructions, max_output_tokens, metadata, parallel_tool_calls, reasoning, store,
  // temperature, text, tool_choice, tools (Responses' flat shape), top_p, user.
  nlohmann::ordered_json settings;
};

// Throws ApiError (400 naming the field; 404 for another model).
ResponsesRequest parse_responses_request(std::string_view body, const ModelInfo& model);

}  // namespace strata::server
