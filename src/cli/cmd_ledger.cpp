// `strata ledger --model DIR | --config FILE --context N`: memory per request from the cache
// specs the pool allocates by: bytes per token, fixed bytes, totals, by cache kind; with
// --memory, how many such requests fit.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "models/registry.h"

namespace strata::cli {
namespace {

struct Opts {
  std::string model, config, indexer_cache = "fp8", memory;
  std::vector<int64_t> contexts;  // empty: 128K and 1M, those the model reaches (else its maximum)
  bool mtp = false, json = false;
  int spec_tokens = 0;
};

// "24G", "24GiB" and "512M" are binary units; "24GB" is decimal; a bare number is GiB.
double parse_memory(const std::string& s) {
  size_t i = 0;
  double v = 0;
  try {
    v = std::stod(s, &i);
  } catch (...) {
    throw Error("--memory '" + s + "' is not a size (e.g. 24G, 512M, 80GB)");
  }
  std::string u = s.substr(i);
  for (auto& ch : u) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  const double K = 1024;
  double m = 0;
  if (u.empty() || u == "G" || u == "GIB") m = K * K * K;
  else if (u == "M" || u == "MIB") m = K * K;
  else if (u == "T" || u == "TIB") m = K * K * K * K;
  else if (u == "K" || u == "KIB") m = K;
  else if (u == "GB") m = 1e9;
  else if (u == "MB") m = 1e6;
  else if (u == "TB") m = 1e12;
  else throw Error("--memory '" + s + "': unknown unit (use K, M, G, T, or KB, MB, GB, TB)");
  if (!(v > 0)) throw Error("--memory must be positive");
  return v * m;
}

void run_ledger(const Opts& o) {
  if (o.model.empty() == o.config.empty()) throw Error("ledger needs exactly one of --model DIR or --config FILE");
  const std::string src = o.model.empty() ? o.config : o.model;
  const auto cfg = models::load_config(src);
  const int64_t max_pos = cfg->facts().max_positions;
  std::vector<int64_t> contexts = o.contexts;
  if (contexts.empty()) {
    for (int64_t n : {int64_t(131072), int64_t(1048576)})
      if (n <= max_pos) contexts.push_back(n);
    if (contexts.empty()) contexts.push_back(max_pos);
  }
  for (int64_t n : contexts) {
    if (n < 0) throw Error("--context must be >= 0");
    if (n > max_pos)
      throw Error("--context " + std::to_string(n) + " exceeds max_position_embeddings " + std::to_string(max_pos));
  }
  const double memory = o.memory.empty() ? 0 : parse_memory(o.memory);
  models::CacheOptions co;
  co.fp4_index_keys = o.indexer_cache == "fp4";
  co.include_mtp = o.mtp || o.spec_tokens > 0;
  co.draft_tokens = o.spec_tokens;
  cache::CacheLayout L = cfg->cache_layout(co);
  // Other accountings of the same caches in the source documents, where the model has one.
  const auto variants = cfg->ledger_variants(co);

  struct Row {
    int64_t fixed = 0, block = 0, layers = 0;
    std::string format;
  };
  std::map<std::string, Row> by_kind;
  for (const auto& s : L.specs) {
    Row& r = by_kind[cache::kind_name(s.kind)];
    r.fixed += s.fixed_bytes();
    r.block += s.block_bytes(L.block_tokens);
    r.layers += 1;
    if (r.format.empty()) r.format = s.format;
  }
  nlohmann::ordered_json j;
  j["indexer_cache"] = o.indexer_cache;
  j["block_tokens"] = L.block_tokens;
  j["bytes_per_token"] = L.bytes_per_token();
  j["fixed_bytes"] = L.fixed_bytes();
  j["block_bytes"] = L.block_bytes();
  for (auto& [k, r] : by_kind)
    j["by_kind"][k] = {{"specs", r.layers}, {"format", r.format}, {"fixed_bytes", r.fixed}, {"bytes_per_block", r.block}};
  if (L.draft_bytes() > 0) j["draft_slot_bytes"] = L.draft_bytes();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int64_t n : contexts) {
    nlohmann::ordered_json r = {{"context", n}, {"bytes", L.bytes_for(n)}, {"bytes_exact", L.bytes_exact(n)}};
    for (const auto& v : variants) {
      int64_t bytes = 0;
      for (const auto& s : v.layout.specs) bytes += s.bytes_exact(n);
      r[v.key] = bytes;
    }
    if (memory > 0) r["requests_that_fit"] = int64_t(memory / double(L.bytes_for(n)));
    rows.push_back(r);
  }
  j["contexts"] = rows;
  if (memory > 0) j["memory_bytes"] = memory;
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("%s: %.1f B per token (%.2f KB), %.2f MB fixed per request; blocks of %lld tokens = %lld B",
              src.c_str(), L.bytes_per_token(), L.bytes_per_token() / 1024, double(L.fixed_bytes()) / (1 << 20),
              (long long)L.block_tokens, (long long)L.block_bytes());
  if (by_kind.count("indexer_keys")) std::printf("; indexer keys %s", o.indexer_cache.c_str());
  if (L.draft_bytes() > 0)
    std::printf("; %.2f MB of the fixed bytes are draft slots for %d speculative tokens",
                double(L.draft_bytes()) / (1 << 20), o.spec_tokens);
  std::printf("\n");
  for (auto& [k, r] : by_kind)
    std::printf("  %-17s %3lld specs  %-36s fixed %9.2f MB  per block %9lld B\n", k.c_str(), (long long)r.layers,
                r.format.c_str(), double(r.fixed) / (1 << 20), (long long)r.block);
  for (const auto& r : rows) {
    std::printf("context %9lld: %8.3f GB = %7.3f GiB per request (whole blocks; exact %.3f GiB)",
                (long long)r["context"].get<int64_t>(), r["bytes"].get<double>() / 1e9,
                r["bytes"].get<double>() / double(1ull << 30), r["bytes_exact"].get<double>() / double(1ull << 30));
    if (memory > 0) std::printf("; %lld fit in %s", (long long)r["requests_that_fit"].get<int64_t>(), o.memory.c_str());
    std::printf("\n");
  }
  for (const auto& v : variants)
    std::printf("(%s: %.2f GB at %lld tokens by that accounting)\n", v.description.c_str(),
                rows.back()[v.key].get<double>() / 1e9, (long long)rows.back()["context"].get<int64_t>());
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("ledger", "cache memory per request: bytes per token, fixed bytes, totals by kind");
  auto* m = c->add_option("--model", o->model, "checkpoint directory");
  c->add_option("--config", o->config, "a config.json file")->excludes(m);
  c->add_option("--context", o->contexts, "tokens of context, one or more (default 131072 and 1048576 where the model reaches them)");
  c->add_option("--indexer-cache", o->indexer_cache, "indexer key storage: fp8 (132 B, default) or fp4 (68 B)")
      ->check(CLI::IsMember({"fp4", "fp8"}));
  c->add_flag("--mtp", o->mtp, "include the MTP block's caches (speculative decoding)");
  c->add_option("--spec-tokens", o->spec_tokens,
                "speculative decoding with up to N drafts: the MTP block's caches and the recurrent layers' draft slots")
      ->check(CLI::Range(0, 16));
  c->add_option("--memory", o->memory, "a memory size (24G, 512M, 80GB): how many requests of each context fit");
  c->add_flag("--json", o->json, "print one JSON object");
  c->callback([o] { run_ledger(*o); });
});

}  // namespace
}  // namespace strata::cli
