// The grammar of a forced tool call (OpenAI's tool_choice "required" or a named function): the
// chat format's own tool-call markup around each function's arguments, which follow the
// function's JSON Schema (json_schema.h). The output is then nothing but calls, which the
// format's output parser turns into tool_calls.
//
//   dsml   (DeepSeek-V4): "\n\n<｜DSML｜tool_calls>\n" invoke ("\n" invoke)* "\n</｜DSML｜tool_calls>",
//          invoke = <｜DSML｜invoke name="NAME">\n params \n</｜DSML｜invoke>, each parameter in
//          the schema's order as <｜DSML｜parameter name="K" string="true|false">VALUE</｜DSML｜parameter>
//          joined by "\n": string values raw (UTF-8 without '<' before '/'), others as JSON.
//   hermes (Qwen3 and the templates that follow it): <tool_call>\n{"name": "NAME", "arguments":
//          ARGS}\n</tool_call>, several joined by "\n".
//
// A marker is the tokenizer's added token when one has exactly its text, else its bytes.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "grammar/grammar.h"

namespace strata::grammar {

using AddedTokenLookup = std::function<std::optional<int32_t>(std::string_view text)>;

// spec: {"syntax": "dsml"|"dsml_function_calls"|"hermes", "tools": [OpenAI function tools allowed],
// "parallel": bool}; dsml_function_calls is DeepSeek-V3.2's <｜DSML｜function_calls> block.
// Throws strata::Error for a malformed spec or a parameters schema json_schema.h refuses.
Grammar tool_call_grammar(const nlohmann::ordered_json& spec, const AddedTokenLookup& added_token);

}  // namespace strata::grammar
