// OpenAI-style chat messages read and checked for DeepSeek's own encoders (V4, V3.2): role,
// content (a string or text parts), reasoning, tools and response_format on system / developer
// messages, and assistant tool calls. Malformed input is a strata::Error naming the message.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/dsml.h"

namespace strata {

struct ChatToolCall {
  ToolCall call;
  std::string id;
};

struct ChatMessage {
  size_t src = 0;  // index in the caller's messages, for error messages
  std::string role;
  std::string content;
  std::string reasoning;
  std::vector<ChatToolCall> tool_calls;
  std::vector<const nlohmann::ordered_json*> tools;  // "function" objects
  const nlohmann::ordered_json* response_format = nullptr;
  std::string task;  // DeepSeek-V4's quick-instruction task; "" = none
  bool wo_eos = false;
  std::string tool_call_id;
};

[[noreturn]] void message_error(size_t i, const std::string& what);

// messages[i]; `roles` are the roles the encoder knows. Content is required except on assistant
// messages (tool results show non-text parts as "[Unsupported <type>]", as DeepSeek's encoders
// do); a developer message needs non-empty content.
ChatMessage read_chat_message(const nlohmann::ordered_json& m, size_t i, std::initializer_list<std::string_view> roles);

// The "function" objects of an OpenAI tools array (`where` prefixes errors).
void read_chat_tools(const nlohmann::ordered_json& tools, std::vector<const nlohmann::ordered_json*>& out,
                     const std::string& where);

// The message's tool calls as a DSML block (dsml_tool_calls_block); errors name the message.
std::string message_tool_calls_block(const ChatMessage& m, const dsv4::DsmlBlock& block, bool text_as_argument);

// A request's top-level `tools` (null or an array): attached to the first message when that is
// system or developer, otherwise to a new empty system message put first.
void attach_request_tools(const nlohmann::ordered_json& tools, std::vector<ChatMessage>& msgs);

// The index of the last user or developer message, -1 if none.
template <class Message>
int last_user_index(const std::vector<Message>& msgs) {
  for (size_t k = msgs.size(); k-- > 0;)
    if (msgs[k].role == "user" || msgs[k].role == "developer") return static_cast<int>(k);
  return -1;
}

}  // namespace strata
