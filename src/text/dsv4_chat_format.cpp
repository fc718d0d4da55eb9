// DeepSeek-V4's chat format: its own encoder and DSML output parser behind ChatFormat.
#include "core/error.h"
#include "text/chat_format.h"
#include "text/dsml_turn_parser.h"
#include "text/dsv4_tokens.h"

namespace strata {
namespace {

// The request's effort as DeepSeek's encoder takes it: "minimal", "low" and "medium" keep the
// model's default reasoning; "high" and "max" select the effort prompts.
std::string encoder_effort(const std::string& e) {
  if (e.empty() || e == "minimal" || e == "low" || e == "medium") return "";
  if (e == "high" || e == "max") return e;
  throw Error("reasoning_effort must be one of minimal, low, medium, high, max (got \"" + e + "\")");
}

class Dsv4ChatFormat final : public ChatFormat {
 public:
  explicit Dsv4ChatFormat(EffortPrompts prompts) : prompts_(prompts) {}
  std::string name() const override { return "deepseek_v4"; }
  std::string tool_call_syntax() const override { return "dsml"; }

  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     const ChatRenderOptions& o) const override {
    ChatOptions c;
    c.thinking_mode = o.thinking ? "thinking" : "chat";
    c.reasoning_effort = encoder_effort(o.reasoning_effort);
    c.effort_prompts = prompts_;
    c.add_generation_prompt = o.add_generation_prompt;
    c.drop_thinking = !o.keep_reasoning;
    return encode_chat(messages, tools, c);
  }

  // In thinking mode the prompt opens <think> (or the model is told to reason): the output
  // starts with the reasoning.
  bool output_starts_in_reasoning(const std::string&, const ChatRenderOptions& o) const override { return o.thinking; }

  std::unique_ptr<ChatOutputParser> parser(bool starts_in_reasoning) const override {
    return std::make_unique<DsmlTurnParser>(starts_in_reasoning, dsv4::kToolCallsBlock);
  }
  ParsedCompletion parse(std::string_view completion, bool starts_in_reasoning) const override {
    return parse_completion(completion, starts_in_reasoning);
  }

 private:
  EffortPrompts prompts_;
};

}  // namespace

std::unique_ptr<ChatFormat> deepseek_v4_chat_format(EffortPrompts effort_prompts) {
  return std::make_unique<Dsv4ChatFormat>(effort_prompts);
}

std::unique_ptr<ChatFormat> default_chat_format() { return deepseek_v4_chat_format(); }

}  // namespace strata
