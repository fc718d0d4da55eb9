#include "server/forced_tool_call.h"

#include "core/error.h"
#include "grammar/tool_call_grammar.h"
#include "server/api_error.h"

namespace strata::server {

StructuredOutput forced_tool_calls(const nlohmann::ordered_json& tools, const std::string& syntax) {
  const nlohmann::ordered_json spec = {{"syntax", syntax}, {"tools", tools}, {"parallel", true}};
  try {
    grammar::tool_call_grammar(spec, nullptr);  // refused here, with the keyword named, not at submit
  } catch (const Error& e) {
    throw bad_request(std::string("'tool_choice': the tools cannot be enforced: ") + e.what(), "tool_choice");
  }
  return StructuredOutput::tool_call_spec(spec.dump());
}

}  // namespace strata::server
