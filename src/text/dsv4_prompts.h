// Fixed prompt texts of the DeepSeek-V4 chat encoding (tool instructions, reasoning-effort
// prefixes), verbatim from DeepSeek's encoding/encoding_dsv4.py: a reworded prefix is a
// different prompt to the model.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::dsv4 {

// "## Tools ..." section for the system or developer message; `functions` are the "function"
// objects of OpenAI tools, printed one JSON line each.
std::string render_tools(const std::vector<const nlohmann::ordered_json*>& functions);

// "## Response Format: ..." section for a response_format on a system or developer message.
std::string render_response_format(const nlohmann::ordered_json& schema);

// The two texts that reasoning effort puts in front of the whole prompt in thinking mode.
// The preview release (DeepSeek-V4-Flash/Pro) uses kEffortAbsoluteMax for "max" ("Think Max");
// the -0731/-0813 releases use it for "high" and kEffortBeyondMax for "max".
extern const std::string_view kEffortAbsoluteMax;
extern const std::string_view kEffortBeyondMax;

}  // namespace strata::dsv4
