#include "text/dsv4_prompts.h"

#include "text/dsv4_tokens.h"
#include "text/py_json.h"

namespace strata::dsv4 {

const std::string_view kEffortAbsoluteMax =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root "
    "cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial "
    "scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, considered "
    "alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";

const std::string_view kEffortBeyondMax =
    "Reasoning Effort: Beyond maximum — exhaustive, relentless, and uncompromising.\n"
    "You MUST reason with the utmost depth and rigor, leaving absolutely nothing to chance: exhaustively "
    "decompose the problem into its most fundamental components, trace every causal chain to its root, and "
    "resolve the underlying cause rather than any surface symptom.\n"
    "Do not stop reasoning until you have independently verified the solution from multiple angles and are "
    "certain that no assumption remains unchecked and no error remains undiscovered.\n\n";

std::string render_tools(const std::vector<const nlohmann::ordered_json*>& functions) {
  const std::string d(kDsml);
  std::string out =
      "## Tools\n\n"
      "You have access to a set of tools to help answer the user's question. You can invoke tools by writing a "
      "\"<" + d + "tool_calls>\" block like the following:\n\n"
      "<" + d + "tool_calls>\n"
      "<" + d + "invoke name=\"$TOOL_NAME\">\n"
      "<" + d + "parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</" + d + "parameter>\n"
      "...\n"
      "</" + d + "invoke>\n"
      "<" + d + "invoke name=\"$TOOL_NAME2\">\n"
      "...\n"
      "</" + d + "invoke>\n"
      "</" + d + "tool_calls>\n\n"
      "String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, "
      "booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n"
      "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside "
      "<think>...</think> BEFORE any tool calls or final response.\n\n"
      "Otherwise, output directly after </think> with tool calls or final response.\n\n"
      "### Available Tool Schemas\n\n";
  for (size_t i = 0; i < functions.size(); ++i) {
    if (i) out += '\n';
    append_py_json(out, *functions[i]);
  }
  out += "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n";
  return out;
}

std::string render_response_format(const nlohmann::ordered_json& schema) {
  return "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n" + py_json(schema);
}

}  // namespace strata::dsv4
