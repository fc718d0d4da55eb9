// `strata chat --model DIR [--thinking chat|high|max]`: an interactive conversation in the
// model's own chat format (DeepSeek-V4's encoding, or the checkpoint's chat template). Reasoning is shown dimmed on a terminal, the answer plainly.
// The commands, multi-line input and Ctrl-C are described in kUsage. Each turn is one request
// through the serving engine, whose prefix cache keeps the conversation: a turn recomputes only
// the tokens past the last block boundary of what it shares with the previous turns.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/chat_conversation.h"
#include "cli/chat_input.h"
#include "cli/chat_interrupt.h"
#include "cli/commands.h"
#include "cli/one_process.h"
#include "cli/preload.h"
#include "cli/generation_options.h"
#include "cli/numerics_option.h"
#include "core/error.h"
#include "cli/single_request.h"
#include "engine/engine.h"
#include "models/registry.h"
#include "text/tokenizer.h"
#include "text/chat_format.h"

namespace strata::cli {
namespace {

struct ChatOpts {
  std::string model, thinking = "chat", system, numerics;
  GenerationOptions gen;
};

// /help, and the end of --help. Ctrl-C keeps the partial reply, as llama.cpp's interactive mode
// keeps the tokens already generated in its context (ollama drops them).
constexpr const char* kUsage =
    "Commands (alone on a line):\n"
    "  /help          this list\n"
    "  /save FILE     write the conversation to FILE: a JSON array of OpenAI-style messages\n"
    "  /load FILE     replace the conversation with the one in FILE\n"
    "  /reset         start over (the --system message stays)\n"
    "  /exit, /quit   quit; so does Ctrl-D (end of input)\n"
    "Multi-line messages: end a line with \\ to continue on the next one, or write \"\"\" alone\n"
    "on the lines before and after the text.\n"
    "Ctrl-C stops the reply being written; the part already written stays in the conversation.\n"
    "At the prompt, Ctrl-C drops a message being typed; twice in a row, it quits.\n";

// A command line: false when it asks to quit. Errors are one line, the conversation unchanged.
bool run_command(const std::string& line, nlohmann::ordered_json& messages, const nlohmann::ordered_json& initial,
                 const ChatFormat& format, const ChatRenderOptions& copt) {
  const size_t name_end = line.find_first_of(" \t");
  const std::string name = line.substr(0, name_end);
  std::string arg = name_end == std::string::npos ? "" : line.substr(name_end);
  arg.erase(0, arg.find_first_not_of(" \t"));
  arg.erase(arg.find_last_not_of(" \t") + 1);
  if (name == "/exit" || name == "/quit") return false;
  if (name == "/help" || name == "/?") {
    std::fputs(kUsage, stderr);
  } else if (name == "/reset") {
    messages = initial;
    std::fputs("(the conversation starts over)\n", stderr);
  } else if (name == "/save" || name == "/load") {
    if (arg.empty()) {
      std::fprintf(stderr, "(usage: %s FILE)\n", name.c_str());
      return true;
    }
    try {
      if (name == "/save") {
        save_conversation(arg, messages);
        std::fprintf(stderr, "(saved %zu messages to %s)\n", messages.size(), arg.c_str());
      } else {
        nlohmann::ordered_json loaded = load_conversation(arg);
        format.render(loaded, nullptr, copt);  // the model's format accepts it, or says why not
        messages = std::move(loaded);
        std::fprintf(stderr, "(loaded %zu messages from %s)\n", messages.size(), arg.c_str());
      }
    } catch (const std::exception& e) {  // strata::Error, or a template's own complaint
      std::fprintf(stderr, "(error: %s)\n", e.what());
    }
  } else {
    std::fprintf(stderr, "(unknown command %s; /help lists the commands)\n", name.c_str());
  }
  return true;
}

void run_chat(const ChatOpts& o) {
  require_one_process("chat");
  select_numerics(o.numerics, "chat");
  std::shared_ptr<const models::Model> model = models::load_model(o.model);
  preload_checkpoint(model->checkpoint(), o.model);  // a progress bar while a large checkpoint is read in
  auto tok_ptr = std::make_shared<const Tokenizer>(Tokenizer::load(o.model));
  const Tokenizer& tok = *tok_ptr;
  const std::unique_ptr<ChatFormat> format = load_chat_format(o.model, model->facts().model_type);
  const ChatRenderOptions copt = chat_options_for(o.thinking);
  o.gen.sampling();  // bad sampling options fail here, before the first turn
  const bool tty = ::isatty(1);

  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  const nlohmann::ordered_json initial = messages;
  engine::EngineOptions eo;
  eo.max_running = 1;
  eo.max_queue = 1;
  eo.spec_tokens = o.gen.draft_tokens(model->facts().mtp_layers);
  engine::Engine eng(model, tok_ptr, eo);
  uint64_t turn = 0;
  // From here on Ctrl-C stops a reply instead of the process (while loading, it still quits).
  const ChatInterrupt interrupt;
  LineReader in(STDIN_FILENO, [] { return ChatInterrupt::take(); });
  bool interrupted_at_prompt = false;  // the last thing typed was Ctrl-C
  std::fprintf(stderr, "strata chat: numerics %s; /help lists the commands, /exit or Ctrl-D quits\n",
               std::string(numerics_name(active_numerics())).c_str());
  while (true) {
    const ChatInput input = read_message(in, [](bool continuation) { std::fputs(continuation ? "... " : "> ", stderr); });
    if (input.status == InputStatus::eof) break;
    if (input.status == InputStatus::interrupted) {
      if (input.discarded) {
        std::fputs("\n(message dropped)\n", stderr);
        interrupted_at_prompt = false;
      } else if (interrupted_at_prompt) {
        std::fputs("\n", stderr);
        break;
      } else {
        std::fputs("\n(/exit or Ctrl-D quits, as does Ctrl-C again)\n", stderr);
        interrupted_at_prompt = true;
      }
      continue;
    }
    interrupted_at_prompt = false;
    if (input.command) {
      if (!run_command(input.text, messages, initial, *format, copt)) break;
      continue;
    }
    if (input.text.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", input.text}});
    const std::string text = format->render(messages, nullptr, copt);
    std::vector<int32_t> prompt = tok.encode(text, /*add_special=*/false);
    const auto parser = format->parser(format->output_starts_in_reasoning(text, copt));
    bool in_reasoning = false;
    auto show = [&](const std::vector<StreamEvent>& evs) {
      for (const auto& e : evs) {
        if (e.kind == StreamEvent::Kind::kReasoning) {
          if (tty && !in_reasoning) std::fputs("\033[2m", stdout);
          in_reasoning = true;
          std::fputs(e.text.c_str(), stdout);
        } else {
          if (in_reasoning) {
            if (tty) std::fputs("\033[0m", stdout);
            std::fputs("\n", stdout);
            in_reasoning = false;
          }
          if (e.kind == StreamEvent::Kind::kContent) std::fputs(e.text.c_str(), stdout);
          else std::printf("[tool call %s %s]", e.tool_call.name.c_str(), e.tool_call.arguments.c_str());
        }
      }
      std::fflush(stdout);
    };
    SamplingParams p = o.gen.sampling();  // without --seed, a fresh random seed each turn
    const int64_t room = eng.max_context() - int64_t(prompt.size());
    if (room < 1) {
      std::fprintf(stderr, "(the conversation has reached the context of %lld tokens; /reset to start over)\n",
                   (long long)eng.max_context());
      messages.erase(messages.size() - 1);
      continue;
    }
    if (!p.max_tokens || *p.max_tokens > room) p.max_tokens = room;
    engine::Request req;
    req.prompt = prompt;
    req.sampling = p;
    req.id = ++turn;
    auto stats = run_single_request(eng, std::move(req), [&](const engine::Event& ev) {
      show(parser->feed(ev.text));
      return !ChatInterrupt::take();  // Ctrl-C: cancel; the reply so far is kept below
    });
    if (!stats.error.empty()) std::fprintf(stderr, "(error: %s)\n", stats.error.c_str());
    try {
      // The EOS token closes the assistant turn in the encoding; its text is not streamed.
      if (!stats.tokens.empty() && stats.tokens.back() == tok.eos_id()) show(parser->feed(tok.id_to_token(tok.eos_id())));
      show(parser->finish());
    } catch (const Error& e) {
      // A completion cut by max_tokens is unfinished by design; anything else is worth a note.
      if (stats.finish == FinishReason::stop) std::fprintf(stderr, "\n(unparsable completion: %s)", e.what());
    }
    if (in_reasoning && tty) std::fputs("\033[0m", stdout);
    std::printf("\n");
    const int64_t generated = int64_t(stats.tokens.size());
    std::fprintf(stderr, "[%lld tokens, %.2f tokens/s, %lld prompt tokens reused, %s]\n", (long long)generated,
                 stats.decode_seconds > 0 ? double(generated - 1) / stats.decode_seconds : 0.0,
                 (long long)stats.cached_prompt_tokens,
                 finish_reason_name(stats.finish) ? finish_reason_name(stats.finish) : "cancelled");
    const auto& pr = parser->result();
    nlohmann::ordered_json reply = {{"role", "assistant"}, {"content", pr.content}};
    if (!pr.reasoning_content.empty()) reply["reasoning_content"] = pr.reasoning_content;
    messages.push_back(reply);
  }
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<ChatOpts>();
  auto* c = app.add_subcommand("chat", "interactive chat in the model's chat format");
  c->add_option("--model", o->model, "model directory")->required();
  c->add_option("--thinking", o->thinking, "chat (no reasoning), high or max (reasoning effort)")
      ->check(CLI::IsMember({"chat", "high", "max"}));
  c->add_option("--system", o->system, "a system message");
  c->footer(kUsage);
  add_generation_options(*c, o->gen, /*default_temperature=*/1.0);
  add_numerics_option(*c, o->numerics);
  c->callback([o] { run_chat(*o); });
});

}  // namespace
}  // namespace strata::cli
