#include "text/chat_messages.h"

#include <algorithm>

#include "core/error.h"

namespace strata {

namespace {

using Json = nlohmann::ordered_json;

const Json* field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// Text of a content field: a string, or OpenAI content parts whose text parts are joined with
// blank lines (as the official encoders join content blocks). Tool results show other part
// types as "[Unsupported <type>]", like the official encoder; elsewhere they are an error.
std::string content_text(const Json& content, size_t i, bool tool) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) message_error(i, "content must be a string or an array of content parts");
  std::string out;
  bool first = true;
  for (const Json& part : content) {
    const Json* type = part.is_object() ? field(part, "type") : nullptr;
    if (!type || !type->is_string()) message_error(i, "content part without a type");
    if (!first) out += "\n\n";
    first = false;
    if (*type == "text") {
      const Json* text = field(part, "text");
      if (text && !text->is_string()) message_error(i, "content part text must be a string");
      if (text) out += text->get_ref<const std::string&>();
    } else if (tool) {
      out += "[Unsupported " + type->get<std::string>() + "]";
    } else {
      message_error(i, "content part type '" + type->get<std::string>() + "' is not supported");
    }
  }
  return out;
}

const std::string* string_field(const Json& m, const char* key, size_t i) {
  const Json* v = field(m, key);
  if (!v) return nullptr;
  if (!v->is_string()) message_error(i, std::string(key) + " must be a string");
  return &v->get_ref<const std::string&>();
}

}  // namespace

void message_error(size_t i, const std::string& what) { throw Error("messages[" + std::to_string(i) + "]: " + what); }

void read_chat_tools(const Json& tools, std::vector<const Json*>& out, const std::string& where) {
  if (!tools.is_array()) throw Error(where + "tools must be an array");
  for (const Json& tool : tools) {
    const Json* fn = tool.is_object() ? field(tool, "function") : nullptr;
    if (!fn || !fn->is_object()) throw Error(where + "each tool needs a \"function\" object");
    const Json* type = field(tool, "type");
    if (type && *type != "function") throw Error(where + "tool type must be \"function\"");
    const Json* name = field(*fn, "name");
    if (!name || !name->is_string()) throw Error(where + "each tool function needs a string name");
    out.push_back(fn);
  }
}

ChatMessage read_chat_message(const Json& m, size_t i, std::initializer_list<std::string_view> roles) {
  if (!m.is_object()) message_error(i, "a message must be an object");
  ChatMessage msg;
  msg.src = i;
  const std::string* role = string_field(m, "role", i);
  if (!role) message_error(i, "missing role");
  msg.role = *role;
  if (std::find(roles.begin(), roles.end(), msg.role) == roles.end()) message_error(i, "unknown role '" + msg.role + "'");
  const bool assistant = msg.role == "assistant";

  const Json* content = field(m, "content");
  if (content) {
    msg.content = content_text(*content, i, msg.role == "tool");
  } else if (!assistant) {
    message_error(i, "missing content for role '" + msg.role + "'");
  }
  if (msg.role == "developer" && msg.content.empty()) message_error(i, "developer content must not be empty");

  if (const std::string* r = string_field(m, "reasoning_content", i)) msg.reasoning = *r;
  if (const std::string* t = string_field(m, "task", i)) msg.task = *t;
  if (const std::string* id = string_field(m, "tool_call_id", i)) msg.tool_call_id = *id;
  if (const Json* w = field(m, "wo_eos")) {
    if (!w->is_boolean()) message_error(i, "wo_eos must be a boolean");
    msg.wo_eos = w->get<bool>();
  }

  const bool takes_tools = msg.role == "system" || msg.role == "developer";
  if (const Json* tools = field(m, "tools")) {
    if (!takes_tools) message_error(i, "tools are only allowed on system or developer messages");
    read_chat_tools(*tools, msg.tools, "messages[" + std::to_string(i) + "]: ");
  }
  if (takes_tools) msg.response_format = field(m, "response_format");

  if (const Json* calls = field(m, "tool_calls")) {
    if (!assistant) message_error(i, "tool_calls are only allowed on assistant messages");
    if (!calls->is_array()) message_error(i, "tool_calls must be an array");
    for (const Json& tc : *calls) {
      const Json* fn = tc.is_object() ? field(tc, "function") : nullptr;
      if (!fn || !fn->is_object()) message_error(i, "each tool call needs a \"function\" object");
      const Json* type = field(tc, "type");
      if (type && *type != "function") message_error(i, "tool call type must be \"function\"");
      const Json* name = field(*fn, "name");
      const Json* args = field(*fn, "arguments");
      if (!name || !name->is_string()) message_error(i, "each tool call needs a string function.name");
      if (!args || !args->is_string()) message_error(i, "tool call function.arguments must be a JSON string");
      ChatToolCall call{{name->get<std::string>(), args->get<std::string>()}, ""};
      // The official encoder takes the id from the call, else from its function.
      if (const Json* id = field(tc, "id"); id && id->is_string()) call.id = id->get<std::string>();
      if (const Json* id = field(*fn, "id"); call.id.empty() && id && id->is_string()) call.id = id->get<std::string>();
      msg.tool_calls.push_back(std::move(call));
    }
  }
  return msg;
}

std::string message_tool_calls_block(const ChatMessage& m, const dsv4::DsmlBlock& block, bool text_as_argument) {
  std::vector<ToolCall> calls;
  for (const ChatToolCall& c : m.tool_calls) calls.push_back(c.call);
  try {
    return dsml_tool_calls_block(calls, block, text_as_argument);
  } catch (const Error& e) {
    message_error(m.src, e.what());
  }
}

void attach_request_tools(const Json& tools, std::vector<ChatMessage>& msgs) {
  if (tools.is_null()) return;
  std::vector<const Json*> fns;
  read_chat_tools(tools, fns, "");
  if (fns.empty()) return;
  if (msgs.empty() || (msgs[0].role != "system" && msgs[0].role != "developer")) {
    msgs.insert(msgs.begin(), ChatMessage{});
    msgs[0].role = "system";
  } else if (!msgs[0].tools.empty()) {
    throw Error("tools are given both in the request and on messages[0]");
  }
  msgs[0].tools = std::move(fns);
}

}  // namespace strata
