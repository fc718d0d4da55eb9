// The chat format of a model that brings a Jinja chat template: prompts rendered by strata's
// Jinja interpreter with the variables transformers passes, output parsed for <think> and
// <tool_call> tags.
#pragma once
#include <string>
#include <string_view>

#include "text/chat_format.h"
#include "text/jinja/template.h"

namespace strata {

class JinjaChatFormat final : public ChatFormat {
 public:
  // Parses the template now (throws strata::Error for one that does not parse).
  JinjaChatFormat(std::string_view template_source, nlohmann::ordered_json variables, std::string end_marker);

  std::string name() const override { return "jinja"; }
  std::string tool_call_syntax() const override { return "hermes"; }
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     const ChatRenderOptions& o) const override;
  bool output_starts_in_reasoning(const std::string& prompt, const ChatRenderOptions& o) const override;
  std::unique_ptr<ChatOutputParser> parser(bool starts_in_reasoning) const override;

  // What render() passes to the template: messages (as given), tools (null without),
  // documents (null), add_generation_prompt, the special tokens, enable_thinking, then
  // reasoning_effort when set, then the template_kwargs, which override any of these.
  nlohmann::ordered_json variables(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                   const ChatRenderOptions& o) const;

 private:
  jinja::Template template_;
  nlohmann::ordered_json fixed_;
  std::string end_marker_;
};

}  // namespace strata
