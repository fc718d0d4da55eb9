// `strata render` prints the exact prompt text a model's chat format makes of an OpenAI-style
// message list; `strata parse` turns a completion (stdin) back into a message. Both are for
// debugging templates, as apply_chat_template is in Hugging Face. Without --model, or with a
// DeepSeek-V4 checkpoint, they use DeepSeek-V4's encoder and parser; with a DeepSeek-V3.2 one,
// V3.2's; with another model directory, its chat template and the <think> / <tool_call> output
// parser.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "text/chat_format.h"

namespace strata::cli {
namespace {

struct RenderOpts {
  std::string model, messages, thinking = "chat", effort, template_kwargs;
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

// The model's chat format (its own encoder, or its chat template); without --model the default.
std::unique_ptr<ChatFormat> format_for(const std::string& model) {
  return model.empty() ? default_chat_format() : load_chat_format(model, model_type_of(model));
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
  const std::unique_ptr<ChatFormat> format = format_for(o.model);
  ChatRenderOptions r;
  r.thinking = o.thinking == "thinking";
  r.reasoning_effort = o.effort;
  r.add_generation_prompt = !o.no_generation_prompt;
  r.keep_reasoning = o.keep_thinking;
  if (!o.template_kwargs.empty()) {
    if (format->name() != "jinja") throw Error("--template-kwargs applies to chat templates only");
    try {
      r.template_kwargs = nlohmann::ordered_json::parse(o.template_kwargs);
    } catch (const nlohmann::json::exception& e) {
      throw Error(std::string("--template-kwargs: not valid JSON: ") + e.what());
    }
    if (!r.template_kwargs.is_object()) throw Error("--template-kwargs must be a JSON object");
  }
  std::fputs(format->render(messages, tools, r).c_str(), stdout);
}

struct ParseOpts {
  std::string model, thinking = "chat";
};

void run_parse(const ParseOpts& o) {
  const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const bool thinking = o.thinking == "thinking";
  const ParsedCompletion result = format_for(o.model)->parse(text, thinking);
  std::printf("%s\n", result.to_json().dump(2).c_str());
}

AutoRegister reg_render([](CLI::App& app) {
  auto o = std::make_shared<RenderOpts>();
  auto* c = app.add_subcommand("render", "print the prompt text a model's chat format makes of a message list");
  c->add_option("--model", o->model,
                "model directory: its chat template (default and DeepSeek-V4 checkpoints: DeepSeek-V4's encoder; "
                "DeepSeek-V3.2: its own)");
  c->add_option("--messages", o->messages, "JSON file: a message list, or {\"messages\", \"tools\"}")->required();
  c->add_option("--thinking", o->thinking, "chat or thinking (a template gets enable_thinking)")
      ->check(CLI::IsMember({"chat", "thinking"}));
  c->add_option("--reasoning-effort", o->effort, "reasoning effort (DeepSeek-V4: high or max, thinking mode)")
      ->check(CLI::IsMember({"minimal", "low", "medium", "high", "max"}));
  c->add_option("--template-kwargs", o->template_kwargs, "JSON object of extra template variables (chat templates)");
  c->add_flag("--keep-thinking", o->keep_thinking,
             "keep earlier turns' reasoning where the format drops it (DeepSeek-V4's encoder without tools)");
  c->add_flag("--no-generation-prompt", o->no_generation_prompt, "do not open the assistant turn at the end");
  c->callback([o] { run_render(*o); });
});

AutoRegister reg_parse([](CLI::App& app) {
  auto o = std::make_shared<ParseOpts>();
  auto* c = app.add_subcommand("parse", "parse a completion (stdin) into {reasoning_content, content, tool_calls} JSON");
  c->add_option("--model", o->model, "model directory: its output format (default: DeepSeek-V4's; DeepSeek-V3.2: its own)");
  c->add_option("--thinking", o->thinking, "chat or thinking (the output starts inside the reasoning)")
      ->check(CLI::IsMember({"chat", "thinking"}));
  c->callback([o] { run_parse(*o); });
});

}  // namespace
}  // namespace strata::cli
