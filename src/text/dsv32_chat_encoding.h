// DeepSeek-V3.2 chat encoding: OpenAI-style messages to the model's prompt text, following
// DeepSeek's encode_messages() in encoding/encoding_dsv32.py (DeepSeek-V3.2 ships no Jinja
// chat template). What sets it apart from V4's (chat_encoding.h):
//   * every user turn closes with <｜Assistant｜> and then <think> (the last user turn in
//     thinking mode) or </think>;
//   * tool results stay tool turns: "\n\n<function_results>", a "\n<result>…</result>" per
//     call in order, "\n</function_results>", then "\n\n<think>" or "\n\n</think>";
//   * tool calls are a "\n\n<｜DSML｜function_calls>" block (arguments must be JSON objects);
//   * a developer turn is a user turn: its tools and response format, then
//     "\n\n# The user's message is: " and its content;
//   * in thinking mode, reasoning is kept only after the last user turn (with drop_thinking,
//     earlier developer turns go away), and each later assistant turn must have reasoning or
//     tool calls.
// Roles: system, user, assistant, tool, developer. Tools go on the system (or developer)
// message, or in the `tools` argument.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace strata {

struct Dsv32ChatOptions {
  bool thinking = false;       // thinking_mode "thinking" (else "chat")
  bool drop_thinking = true;   // in thinking mode, drop reasoning before the last user turn
  bool add_bos = true;         // start with <｜begin▁of▁sentence｜>
};

// Throws strata::Error with a one-line message for malformed input.
std::string encode_chat_dsv32(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                              const Dsv32ChatOptions& options);

}  // namespace strata
