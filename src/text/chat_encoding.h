// DeepSeek-V4 chat encoding: OpenAI-style messages to the model's prompt text, following
// DeepSeek's encode_messages() in encoding/encoding_dsv4.py byte for byte (the conformance
// vectors in shared/conformance/deepseek-v4-encoding check this).
//
// Roles: system, user, assistant, tool, developer, latest_reminder. Tools go on the system (or
// developer) message, or in the `tools` argument. Assistant turns may carry reasoning_content
// and tool_calls (arguments as a JSON string, rendered as DSML). Tool results are folded into
// user turns as <tool_result> blocks, in the order of the calls. Without tools, reasoning of
// turns before the last user message is dropped; with tools it is kept. Messages may also
// carry the official extras `task` (quick-instruction token), `wo_eos` and `response_format`.
//
// Messages are nlohmann::ordered_json because the tool schemas are printed in the caller's key
// order, as Python prints dicts; parse request bodies with ordered_json to keep it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace strata {

// Which release's reasoning-effort table to use (the prefix text is put in front of the prompt
// in thinking mode only).
enum class EffortPrompts {
  kPreview,      // DeepSeek-V4-Flash/Pro: "" or "high" add nothing, "max" is Think Max
  kRelease0731,  // -0731/-0813 releases: "" or "low" add nothing, "high" and "max" have own texts
};

struct ChatOptions {
  std::string thinking_mode = "thinking";  // "chat" | "thinking"
  std::string reasoning_effort;            // "" | "low" | "high" | "max" (allowed set per table)
  EffortPrompts effort_prompts = EffortPrompts::kPreview;
  bool drop_thinking = true;          // drop earlier turns' reasoning when no tools are given
  bool add_bos = true;                // start with <｜begin▁of▁sentence｜>
  bool add_generation_prompt = true;  // after a final user turn, open the assistant turn
};

// `tools`: null or an OpenAI tools array; non-empty, it is attached to the first message when
// that is system or developer, otherwise it comes in a new empty system message. Throws
// strata::Error with a one-line message for malformed input (unknown role, missing content,
// bad tool_calls or tools, unknown option values).
std::string encode_chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                        const ChatOptions& options);
inline std::string encode_chat(const nlohmann::ordered_json& messages, const ChatOptions& options) {
  return encode_chat(messages, nullptr, options);
}

}  // namespace strata
