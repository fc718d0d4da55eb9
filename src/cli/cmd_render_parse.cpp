// `strata render` prints the exact prompt text the DeepSeek-V4 chat encoding produces for an
// OpenAI-style message list; `strata parse` turns a completion (stdin) back into a message.
// Both are for debugging templates, as apply_chat_template is in Hugging Face.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "text/chat_encoding.h"
#include "text/chat_parse.h"

namespace strata::cli {
namespace {

struct RenderOpts {
  std::string model, messages, thinking = "chat", effort;
  bool keep_thinking = false, no_generation_prompt = false;
};

nlohmann::ordered_json read_ordered(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return nlohmann::ordered_json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON: " + e.what());
  }
}

void run_render(const RenderOpts& o) {
  nlohmann::ordered_json j = read_ordered(o.messages);
  // Either a bare message list or {"messages": [...], "tools": [...]}, like a request body.
  nlohmann::ordered_json messages = j, tools = nullptr;
  if (j.is_object()) {
    if (!j.contains("messages")) throw Error(o.messages + ": expected a message list or an object with \"messages\"");
    messages = j["messages"];
    if (j.contains("tools")) tools = j["tools"];
  }
  ChatOptions c;
  c.thinking_mode = o.thinking;
  c.reasoning_effort = o.effort;
  c.drop_thinking = !o.keep_thinking;
  c.add_generation_prompt = !o.no_generation_prompt;
  std::fputs(encode_chat(messages, tools, c).c_str(), stdout);
}

AutoRegister reg_render([](CLI::App& app) {
  auto o = std::make_shared<RenderOpts>();
  auto* c = app.add_subcommand("render", "print the prompt text the DeepSeek-V4 chat encoding makes of a message list");
  c->add_option("--model", o->model, "model directory (its chat encoding; DeepSeek-V4 only for now)");
  c->add_option("--messages", o->messages, "JSON file: a message list, or {\"messages\", \"tools\"}")->required();
  c->add_option("--thinking", o->thinking, "chat or thinking")->check(CLI::IsMember({"chat", "thinking"}));
  c->add_option("--reasoning-effort", o->effort, "high or max (thinking mode)")->check(CLI::IsMember({"low", "high", "max"}));
  c->add_flag("--keep-thinking", o->keep_thinking, "keep earlier turns' reasoning even without tools");
  c->add_flag("--no-generation-prompt", o->no_generation_prompt, "do not open the assistant turn at the end");
  c->callback([o] { run_render(*o); });
});

AutoRegister reg_parse([](CLI::App& app) {
  static std::string thinking = "chat";
  auto* c = app.add_subcommand("parse", "parse a completion (stdin) into {reasoning_content, content, tool_calls} JSON");
  c->add_option("--thinking", thinking, "chat or thinking (the prompt ended with <think>)")
      ->check(CLI::IsMember({"chat", "thinking"}));
  c->callback([] {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    std::printf("%s\n", parse_completion(text, thinking == "thinking").to_json().dump(2).c_str());
  });
});

}  // namespace
}  // namespace strata::cli
