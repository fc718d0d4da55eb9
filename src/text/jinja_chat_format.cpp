#include "text/jinja_chat_format.h"

#include "core/error.h"
#include "text/tagged_output_parse.h"

namespace strata {
namespace {

class TaggedChatOutputParser final : public ChatOutputParser {
 public:
  TaggedChatOutputParser(bool starts_in_reasoning, std::string end_marker) : p_(starts_in_reasoning, std::move(end_marker)) {}
  std::vector<StreamEvent> feed(std::string_view delta) override { return p_.feed(delta); }
  std::vector<StreamEvent> finish() override { return p_.finish(); }
  const ParsedCompletion& result() const override { return p_.result(); }

 private:
  TaggedOutputParser p_;
};

}  // namespace

JinjaChatFormat::JinjaChatFormat(std::string_view template_source, nlohmann::ordered_json variables,
                                 std::string end_marker)
    : template_(template_source), fixed_(std::move(variables)), end_marker_(std::move(end_marker)) {
  if (!fixed_.is_object()) throw Error("chat template variables must be a JSON object");
}

nlohmann::ordered_json JinjaChatFormat::variables(const nlohmann::ordered_json& messages,
                                                  const nlohmann::ordered_json& tools,
                                                  const ChatRenderOptions& o) const {
  nlohmann::ordered_json v = nlohmann::ordered_json::object();
  v["messages"] = messages;
  v["tools"] = tools.is_null() ? nlohmann::ordered_json(nullptr) : tools;
  v["documents"] = nullptr;
  v["add_generation_prompt"] = o.add_generation_prompt;
  for (const auto& [k, t] : fixed_.items()) v[k] = t;
  v["enable_thinking"] = o.thinking;
  if (!o.reasoning_effort.empty()) v["reasoning_effort"] = o.reasoning_effort;
  if (!o.template_kwargs.is_null() && !o.template_kwargs.is_object())
    throw Error("chat_template_kwargs must be a JSON object");
  if (o.template_kwargs.is_object())
    for (const auto& [k, t] : o.template_kwargs.items()) v[k] = t;
  return v;
}

std::string JinjaChatFormat::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                    const ChatRenderOptions& o) const {
  if (o.keep_reasoning) throw Error("keep_reasoning: a chat template decides itself which reasoning it keeps");
  return template_.render(variables(messages, tools, o));
}

bool JinjaChatFormat::output_starts_in_reasoning(const std::string& prompt, const ChatRenderOptions&) const {
  const size_t open = prompt.rfind("<think>");
  if (open == std::string::npos) return false;
  // An open <think> at the very end (whitespace aside): the model continues the reasoning.
  for (size_t i = open + 7; i < prompt.size(); ++i)
    if (prompt[i] != '\n' && prompt[i] != ' ' && prompt[i] != '\t' && prompt[i] != '\r') return false;
  return true;
}

std::unique_ptr<ChatOutputParser> JinjaChatFormat::parser(bool starts_in_reasoning) const {
  return std::make_unique<TaggedChatOutputParser>(starts_in_reasoning, end_marker_);
}

std::unique_ptr<ChatFormat> jinja_chat_format(std::string_view template_source, nlohmann::ordered_json variables,
                                              std::string end_marker) {
  return std::make_unique<JinjaChatFormat>(template_source, std::move(variables), std::move(end_marker));
}

}  // namespace strata
