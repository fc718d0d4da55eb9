// `strata generate --model DIR --prompt "..." [--chat] [--thinking chat|high|max]` streams
// generated text as it is produced, then prints tokens/s. `--ids 1,2,3` starts from token ids
// instead (and `--print-ids` prints ids rather than text). Greedy by default (--temperature 0);
// the sampling options of `strata chat` apply.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/expert_balance_option.h"
#include "cli/preload.h"
#include "cli/generation_options.h"
#include "cli/numerics_option.h"
#include "cli/token_ids.h"
#include "core/error.h"
#include "dist/world.h"
#include "cli/single_request.h"
#include "engine/engine.h"
#include "io/json_file.h"
#include "models/registry.h"
#include "text/tokenizer.h"
#include "text/chat_format.h"

namespace strata::cli {
namespace {

struct Opts {
  std::string model, prompt, ids, thinking = "chat", numerics, json_schema;
  bool chat = false, print_ids = false, json_object = false;
  GenerationOptions gen;
  ExpertBalanceOptions balance;
};

// make-model writes random weights; say so, so nobody mistakes the output for a real model's.
bool random_weights(const std::string& dir) {
  const auto p = std::filesystem::path(dir) / "config.json";
  auto j = read_json_file(p.string());
  return j.contains("strata_random_weights") && j["strata_random_weights"].is_boolean() &&
         j["strata_random_weights"].get<bool>();
}

void run_generate(const Opts& o) {
  if (o.prompt.empty() == o.ids.empty()) throw Error("generate needs exactly one of --prompt TEXT or --ids 1,2,3");
  if (o.chat && o.prompt.empty()) throw Error("--chat needs --prompt");
  SamplingParams sp = o.gen.sampling();
  if (!o.json_schema.empty()) {
    sp.structured = StructuredOutput::schema(read_ordered_json_file(o.json_schema).dump());
  } else if (o.json_object) {
    sp.structured = StructuredOutput::schema(R"({"type":"object"})");
  }
  select_numerics(o.numerics, "generate");
  std::unique_ptr<models::Model> loaded = models::load_model(o.model);
  apply_expert_balance(*loaded, o.model, o.balance);
  std::shared_ptr<const models::Model> model = std::move(loaded);
  // a progress bar while a large checkpoint is read in; under expert parallelism, this rank's share
  preload_checkpoint(model->checkpoint(), o.model, 1e9, false,
                     [&](const std::string& t) { return model->holds_tensor(t); });
  auto tok_ptr = std::make_shared<const Tokenizer>(Tokenizer::load(o.model));
  const Tokenizer& tok = *tok_ptr;
  std::vector<int32_t> prompt;
  if (!o.prompt.empty()) {
    std::string text = o.prompt;
    if (o.chat) {
      nlohmann::ordered_json messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", o.prompt}}});
      text = load_chat_format(o.model, model->facts().model_type)->render(messages, nullptr, chat_options_for(o.thinking));
    }
    prompt = tok.encode(text, /*add_special=*/!o.chat);
    if (sp.structured && o.chat && o.thinking != "chat") {
      // The reasoning is free; the JSON starts after it (as the server does).
      const auto end = tok.token_to_id("</think>");
      if (!end) throw Error("--json-schema with --thinking needs a single </think> token, which this tokenizer lacks");
      sp.structured->after_token = *end;
    }
    if (!o.chat && tok.bos_id() >= 0 && (prompt.empty() || prompt.front() != tok.bos_id()))
      prompt.insert(prompt.begin(), tok.bos_id());  // a plain prompt starts with BOS where the tokenizer has one
  } else {
    for (int64_t id : parse_token_ids(o.ids)) prompt.push_back(int32_t(id));
  }
  const int64_t vocab = model->vocab_size();
  for (int32_t id : prompt)
    if (id < 0 || id >= vocab)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(vocab) + " rows)");
  const int64_t need = int64_t(prompt.size()) + o.gen.max_tokens;
  if (need > model->max_positions())
    throw Error("prompt + --max-tokens: " + std::to_string(need) + " tokens exceed max_position_embeddings " +
                std::to_string(model->max_positions()));
  if (random_weights(o.model))
    std::fprintf(stderr, "note: %s holds random weights from `strata make-model`: the architecture is exact, the words "
                         "are not meaningful. Point --model at a real checkpoint directory for real text.\n",
                 o.model.c_str());
  // One request through the serving engine: the server's code path, in a pool sized for it.
  engine::EngineOptions eo;
  eo.max_running = 1;
  eo.max_queue = 1;
  eo.prefix_cache = false;
  eo.max_context = need;
  eo.spec_tokens = o.gen.draft_tokens(model->facts().mtp_layers);
  engine::Engine eng(model, tok_ptr, eo);
  engine::Request req;
  req.prompt = prompt;
  req.sampling = sp;
  req.id = 1;
  auto stats = run_single_request(eng, std::move(req), [&](const engine::Event& ev) {
    if (o.print_ids) {
      if (ev.kind == engine::EventKind::token) std::printf("%d\n", ev.token);
    } else {
      std::fputs(ev.text.c_str(), stdout);
    }
    std::fflush(stdout);
    return true;
  });
  if (!o.print_ids) std::printf("\n");
  std::fflush(stdout);
  if (!stats.error.empty()) throw Error(stats.error);
  const int64_t generated = int64_t(stats.tokens.size());
  const double dtps = generated > 1 && stats.decode_seconds > 0 ? double(generated - 1) / stats.decode_seconds : 0.0;
  std::fprintf(stderr, "prefill: %lld tokens in %.3f s (%.1f tokens/s); decode: %lld tokens, %.2f tokens/s; finish: %s; numerics: %s\n",
               (long long)stats.prompt_tokens, stats.ttft_seconds,
               double(stats.prompt_tokens) / std::max(stats.ttft_seconds, 1e-9), (long long)generated, dtps,
               finish_reason_name(stats.finish) ? finish_reason_name(stats.finish) : "none",
               std::string(numerics_name(active_numerics())).c_str());
  if (dist::size() > 1) {
    const auto x = dist::exchange_stats();
    std::fprintf(stderr, "expert exchange (rank 0 of %d): %lld gathers, %.1f MB received, %.3f s in them, waits for other ranks included\n",
                 dist::size(), (long long)x.calls, double(x.bytes_received) / 1e6, x.seconds);
  }
  if (eo.spec_tokens > 0)
    std::fprintf(stderr, "speculative: %lld rounds, %lld drafted, %lld accepted (%.1f%%), %.2f tokens per verification\n",
                 (long long)stats.spec.rounds, (long long)stats.spec.drafted, (long long)stats.spec.accepted,
                 100.0 * stats.spec.acceptance_rate(), stats.spec.mean_accepted_length());
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("generate", "generate text (or token ids) from a prompt, streaming");
  c->add_option("--model", o->model, "model directory (config.json + safetensors + tokenizer.json)")->required();
  auto* p = c->add_option("--prompt", o->prompt, "prompt text");
  c->add_option("--ids", o->ids, "comma-separated prompt token ids (instead of --prompt)")->excludes(p);
  c->add_flag("--chat", o->chat, "wrap the prompt in the model's chat format as one user turn");
  c->add_option("--thinking", o->thinking, "with --chat: chat (no reasoning), high or max")
      ->check(CLI::IsMember({"chat", "high", "max"}));
  c->add_flag("--print-ids", o->print_ids, "print generated token ids, one per line, instead of text");
  auto* js = c->add_option("--json-schema", o->json_schema,
                           "FILE: the output is a JSON text of this JSON Schema, decoded under its grammar "
                           "(the keywords docs/server.md lists)");
  c->add_flag("--json", o->json_object, "the output is one JSON object (decoded under a grammar)")->excludes(js);
  add_generation_options(*c, o->gen, /*default_temperature=*/0.0);
  add_numerics_option(*c, o->numerics);
  add_expert_balance_options(*c, o->balance);
  c->callback([o] { run_generate(*o); });
});

}  // namespace
}  // namespace strata::cli
