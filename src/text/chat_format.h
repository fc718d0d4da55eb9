// A model's chat format: how OpenAI-style messages become its prompt text, and how its output
// is parsed back into reasoning_content, content and tool calls. DeepSeek-V4 has its own
// encoder (chat_encoding.h) and DSML output (chat_parse.h); other models bring a Jinja chat
// template in their checkpoint (rendered by text/jinja) and write <think> / <tool_call> tags
// (tagged_output_parse.h). docs/chat-formats.md describes both.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/chat_encoding.h"
#include "text/chat_parse.h"

namespace strata {

struct ChatRenderOptions {
  bool thinking = false;           // the request asked for reasoning
  std::string reasoning_effort;    // "", "minimal", "low", "medium", "high", "max"
  bool add_generation_prompt = true;
  // Keep earlier turns' reasoning where the format drops it by default (DeepSeek-V4 without
  // tools); a chat template decides that itself, so a Jinja format refuses it.
  bool keep_reasoning = false;
  // chat_template_kwargs: extra template variables (Jinja formats); they override the ones
  // the format sets, enable_thinking included.
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
};

// Model output parsed as it streams. finish() is called when the model's turn is over (its end
// token, a stop string or the length limit); the events of every feed() and finish() add up to
// result(). Throws strata::Error for output the format rejects (DeepSeek-V4's rules).
class ChatOutputParser {
 public:
  virtual ~ChatOutputParser() = default;
  virtual std::vector<StreamEvent> feed(std::string_view delta) = 0;
  virtual std::vector<StreamEvent> finish() = 0;
  virtual const ParsedCompletion& result() const = 0;
};

class ChatFormat {
 public:
  virtual ~ChatFormat() = default;
  virtual std::string name() const = 0;  // "deepseek_v4", "jinja"
  // The markup its model writes tool calls in, as grammar/tool_call_grammar.h names it:
  // "dsml" (DeepSeek-V4), "dsml_function_calls" (DeepSeek-V3.2) or "hermes" (<tool_call> JSON
  // blocks, what its parser reads).
  virtual std::string tool_call_syntax() const = 0;
  // `tools`: null or an OpenAI tools array. Throws strata::Error for messages the format
  // cannot render (the template's raise_exception included).
  virtual std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                             const ChatRenderOptions& o) const = 0;
  // Whether the model's output starts inside a reasoning block after `prompt` (render()'s
  // result for `o`): DeepSeek-V4 in thinking mode; a template whose prompt ends with an open
  // <think>.
  virtual bool output_starts_in_reasoning(const std::string& prompt, const ChatRenderOptions& o) const = 0;
  virtual std::unique_ptr<ChatOutputParser> parser(bool starts_in_reasoning) const = 0;
  // A whole completion, as the format's official parser reads one (`strata parse`): by default
  // the streaming parser fed once; DeepSeek-V4's refuses a completion without its end marker.
  virtual ParsedCompletion parse(std::string_view completion, bool starts_in_reasoning) const {
    auto p = parser(starts_in_reasoning);
    p->feed(completion);
    p->finish();
    return p->result();
  }
};

// The format used when no model is named (`strata render` / `parse` without --model):
// DeepSeek-V4's encoder, the project's first architecture.
std::unique_ptr<ChatFormat> default_chat_format();

// DeepSeek-V4's encoder. ChatRenderOptions map onto ChatOptions: thinking to the thinking mode,
// reasoning_effort "high"/"max" to the effort prompts of `effort_prompts` ("minimal", "low",
// "medium" keep the model's default); template_kwargs are not used. Its parser closes the turn
// with <｜end▁of▁sentence｜> when the output lacks it (the end token is not part of the text).
std::unique_ptr<ChatFormat> deepseek_v4_chat_format(EffortPrompts effort_prompts = EffortPrompts::kPreview);

// DeepSeek-V3.2's own encoder (dsv32_chat_encoding.h: the model ships no Jinja template) and its
// DSML parser (<｜DSML｜function_calls> blocks). No reasoning-effort prompts ("max" is refused);
// the output starts in reasoning when the prompt ends with <think>.
std::unique_ptr<ChatFormat> deepseek_v32_chat_format();

// A Jinja chat template. `variables` are the fixed template variables (bos_token, eos_token and
// the other special tokens); render() adds messages, tools, documents (null),
// add_generation_prompt, enable_thinking, reasoning_effort (when set) and the template_kwargs.
// `end_marker` is the end-of-turn text the output parser stops at if it appears.
std::unique_ptr<ChatFormat> jinja_chat_format(std::string_view template_source, nlohmann::ordered_json variables,
                                              std::string end_marker);

// The format of a model directory: DeepSeek's own encoders for model_type "deepseek_v4" and
// "deepseek_v32" (whatever template the checkpoint carries); otherwise the checkpoint's chat template (chat_template.jinja, or tokenizer_config.json's
// "chat_template": a string, or a list of {name, template} of which "default" is used), with
// the special tokens tokenizer_config.json names. Throws strata::Error when there is none.
std::unique_ptr<ChatFormat> load_chat_format(const std::string& model_dir, const std::string& model_type);

// config.json's "model_type" in a model directory; "" when the file or the key is missing.
std::string model_type_of(const std::string& model_dir);

}  // namespace strata
