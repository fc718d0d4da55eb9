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
  std::string model, config, indexer_cache = "fp8", memory;
  std::vector<int64_t> contexts{131072, 1048576};
  bool mtp = false, json = false;
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
  models::require_supported(src);
  dsv4::Config c = dsv4::load_config(src);
  for (int64_t n : o.contexts) {
    if (n < 0) throw Error("--context must be >= 0");
    if (n > c.max_position_embeddings)
      throw Error("--context " + std::to_string(n) + " exceeds max_position_embeddings " +
                  std::to_string(c.max_position_embeddings));
  }
  const double memory = o.memory.empty() ? 0 : parse_memory(o.memory);
  dsv4::CacheLayoutOptions lo;
  lo.index_keys = o.indexer_cache == "fp4" ? dsv4::IndexKeyFormat::fp4 : dsv4::IndexKeyFormat::fp8;
  lo.include_mtp = o.mtp;
  cache::CacheLayout L = dsv4::cache_layout(c, lo);
  // The other accounting in the sources: layer-by-layer §9.2 counts 576-byte entries (no
  // scale bytes), 64-byte FP4 index keys and no compressor state.
  dsv4::CacheLayoutOptions paper = lo;
  paper.entry_bytes_override = 576;
  paper.index_key_bytes_override = 64;
  cache::CacheLayout P = dsv4::cache_layout(c, paper);

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
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int64_t n : o.contexts) {
    int64_t paper_bytes = 0;
    for (const auto& s : P.specs)
      if (s.kind != cache::CacheKind::compressor_state) paper_bytes += s.bytes_exact(n);
    nlohmann::ordered_json r = {{"context", n}, {"bytes", L.bytes_for(n)}, {"bytes_exact", L.bytes_exact(n)},
                                {"paper_9_2_bytes", paper_bytes}};
    if (memory > 0) r["requests_that_fit"] = int64_t(memory / double(L.bytes_for(n)));
    rows.push_back(r);
  }
  j["contexts"] = rows;
  if (memory > 0) j["memory_bytes"] = memory;
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("%s: %.1f B per token (%.2f KB), %.2f MB fixed per request (window + compressor state); "
              "blocks of %lld tokens = %lld B; indexer keys %s\n",
              src.c_str(), L.bytes_per_token(), L.bytes_per_token() / 1024, double(L.fixed_bytes()) / (1 << 20),
              (long long)L.block_tokens, (long long)L.block_bytes(), o.indexer_cache.c_str());
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
  std::printf("(layer-by-layer §9.2 counts 576-byte entries without scale bytes and 64-byte FP4 index keys, no "
              "compressor state: %.2f GB at %lld tokens by that model; the 584-byte entries and 132-byte FP8 keys "
              "above are new-generation-models.txt's ledger)\n",
              rows.back()["paper_9_2_bytes"].get<double>() / 1e9, (long long)rows.back()["context"].get<int64_t>());
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("ledger", "cache memory per request: bytes per token, fixed bytes, totals by kind");
  auto* m = c->add_option("--model", o->model, "checkpoint directory");
  c->add_option("--config", o->config, "a config.json file")->excludes(m);
  c->add_option("--context", o->contexts, "tokens of context, one or more (default 131072 1048576)");
  c->add_option("--indexer-cache", o->indexer_cache, "indexer key storage: fp8 (132 B, default) or fp4 (68 B)")
      ->check(CLI::IsMember({"fp4", "fp8"}));
  c->add_flag("--mtp", o->mtp, "include the MTP block's window (speculative decoding)");
  c->add_option("--memory", o->memory, "a memory size (24G, 512M, 80GB): how many requests of each context fit");
  c->add_flag("--json", o->json, "print one JSON object");
  c->callback([o] { run_ledger(*o); });
});

}  // namespace
}  // namespace strata::cli
