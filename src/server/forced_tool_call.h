// OpenAI's tool_choice "required" or a named function: the output is calls to those tools in
// the chat format's markup (ChatFormat::tool_call_syntax), decoded under the tool-call grammar
// (grammar/tool_call_grammar.h), so the reply is calls with schema-shaped arguments.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "engine/sampling_params.h"

namespace strata::server {

// `tools`: the OpenAI tools the call may use. Throws ApiError (400, param "tool_choice") for a
// parameters schema the grammar cannot enforce, naming the keyword.
StructuredOutput forced_tool_calls(const nlohmann::ordered_json& tools, const std::string& syntax);

}  // namespace strata::server
