#include "server/response_format.h"

#include <string>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"
#include "server/json_field.h"
#include "text/tokenizer.h"

namespace strata::server {
namespace {

using ojson = nlohmann::ordered_json;

// `fmt` is the format object, spelled `path` in messages. A json_schema's name, schema and
// strict are in fmt.json_schema when `nested` (chat), in fmt itself otherwise (Responses).
std::optional<StructuredOutput> from_format(const ojson& fmt, const std::string& path, const char* param, bool nested) {
  if (!fmt.is_object() || !fmt.contains("type") || !fmt["type"].is_string())
    throw bad_request("'" + path + "' must be an object with a string 'type'.", param);
  const std::string type = fmt["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  ojson schema;
  if (type == "json_object") {
    schema = {{"type", "object"}};
  } else if (type == "json_schema") {
    const std::string at = nested ? path + ".json_schema" : path;
    const ojson* js = !nested ? &fmt : fmt.contains("json_schema") ? &fmt["json_schema"] : nullptr;
    if (!js || !js->is_object()) throw bad_request("'" + at + "' must be an object with the 'schema'.", param);
    if (js->contains("name") && !(*js)["name"].is_string())
      throw bad_request("'" + at + ".name' must be a string.", param);
    if (js->contains("strict") && !(*js)["strict"].is_boolean() && !(*js)["strict"].is_null())
      throw bad_request("'" + at + ".strict' must be a boolean.", param);
    if (!js->contains("schema") || !((*js)["schema"].is_object() || (*js)["schema"].is_boolean()))
      throw bad_request("'" + at + ".schema' must be a JSON Schema object.", param);
    schema = (*js)["schema"];
  } else {
    throw bad_request("'" + path + ".type' must be one of text, json_object, json_schema.", param);
  }
  try {
    grammar::grammar_from_json_schema(schema);  // refused here, with the keyword named, not at submit
  } catch (const Error& e) {
    throw bad_request("'" + path + "': " + e.what(), param);
  }
  return StructuredOutput::schema(schema.dump());
}

}  // namespace

std::optional<StructuredOutput> parse_response_format(const ojson& j) {
  const ojson* rf = field(j, "response_format");
  if (!rf) return std::nullopt;
  return from_format(*rf, "response_format", "response_format", /*nested=*/true);
}

std::optional<StructuredOutput> parse_text_format(const ojson& format) {
  return from_format(format, "text.format", "text", /*nested=*/false);
}

void start_after_reasoning(StructuredOutput& so, const Tokenizer& tok, const char* param) {
  const auto end = tok.token_to_id("</think>");
  if (!end)
    throw unsupported_value(param, std::string("'") + param +
                                       "' with thinking on needs a single </think> token, which this "
                                       "tokenizer lacks; turn thinking off.");
  so.after_token = *end;
}

}  // namespace strata::server
