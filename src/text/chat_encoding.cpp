#include "text/chat_encoding.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "text/chat_messages.h"
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

struct Msg : ChatMessage {
  Msg() = default;
  explicit Msg(ChatMessage m) : ChatMessage(std::move(m)) {}
  std::vector<Block> blocks;  // user turns only
};

const std::map<std::string, std::string_view>& task_tokens() {
  static const std::map<std::string, std::string_view> m = {
      {"action", "<｜action｜>"}, {"query", "<｜query｜>"}, {"authority", "<｜authority｜>"},
      {"domain", "<｜domain｜>"}, {"title", "<｜title｜>"}, {"read_url", "<｜read_url｜>"}};
  return m;
}

ChatMessage read_message(const Json& m, size_t i) {
  ChatMessage msg = read_chat_message(m, i, {"system", "user", "assistant", "tool", "developer", "latest_reminder"});
  if (!msg.task.empty() && !task_tokens().count(msg.task)) message_error(i, "unknown task '" + msg.task + "'");
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
    if (!m.tool_calls.empty()) out += message_tool_calls_block(m, kToolCallsBlock, /*text_as_argument=*/true);
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

  std::vector<ChatMessage> read;
  for (size_t i = 0; i < messages.size(); ++i) read.push_back(read_message(messages[i], i));
  attach_request_tools(tools, read);
  std::vector<Msg> msgs;
  for (ChatMessage& m : read) msgs.emplace_back(std::move(m));

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
