// OpenAI's "response_format": "text" leaves the output free; "json_object" makes it one JSON
// object; "json_schema" ({"name", "schema", "strict", "description"}) one JSON text of the
// schema. Both decode under a grammar (grammar/json_schema.h): the output is guaranteed to
// parse, whatever "strict" says. A schema strata cannot enforce is a 400 naming the keyword.
// The Responses API spells the same object "text.format", with the schema's fields beside
// "type" instead of under "json_schema".
#pragma once
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/sampling_params.h"

namespace strata {
class Tokenizer;
}

namespace strata::server {

// None for "text" or no response_format. Throws ApiError (400, param "response_format").
std::optional<StructuredOutput> parse_response_format(const nlohmann::ordered_json& request);

// The Responses API's text.format object (present, not null). None for "text". Throws ApiError
// (400, param "text").
std::optional<StructuredOutput> parse_text_format(const nlohmann::ordered_json& format);

// When the output starts inside the model's reasoning, the grammar starts after its closing
// </think> token. Throws ApiError naming `param` (the field that asked for the format) when
// the tokenizer has no such single token.
void start_after_reasoning(StructuredOutput& so, const Tokenizer& tok, const char* param = "response_format");

}  // namespace strata::server
