#include "text/chat_encoding.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "text/dsml.h"
#include "text/dsv4_prompts.h"
#include "text/dsv4_tokens.h"

namespace strata {

namespace {

using Json = nlohmann::ordered_json;
using namespace dsv4;

struct Block {  // one part of a user turn after tool messages are folded in
  bool tool_result;
  std::string text;
  std::string tool_use_id;
};

struct CallIn {
  ToolCall call;
  std::string id;
};

struct Msg {
  size_t src = 0;  // index in the caller's messages, for error messages
  std::string role;
  std::string content;
  std::string reasoning;
  std::vector<CallIn> tool_calls;
  std::vector<const Json*> tools;  // "function" objects
  const Json* response_format = nullptr;
  std::string task;  // "" = none
  bool wo_eos = false;
  std::string tool_call_id;
  std::vector<Block> blocks;  // user turns only
};

const std::map<std::string, std::string_view>& task_tokens() {
  static const std::map<std::string, std::string_view> m = {
      {"action", "<｜action｜>"}, {"query", "<｜query｜>"}, {"authority", "<｜authority｜>"},
      {"domain", "<｜domain｜>"}, {"title", "<｜title｜>"}, {"read_url", "<｜read_url｜>"}};
  return m;
}

[[noreturn]] void fail(size_t i, const std::string& what) {
  throw Error("messages[" + std::to_string(i) + "]: " + what);
}

const Json* field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// Text of a content field: a string, or OpenAI content parts whose text parts are joined with
// blank lines (as the official encoder joins content blocks). Tool results show other part
// types as "[Unsupported <type>]", like the official encoder; elsewhere they are an error.
std::string content_text(const Json& content, size_t i, bool tool) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) fail(i, "content must be a string or an array of content parts");
  std::string out;
  bool first = true;
  for (const Json& part : content) {
    const Json* type = part.is_object() ? field(part, "type") : nullptr;
    if (!type || !type->is_string()) fail(i, "content part without a type");
    if (!first) out += "\n\n";
    first = false;
    if (*type == "text") {
      const Json* text = field(part, "text");
      if (text && !text->is_string()) fail(i, "content part text must be a string");
      if (text) out += text->get_ref<const std::string&>();
    } else if (tool) {
      out += "[Unsupported " + type->get<std::string>() + "]";
    } else {
      fail(i, "content part type '" + type->get<std::string>() + "' is not supported");
    }
  }
  return out;
}

const std::string* string_field(const Json& m, const char* key, size_t i) {
  const Json* v = field(m, key);
  if (!v) return nullptr;
  if (!v->is_string()) fail(i, std::string(key) + " must be a string");
  return &v->get_ref<const std::string&>();
}

void read_tools(const Json& tools, Msg& msg, const std::string& where) {
  if (!tools.is_array()) throw Error(where + "tools must be an array");
  for (const Json& tool : tools) {
    const Json* fn = tool.is_object() ? field(tool, "function") : nullptr;
    if (!fn || !fn->is_object()) throw Error(where + "each tool needs a \"function\" object");
    const Json* type = field(tool, "type");
    if (type && *type != "function") throw Error(where + "tool type must be \"function\"");
    const Json* name = field(*fn, "name");
    if (!name || !name->is_string()) throw Error(where + "each tool function needs a string name");
    msg.tools.push_back(fn);
  }
}

Msg read_message(const Json& m, size_t i) {
  if (!m.is_object()) fail(i, "a message must be an object");
  Msg msg;
  msg.src = i;
  const std::string* role = string_field(m, "role", i);
  if (!role) fail(i, "missing role");
  msg.role = *role;
  static const char* kRoles[] = {"system", "user", "assistant", "tool", "developer", "latest_reminder"};
  if (std::find(std::begin(kRoles), std::end(kRoles), msg.role) == std::end(kRoles))
    fail(i, "unknown role '" + msg.role + "'");
  const bool assistant = msg.role == "assistant";

  const Json* content = field(m, "content");
  if (content) {
    msg.content = content_text(*content, i, msg.role == "tool");
  } else if (!assistant) {
    fail(i, "missing content for role '" + msg.role + "'");
  }
  if (msg.role == "developer" && msg.content.empty()) fail(i, "developer content must not be empty");

  if (const std::string* r = string_field(m, "reasoning_content", i)) msg.reasoning = *r;
  if (const std::string* t = string_field(m, "task", i)) {
    if (!task_tokens().count(*t)) fail(i, "unknown task '" + *t + "'");
    msg.task = *t;
  }
  if (const std::string* id = string_field(m, "tool_call_id", i)) msg.tool_call_id = *id;
  if (const Json* w = field(m, "wo_eos")) {
    if (!w->is_boolean()) fail(i, "wo_eos must be a boolean");
    msg.wo_eos = w->get<bool>();
  }

  const bool takes_tools = msg.role == "system" || msg.role == "developer";
  if (const Json* tools = field(m, "tools")) {
    if (!takes_tools) fail(i, "tools are only allowed on system or developer messages");
    read_tools(*tools, msg, "messages[" + std::to_string(i) + "]: ");
  }
  if (takes_tools) msg.response_format = field(m, "response_format");

  if (const Json* calls = field(m, "tool_calls")) {
    if (!assistant) fail(i, "tool_calls are only allowed on assistant messages");
    if (!calls->is_array()) fail(i, "tool_calls must be an array");
    for (const Json& tc : *calls) {
      const Json* fn = tc.is_object() ? field(tc, "function") : nullptr;
      if (!fn || !fn->is_object()) fail(i, "each tool call needs a \"function\" object");
      const Json* type = field(tc, "type");
      if (type && *type != "function") fail(i, "tool call type must be \"function\"");
      const Json* name = field(*fn, "name");
      const Json* args = field(*fn, "arguments");
      if (!name || !name->is_string()) fail(i, "each tool call needs a string function.name");
      if (!args || !args->is_string()) fail(i, "tool call function.arguments must be a JSON string");
      CallIn call{{name->get<std::string>(), args->get<std::string>()}, ""};
      // The official encoder takes the id from the call, else from its function.
      if (const Json* id = field(tc, "id"); id && id->is_string()) call.id = id->get<std::string>();
      if (const Json* id = field(*fn, "id"); call.id.empty() && id && id->is_string()) call.id = id->get<std::string>();
      msg.tool_calls.push_back(std::move(call));
    }
  }
  return msg;
}

// V4 has no tool role: tool results become <tool_result> blocks of a user turn, and a user
// message right after merges into that turn too (official merge_tool_messages, including its
// quirk that a merged user message's own task is not kept).
std::vector<Msg> merge_tool_messages(std::vector<Msg> in) {
  std::vector<Msg> out;
  for (Msg& m : in) {
    if (m.role == "tool") {
      Block b{true, std::move(m.content), std::move(m.tool_call_id)};
      if (!out.empty() && out.back().role == "user") {
        out.back().blocks.push_back(std::move(b));
      } else {
        Msg user;
        user.src = m.src;
        user.role = "user";
        user.blocks.push_back(std::move(b));
        out.push_back(std::move(user));
      }
    } else if (m.role == "user") {
      Block b{false, m.content, ""};
      if (!out.empty() && out.back().role == "user" && out.back().task.empty()) {
        out.back().blocks.push_back(std::move(b));
      } else {
        m.blocks.push_back(std::move(b));
        out.push_back(std::move(m));
      }
    } else {
      out.push_back(std::move(m));
    }
  }
  return out;
}

// Tool results are put in the order of the calls of the latest assistant turn with calls.
void sort_tool_results(std::vector<Msg>& msgs) {
  std::map<std::string, size_t> order;
  for (Msg& m : msgs) {
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      order.clear();
      for (size_t k = 0; k < m.tool_calls.size(); ++k)
        if (!m.tool_calls[k].id.empty()) order[m.tool_calls[k].id] = k;
    } else if (m.role == "user" && !order.empty()) {
      std::vector<Block> results;
      for (const Block& b : m.blocks)
        if (b.tool_result) results.push_back(b);
      if (results.size() < 2) continue;
      std::stable_sort(results.begin(), results.end(), [&](const Block& a, const Block& b) {
        auto rank = [&](const Block& x) {
          auto it = order.find(x.tool_use_id);
          return it == order.end() ? size_t{0} : it->second;
        };
        return rank(a) < rank(b);
      });
      size_t next = 0;
      for (Block& b : m.blocks)
        if (b.tool_result) b = results[next++];
    }
  }
}

int last_user_index(const std::vector<Msg>& msgs) {
  for (size_t k = msgs.size(); k-- > 0;)
    if (msgs[k].role == "user" || msgs[k].role == "developer") return static_cast<int>(k);
  return -1;
}

// Before the last user turn: assistant turns lose their reasoning, developer turns go away.
std::vector<Msg> drop_thinking(std::vector<Msg> msgs) {
  const int last_user = last_user_index(msgs);
  std::vector<Msg> out;
  for (size_t k = 0; k < msgs.size(); ++k) {
    Msg& m = msgs[k];
    if (static_cast<int>(k) >= last_user || m.role == "user" || m.role == "system" || m.role == "latest_reminder") {
      out.push_back(std::move(m));
    } else if (m.role == "assistant") {
      m.reasoning.clear();
      out.push_back(std::move(m));
    }
  }
  return out;
}

std::string_view effort_prefix(const ChatOptions& o) {
  const std::string& e = o.reasoning_effort;
  if (o.effort_prompts == EffortPrompts::kPreview) {
    if (e.empty() || e == "high") return "";
    if (e == "max") return kEffortAbsoluteMax;
    throw Error("reasoning_effort '" + e + "' is not supported by this model (use high or max)");
  }
  if (e.empty() || e == "low") return "";
  if (e == "high") return kEffortAbsoluteMax;
  if (e == "max") return kEffortBeyondMax;
  throw Error("reasoning_effort '" + e + "' is not one of low, high, max");
}

struct Renderer {
  const std::vector<Msg>& msgs;
  bool thinking;
  bool drop;
  bool generation_prompt;
  std::string_view effort;
  int last_user;

  std::string system_extras(const Msg& m) const {
    std::string out;
    if (!m.tools.empty()) out += "\n\n" + render_tools(m.tools);
    if (m.response_format) out += "\n\n" + render_response_format(*m.response_format);
    return out;
  }

  void assistant(size_t i, std::string& out) const {
    const Msg& m = msgs[i];
    const bool prev_has_task = i > 0 && !msgs[i - 1].task.empty();
    // A turn answering a quick-instruction task has no thinking part.
    if (thinking && !prev_has_task && (!drop || static_cast<int>(i) > last_user)) {
      out += m.reasoning;
      out += kThinkEnd;
    }
    out += m.content;
    if (!m.tool_calls.empty()) {
      std::vector<ToolCall> calls;
      for (const CallIn& c : m.tool_calls) calls.push_back(c.call);
      try {
        out += dsml_tool_calls_block(calls);
      } catch (const Error& e) {
        fail(m.src, e.what());
      }
    }
    if (!m.wo_eos) out += kEos;
  }

  void render(size_t i, std::string& out) const {
    const Msg& m = msgs[i];
    if (i == 0 && thinking) out += effort;
    if (m.role == "system") {
      out += m.content + system_extras(m);
    } else if (m.role == "developer") {
      out += kUser;
      out += m.content + system_extras(m);
    } else if (m.role == "user") {
      out += kUser;
      for (size_t k = 0; k < m.blocks.size(); ++k) {
        if (k) out += "\n\n";
        const Block& b = m.blocks[k];
        if (b.tool_result) out += kToolResultOpen;
        out += b.text;
        if (b.tool_result) out += kToolResultClose;
      }
    } else if (m.role == "latest_reminder") {
      out += kLatestReminder;
      out += m.content;
    } else {
      assistant(i, out);
    }

    // What comes after depends on the next message: only before an assistant or reminder
    // turn (or at the end) is anything appended.
    if (i + 1 < msgs.size() && msgs[i + 1].role != "assistant" && msgs[i + 1].role != "latest_reminder") return;
    if (!m.task.empty()) {
      const std::string_view token = task_tokens().at(m.task);
      if (m.task == "action") {
        out += kAssistant;
        out += thinking ? kThinkStart : kThinkEnd;
      }
      out += token;
    } else if ((m.role == "user" || m.role == "developer") && (generation_prompt || i + 1 < msgs.size())) {
      out += kAssistant;
      out += thinking && (!drop || static_cast<int>(i) >= last_user) ? kThinkStart : kThinkEnd;
    }
  }
};

}  // namespace

std::string encode_chat(const Json& messages, const Json& tools, const ChatOptions& options) {
  if (options.thinking_mode != "chat" && options.thinking_mode != "thinking")
    throw Error("thinking_mode must be \"chat\" or \"thinking\", not '" + options.thinking_mode + "'");
  const bool thinking = options.thinking_mode == "thinking";
  const std::string_view effort = effort_prefix(options);
  if (!messages.is_array()) throw Error("messages must be an array");

  std::vector<Msg> msgs;
  for (size_t i = 0; i < messages.size(); ++i) msgs.push_back(read_message(messages[i], i));

  if (!tools.is_null()) {
    Msg holder;
    read_tools(tools, holder, "");
    if (!holder.tools.empty()) {
      if (msgs.empty() || (msgs[0].role != "system" && msgs[0].role != "developer")) {
        msgs.insert(msgs.begin(), Msg{});
        msgs[0].role = "system";
      } else if (!msgs[0].tools.empty()) throw Error("tools are given both in the request and on messages[0]");
      msgs[0].tools = std::move(holder.tools);
    }
  }

  msgs = merge_tool_messages(std::move(msgs));
  sort_tool_results(msgs);
  // With tools anywhere, every turn keeps its reasoning (tool use spans user turns).
  const bool drop = options.drop_thinking &&
                    std::none_of(msgs.begin(), msgs.end(), [](const Msg& m) { return !m.tools.empty(); });
  if (thinking && drop) msgs = drop_thinking(std::move(msgs));

  const Renderer r{msgs, thinking, drop, options.add_generation_prompt, effort, last_user_index(msgs)};
  std::string out = options.add_bos ? std::string(kBos) : std::string();
  for (size_t i = 0; i < msgs.size(); ++i) r.render(i, out);
  return out;
}

}  // namespace strata
