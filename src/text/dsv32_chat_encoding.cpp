#include "text/dsv32_chat_encoding.h"

#include <vector>

#include "core/error.h"
#include "text/chat_messages.h"
#include "text/dsml.h"
#include "text/dsv4_prompts.h"
#include "text/dsv4_tokens.h"
#include "text/py_json.h"

namespace strata {

namespace {

using Json = nlohmann::ordered_json;
using namespace dsv4;

// The "## Tools" section, verbatim from encoding_dsv32.py's TOOLS_SYSTEM_TEMPLATE.
std::string render_tools_v32(const std::vector<const Json*>& functions) {
  const std::string d(kDsml);
  std::string out =
      "## Tools\n"
      "You have access to a set of tools you can use to answer the user's question.\n"
      "You can invoke functions by writing a \"<" + d + "function_calls>\" block like the following as part of your "
      "reply to the user:\n"
      "<" + d + "function_calls>\n"
      "<" + d + "invoke name=\"$FUNCTION_NAME\">\n"
      "<" + d + "parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</" + d + "parameter>\n"
      "...\n"
      "</" + d + "invoke>\n"
      "<" + d + "invoke name=\"$FUNCTION_NAME2\">\n"
      "...\n"
      "</" + d + "invoke>\n"
      "</" + d + "function_calls>\n"
      "String and scalar parameters should be specified as is without any escaping or quotes, while lists and "
      "objects should use JSON format. The \"string\" attribute should be set to \"true\" for string type "
      "parameters and \"false\" for other types (numbers, booleans, arrays, objects).\n"
      "If the thinking_mode is enabled, then after function results you should strongly consider outputting a "
      "thinking block. Here is an example:\n"
      "<" + d + "function_calls>\n"
      "...\n"
      "</" + d + "function_calls>\n"
      "<function_results>\n"
      "...\n"
      "</function_results>\n"
      "<think>...thinking about results</think>\n"
      "Here are the functions available in JSONSchema format:\n"
      "<functions>\n";
  for (size_t i = 0; i < functions.size(); ++i) {
    if (i) out += '\n';
    append_py_json(out, *functions[i]);
  }
  out += "\n</functions>\n";
  return out;
}

// The tools and response format a system or developer message carries, each after a blank line.
std::string extras(const ChatMessage& m) {
  std::string out;
  if (!m.tools.empty()) out += "\n\n" + render_tools_v32(m.tools);
  if (m.response_format) out += "\n\n" + render_response_format(*m.response_format);
  return out;
}

// Before the last user turn: assistant turns lose their reasoning, developer turns go away.
std::vector<ChatMessage> drop_thinking(std::vector<ChatMessage> msgs) {
  const int last_user = last_user_index(msgs);
  std::vector<ChatMessage> out;
  for (size_t k = 0; k < msgs.size(); ++k) {
    ChatMessage& m = msgs[k];
    if (m.role == "user" || m.role == "system" || m.role == "tool" || static_cast<int>(k) >= last_user) {
      out.push_back(std::move(m));
    } else if (m.role == "assistant") {
      m.reasoning.clear();
      out.push_back(std::move(m));
    }
  }
  return out;
}

void render(const std::vector<ChatMessage>& msgs, size_t i, bool thinking, int last_user, std::string& out) {
  const ChatMessage& m = msgs[i];
  const bool opens_thinking = thinking && static_cast<int>(i) == last_user;
  if (m.role == "system") {
    out += m.content + extras(m);
  } else if (m.role == "developer" || m.role == "user") {
    out += kUser;
    if (m.role == "developer") out += extras(m) + "\n\n# The user's message is: ";
    out += m.content;
    out += kAssistant;
    out += opens_thinking ? kThinkStart : kThinkEnd;
  } else if (m.role == "tool") {
    size_t prev = i;  // the assistant turn these results answer
    while (prev > 0 && msgs[prev - 1].role == "tool") --prev;
    if (prev == 0 || msgs[prev - 1].role != "assistant")
      message_error(m.src, "a tool result must follow an assistant message with tool calls");
    const ChatMessage& a = msgs[prev - 1];
    const size_t order = i - prev + 1;
    if (a.tool_calls.size() < order) message_error(m.src, "more tool results than the assistant's tool calls");
    if (order == 1) out += "\n\n<function_results>";
    out += "\n<result>" + m.content + "</result>";
    if (order == a.tool_calls.size()) {
      out += "\n</function_results>\n\n";
      out += thinking && static_cast<int>(i) >= last_user ? kThinkStart : kThinkEnd;
    }
  } else {  // assistant
    if (thinking && static_cast<int>(i) > last_user) {
      if (m.reasoning.empty() && m.tool_calls.empty())
        message_error(m.src, "in thinking mode an assistant turn after the last user turn needs reasoning_content "
                             "or tool_calls");
      out += m.reasoning;
      out += kThinkEnd;
    }
    out += m.content;
    if (!m.tool_calls.empty()) out += message_tool_calls_block(m, kFunctionCallsBlock, /*text_as_argument=*/false);
    out += kEos;
  }
}

}  // namespace

std::string encode_chat_dsv32(const Json& messages, const Json& tools, const Dsv32ChatOptions& options) {
  if (!messages.is_array()) throw Error("messages must be an array");
  std::vector<ChatMessage> msgs;
  for (size_t i = 0; i < messages.size(); ++i)
    msgs.push_back(read_chat_message(messages[i], i, {"system", "user", "assistant", "tool", "developer"}));
  attach_request_tools(tools, msgs);
  if (options.thinking && options.drop_thinking) msgs = drop_thinking(std::move(msgs));
  const int last_user = last_user_index(msgs);
  std::string out = options.add_bos ? std::string(kBos) : std::string();
  for (size_t i = 0; i < msgs.size(); ++i) render(msgs, i, options.thinking, last_user, out);
  return out;
}

}  // namespace strata
