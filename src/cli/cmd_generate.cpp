// `strata generate --model DIR --ids 1,2,3 [--max-tokens N]`: greedy generation of token ids
// (argmax, lowest id on ties), printed as they are produced, then tokens/s. Text prompts
// (--prompt / --chat) come with the tokenizer.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "cli/token_ids.h"
#include "core/error.h"
#include "models/deepseek_v4/model.h"

namespace strata::cli {
namespace {

struct Opts {
  std::string model, ids;
  int64_t max_tokens = 16;
};

int64_t argmax(const std::vector<float>& v) {
  int64_t best = 0;
  for (int64_t i = 1; i < int64_t(v.size()); ++i)
    if (v[size_t(i)] > v[size_t(best)]) best = i;
  return best;
}

void run_generate(const Opts& o) {
  std::vector<int64_t> ids = parse_token_ids(o.ids);
  if (o.max_tokens < 0) throw Error("--max-tokens must be >= 0");
  auto model = dsv4::Model::load(o.model);
  const int64_t n = int64_t(ids.size());
  if (n + o.max_tokens > model->max_positions())
    throw Error("--ids + --max-tokens: " + std::to_string(n + o.max_tokens) + " tokens exceed max_position_embeddings " +
                std::to_string(model->max_positions()));
  dsv4::SequenceState st = model->new_sequence();
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  auto lg = model->forward(st, ids.data(), n);
  auto t1 = clock::now();
  int64_t produced = 0;
  const int64_t eos = model->config().eos_token_id;
  while (produced < o.max_tokens) {
    int64_t next = argmax(lg);
    std::printf("%lld\n", (long long)next);
    std::fflush(stdout);
    ++produced;
    if (next == eos || produced == o.max_tokens) break;
    lg = model->decode(st, next);
  }
  auto t2 = clock::now();
  double pf = std::chrono::duration<double>(t1 - t0).count(), dc = std::chrono::duration<double>(t2 - t1).count();
  std::fprintf(stderr, "prefill: %lld tokens in %.3f s (%.2f tokens/s); decode: %lld tokens in %.3f s (%.2f tokens/s)\n",
               (long long)n, pf, n / (pf > 0 ? pf : 1e-9), (long long)produced, dc,
               produced > 1 ? (produced - 1) / (dc > 0 ? dc : 1e-9) : 0.0);
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("generate", "greedy generation of token ids");
  c->add_option("--model", o->model, "model directory (config.json + safetensors)")->required();
  c->add_option("--ids", o->ids, "comma-separated prompt token ids")->required();
  c->add_option("--max-tokens", o->max_tokens, "tokens to generate (default 16)")->take_last();
  c->callback([o] { run_generate(*o); });
});

}  // namespace
}  // namespace strata::cli
