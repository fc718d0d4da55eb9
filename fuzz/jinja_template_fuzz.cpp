// Jinja chat templates: an untrusted template source (a checkpoint's chat_template) parsed and
// rendered with a conversation like a server's. Rendering is bounded in steps, depth and
// output (text/jinja/limits.h): any template must end with text or a strata::Error.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/jinja/template.h"

namespace {
const nlohmann::ordered_json& variables() {
  static const auto v = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "reasoning_content": "Call the tool.",
       "tool_calls": [{"id": "c1", "type": "function",
                       "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"},
      {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}}}],
    "add_generation_prompt": true, "enable_thinking": true, "bos_token": "<s>", "eos_token": "</s>",
    "documents": null
  })");
  return v;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const strata::jinja::Template t(std::string_view(reinterpret_cast<const char*>(data), size));
    (void)t.render(variables());
  } catch (const strata::Error&) {
  }
  return 0;
}
