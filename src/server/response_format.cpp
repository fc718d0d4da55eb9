#include "server/response_format.h"

#include "core/error.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"
#include "server/json_field.h"
#include "text/tokenizer.h"

namespace strata::server {

using ojson = nlohmann::ordered_json;

std::optional<StructuredOutput> parse_response_format(const ojson& j) {
  const ojson* rf = field(j, "response_format");
  if (!rf || rf->is_null()) return std::nullopt;
  if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string())
    throw bad_request("'response_format' must be an object with a string 'type'.", "response_format");
  const std::string type = (*rf)["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  ojson schema;
  if (type == "json_object") {
    schema = {{"type", "object"}};
  } else if (type == "json_schema") {
    const ojson* js = rf->contains("json_schema") ? &(*rf)["json_schema"] : nullptr;
    if (!js || !js->is_object())
      throw bad_request("'response_format.json_schema' must be an object with the 'schema'.", "response_format");
    if (js->contains("name") && !(*js)["name"].is_string())
      throw bad_request("'response_format.json_schema.name' must be a string.", "response_format");
    if (js->contains("strict") && !(*js)["strict"].is_boolean() && !(*js)["strict"].is_null())
      throw bad_request("'response_format.json_schema.strict' must be a boolean.", "response_format");
    if (!js->contains("schema") || !((*js)["schema"].is_object() || (*js)["schema"].is_boolean()))
      throw bad_request("'response_format.json_schema.schema' must be a JSON Schema object.", "response_format");
    schema = (*js)["schema"];
  } else {
    throw bad_request("'response_format.type' must be one of text, json_object, json_schema.", "response_format");
  }
  try {
    grammar::grammar_from_json_schema(schema);  // refused here, with the keyword named, not at submit
  } catch (const Error& e) {
    throw bad_request(std::string("'response_format': ") + e.what(), "response_format");
  }
  return StructuredOutput{schema.dump(), -1};
}

void start_after_reasoning(StructuredOutput& so, const Tokenizer& tok) {
  const auto end = tok.token_to_id("</think>");
  if (!end)
    throw unsupported_value("response_format",
                            "'response_format' with thinking on needs a single </think> token, which this "
                            "tokenizer lacks; turn thinking off.");
  so.after_token = *end;
}

}  // namespace strata::server
