// DeepSeek-V3.2's chat format: its own encoder (dsv32_chat_encoding.h) and the DSML output
// parser with V3.2's <｜DSML｜function_calls> block, behind ChatFormat.
#include "core/error.h"
#include "text/chat_format.h"
#include "text/dsml_turn_parser.h"
#include "text/dsv32_chat_encoding.h"
#include "text/dsv4_tokens.h"

namespace strata {
namespace {

class Dsv32ChatFormat final : public ChatFormat {
 public:
  std::string name() const override { return "deepseek_v32"; }
  std::string tool_call_syntax() const override { return "dsml_function_calls"; }

  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     const ChatRenderOptions& o) const override {
    // The official encoder has no reasoning-effort prompts, and always opens the assistant
    // turn after a user turn.
    if (!o.reasoning_effort.empty() && o.reasoning_effort != "minimal" && o.reasoning_effort != "low" &&
        o.reasoning_effort != "medium" && o.reasoning_effort != "high")
      throw Error("reasoning_effort must be one of minimal, low, medium, high (got \"" + o.reasoning_effort + "\")");
    if (!o.add_generation_prompt && messages.is_array() && !messages.empty() && messages.back().is_object() &&
        messages.back().value("role", std::string()) != "assistant")
      throw Error("DeepSeek-V3.2's encoder always opens the assistant turn after a user or tool turn");
    Dsv32ChatOptions c;
    c.thinking = o.thinking;
    c.drop_thinking = !o.keep_reasoning;
    return encode_chat_dsv32(messages, tools, c);
  }

  bool output_starts_in_reasoning(const std::string& prompt, const ChatRenderOptions&) const override {
    return prompt.ends_with(dsv4::kThinkStart);
  }

  std::unique_ptr<ChatOutputParser> parser(bool starts_in_reasoning) const override {
    return std::make_unique<DsmlTurnParser>(starts_in_reasoning, dsv4::kFunctionCallsBlock);
  }
  ParsedCompletion parse(std::string_view completion, bool starts_in_reasoning) const override {
    return parse_completion(completion, starts_in_reasoning, dsv4::kFunctionCallsBlock);
  }
};

}  // namespace

std::unique_ptr<ChatFormat> deepseek_v32_chat_format() { return std::make_unique<Dsv32ChatFormat>(); }

}  // namespace strata
