// `strata ledger --model DIR | --config FILE --context N`: memory per request from the cache
// specs the pool allocates by: bytes per token, fixed bytes, totals, by cache kind; with
// --memory, how many such requests fit.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "models/deepseek_v4/cache_layout.h"
#include "models/model_registry.h"

namespace strata::cli {
namespace {

struct Opts {
  std::string model, config, index_keys = "fp4";
  int64_t context = 131072;
  double memory_gb = 0;
  bool mtp = false, json = false;
};

void run_ledger(const Opts& o) {
  if (o.model.empty() == o.config.empty()) throw Error("ledger needs exactly one of --model DIR or --config FILE");
  if (o.context < 0) throw Error("--context must be >= 0");
  const std::string src = o.model.empty() ? o.config : o.model;
  models::require_supported(src);
  dsv4::Config c = dsv4::load_config(src);
  if (o.context > c.max_position_embeddings)
    throw Error("--context " + std::to_string(o.context) + " exceeds max_position_embeddings " +
                std::to_string(c.max_position_embeddings));
  dsv4::CacheLayoutOptions lo;
  lo.index_keys = o.index_keys == "fp8" ? dsv4::IndexKeyFormat::fp8 : dsv4::IndexKeyFormat::fp4;
  lo.include_mtp = o.mtp;
  cache::CacheLayout L = dsv4::cache_layout(c, lo);

  struct Row {
    int64_t fixed = 0, block = 0, at_n = 0, layers = 0;
    std::string format;
  };
  std::map<std::string, Row> by_kind;
  for (const auto& s : L.specs) {
    Row& r = by_kind[cache::kind_name(s.kind)];
    r.fixed += s.fixed_bytes();
    r.block += s.block_bytes(L.block_tokens);
    r.at_n += cache::kind_grows(s.kind) ? L.blocks_for(o.context) * s.block_bytes(L.block_tokens) : s.fixed_bytes();
    r.layers += 1;
    if (r.format.empty()) r.format = s.format;
  }
  const int64_t total = L.bytes_for(o.context);
  nlohmann::ordered_json j;
  j["context"] = o.context;
  j["block_tokens"] = L.block_tokens;
  j["bytes_per_token"] = L.bytes_per_token();
  j["fixed_bytes"] = L.fixed_bytes();
  j["block_bytes"] = L.block_bytes();
  j["bytes_at_context"] = total;
  j["bytes_at_context_exact"] = L.bytes_exact(o.context);
  for (auto& [k, r] : by_kind)
    j["by_kind"][k] = {{"layers", r.layers}, {"format", r.format}, {"fixed_bytes", r.fixed},
                       {"bytes_per_block", r.block}, {"bytes_at_context", r.at_n}};
  if (o.memory_gb > 0) j["requests_that_fit"] = int64_t(o.memory_gb * 1e9 / double(total));
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("%s: %.1f B per token (%.2f KB), %.2f MB fixed per request; blocks of %lld tokens = %lld B\n",
              src.c_str(), L.bytes_per_token(), L.bytes_per_token() / 1024, double(L.fixed_bytes()) / (1 << 20),
              (long long)L.block_tokens, (long long)L.block_bytes());
  std::printf("a request of %lld tokens: %.3f GB (%.3f GiB) in whole blocks, %.3f GB exact\n", (long long)o.context,
              double(total) / 1e9, double(total) / double(1ull << 30), double(L.bytes_exact(o.context)) / 1e9);
  for (auto& [k, r] : by_kind)
    std::printf("  %-17s %3lld specs  %-38s fixed %10.2f MB  per block %9lld B  at context %10.2f MB\n", k.c_str(),
                (long long)r.layers, r.format.c_str(), double(r.fixed) / (1 << 20), (long long)r.block,
                double(r.at_n) / (1 << 20));
  if (o.memory_gb > 0)
    std::printf("%.1f GB holds %lld such requests\n", o.memory_gb, (long long)j["requests_that_fit"].get<int64_t>());
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("ledger", "cache memory per request: bytes per token, fixed bytes, totals by kind");
  auto* m = c->add_option("--model", o->model, "checkpoint directory");
  c->add_option("--config", o->config, "a config.json file")->excludes(m);
  c->add_option("--context", o->context, "tokens of context (default 131072)");
  c->add_option("--index-keys", o->index_keys, "indexer key storage: fp4 (strata, 68 B) or fp8 (132 B)")
      ->check(CLI::IsMember({"fp4", "fp8"}));
  c->add_flag("--mtp", o->mtp, "include the MTP block's window (speculative decoding)");
  c->add_option("--memory", o->memory_gb, "a memory budget in GB: how many requests of --context fit");
  c->add_flag("--json", o->json, "print one JSON object");
  c->callback([o] { run_ledger(*o); });
});

}  // namespace
}  // namespace strata::cli
