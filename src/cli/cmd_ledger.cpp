// `strata ledger --model DIR | --config FILE --context N`: memory per request from the cache
// specs the pool allocates by: bytes per token, fixed bytes, totals, by cache kind; with
// --memory, how many such requests fit; with --svg, a chart of memory per request against
// context length. Several configs (--model and --config repeated) print one after another
// (--json: one array) and share one chart.
#include <CLI/CLI.hpp>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "cache/layout_by_kind.h"
#include "cli/commands.h"
#include "cli/ledger_svg.h"
#include "core/error.h"
#include "models/registry.h"

namespace strata::cli {
namespace {

struct Opts {
  std::vector<std::string> models, configs, presets;
  std::vector<std::string> sources;  // the --model, --config and --preset values in the order given (presets as "preset:NAME")
  std::string indexer_cache = "fp8", memory, svg;
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

void appendf(std::string& out, const char* f, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string& out, const char* f, ...) {
  va_list a, b;
  va_start(a, f);
  va_copy(b, a);
  const int n = std::vsnprintf(nullptr, 0, f, a);
  va_end(a);
  std::string s(size_t(n) + 1, '\0');
  std::vsnprintf(s.data(), s.size(), f, b);
  va_end(b);
  s.resize(size_t(n));
  out += s;
}

models::CacheOptions cache_options(const Opts& o) {
  models::CacheOptions co;
  co.fp4_index_keys = o.indexer_cache == "fp4";
  co.include_mtp = o.mtp || o.spec_tokens > 0;
  co.draft_tokens = o.spec_tokens;
  return co;
}

constexpr const char* kPresetPrefix = "preset:";

std::unique_ptr<models::ModelConfig> config_of(const std::string& src) {
  if (src.rfind(kPresetPrefix, 0) == 0) return models::preset_model_config(src.substr(std::strlen(kPresetPrefix)));
  return models::load_config(src);
}

// One config's ledger: the object --json prints, and the text printed otherwise.
struct Report {
  nlohmann::ordered_json json;
  std::string text;
};

Report ledger_of(const std::string& src, const Opts& o) {
  const auto cfg = config_of(src);
  const int64_t max_pos = cfg->facts().max_positions;
  std::vector<int64_t> contexts = o.contexts, unsupported;  // unsupported: default rows past the model's maximum
  if (contexts.empty()) {
    for (int64_t n : {int64_t(131072), int64_t(1048576)})
      (n <= max_pos ? contexts : unsupported).push_back(n);
    if (contexts.empty()) contexts.push_back(max_pos);
  }
  for (int64_t n : contexts) {
    if (n < 0) throw Error("--context must be >= 0");
    if (n > max_pos)
      throw Error("--context " + std::to_string(n) + " exceeds max_position_embeddings " + std::to_string(max_pos));
  }
  const double memory = o.memory.empty() ? 0 : parse_memory(o.memory);
  const models::CacheOptions co = cache_options(o);
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
  Report rep;
  nlohmann::ordered_json& j = rep.json;
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
  if (!unsupported.empty()) j["unsupported_contexts"] = unsupported;
  if (memory > 0) j["memory_bytes"] = memory;
  std::string& t = rep.text;
  appendf(t, "%s: %.1f B per token (%.2f KB), %.2f MB fixed per request; blocks of %lld tokens = %lld B", src.c_str(),
          L.bytes_per_token(), L.bytes_per_token() / 1024, double(L.fixed_bytes()) / (1 << 20),
          (long long)L.block_tokens, (long long)L.block_bytes());
  if (by_kind.count("indexer_keys")) appendf(t, "; indexer keys %s", o.indexer_cache.c_str());
  if (L.draft_bytes() > 0)
    appendf(t, "; %.2f MB of the fixed bytes are draft slots for %d speculative tokens",
            double(L.draft_bytes()) / (1 << 20), o.spec_tokens);
  appendf(t, "\n");
  for (auto& [k, r] : by_kind)
    appendf(t, "  %-17s %3lld specs  %-36s fixed %9.2f MB  per block %9lld B\n", k.c_str(), (long long)r.layers,
            r.format.c_str(), double(r.fixed) / (1 << 20), (long long)r.block);
  for (const auto& r : rows) {
    appendf(t, "context %9lld: %8.3f GB = %7.3f GiB per request (whole blocks; exact %.3f GiB)",
            (long long)r["context"].get<int64_t>(), r["bytes"].get<double>() / 1e9,
            r["bytes"].get<double>() / double(1ull << 30), r["bytes_exact"].get<double>() / double(1ull << 30));
    if (memory > 0) appendf(t, "; %lld fit in %s", (long long)r["requests_that_fit"].get<int64_t>(), o.memory.c_str());
    appendf(t, "\n");
  }
  for (const auto& v : variants)
    appendf(t, "(%s: %.2f GB at %lld tokens by that accounting)\n", v.description.c_str(),
            rows.back()[v.key].get<double>() / 1e9, (long long)rows.back()["context"].get<int64_t>());
  for (int64_t n : unsupported)
    appendf(t, "context %9lld: not supported (max_position_embeddings %lld)\n", (long long)n, (long long)max_pos);
  return rep;
}

// The legend's name for a config: its folder (DIR, or the folder of DIR/config.json), else the
// file's stem, and the model_type that selected its architecture.
std::string label_of(const std::string& src, const std::string& model_type) {
  if (src.rfind(kPresetPrefix, 0) == 0) return src.substr(std::strlen(kPresetPrefix)) + " (" + model_type + ")";
  std::filesystem::path p(src);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "dir/" names dir
  std::string name = p.filename().string();
  if (name == "config.json" && !p.parent_path().filename().empty()) name = p.parent_path().filename().string();
  else if (p.extension() == ".json") name = p.stem().string();
  if (name.empty() || name == ".") name = src;
  return name + " (" + model_type + ")";
}

// The chart: for each config, the ledger's bytes per request (CacheLayout::bytes_for, as in the
// text) at contexts from 1K (or the smallest maximum, if lower) to the longest maximum on the
// log axis, each line up to its own config's maximum; for one config, also each cache kind's
// bytes, from a layout of that kind's specs alone (the kinds' layouts sum to the whole).
LedgerChart chart_of(const std::vector<std::string>& sources, const Opts& o) {
  struct Config {
    std::string label;
    int64_t max_pos;
    cache::CacheLayout layout;
  };
  std::vector<Config> configs;
  for (const auto& src : sources) {
    const auto cfg = config_of(src);
    configs.push_back({label_of(src, cfg->facts().model_type), cfg->facts().max_positions, cfg->cache_layout(cache_options(o))});
  }
  int64_t hi = 0, lo = 1024;
  for (const auto& c : configs) hi = std::max(hi, c.max_pos), lo = std::min(lo, c.max_pos);
  if (hi < 2) throw Error("--svg: max_position_embeddings below 2 leaves no context axis to draw");
  if (lo >= hi) lo = std::max<int64_t>(1, hi / 16);
  const std::vector<int64_t> samples = ledger_sample_contexts(lo, hi);
  LedgerChart chart;
  std::string title = "Cache memory per request";
  if (configs.size() == 1) title += " by kind: " + configs[0].label;
  std::vector<std::string> settings;
  if (o.indexer_cache != "fp8") settings.push_back("indexer keys " + o.indexer_cache);
  if (o.mtp || o.spec_tokens > 0) settings.push_back("with the MTP block");
  if (o.spec_tokens > 0) settings.push_back(std::to_string(o.spec_tokens) + " draft tokens");
  for (size_t i = 0; i < settings.size(); ++i) title += (i ? ", " : "; ") + settings[i];
  chart.title = title;
  for (const auto& c : configs) {
    LedgerSeries s;
    s.label = c.label;
    s.note = human_bytes(c.layout.bytes_per_token()) + "/token + " + human_bytes(double(c.layout.fixed_bytes())) + " fixed";
    for (int64_t n : samples)
      if (n <= c.max_pos) s.contexts.push_back(n);
    if (s.contexts.back() != c.max_pos) s.contexts.push_back(c.max_pos);
    for (int64_t n : s.contexts) s.bytes.push_back(c.layout.bytes_for(n));
    if (configs.size() == 1) {
      for (const auto& [name, k] : cache::layouts_by_kind(c.layout)) {
        LedgerKindSeries ks{name, {}};
        for (int64_t n : s.contexts) ks.bytes.push_back(k.bytes_for(n));
        s.kinds.push_back(std::move(ks));
      }
    }
    chart.series.push_back(std::move(s));
  }
  return chart;
}

void run_ledger(const Opts& o) {
  if (o.sources.empty())
    throw Error("ledger needs a config: --model DIR, --config FILE or --preset NAME (repeat them for several)");
  std::vector<Report> reports;
  for (const auto& src : o.sources) reports.push_back(ledger_of(src, o));
  // The chart first: a path it cannot write fails the command before anything is printed.
  if (!o.svg.empty()) {
    const LedgerChart chart = chart_of(o.sources, o);
    write_file_atomically(o.svg, ledger_svg(chart));
    std::fprintf(stderr, "ledger: wrote %s (%zu config%s, %s to %s tokens)\n", o.svg.c_str(), chart.series.size(),
                 chart.series.size() == 1 ? "" : "s", human_tokens(ledger_frame(chart).x_lo).c_str(),
                 human_tokens(ledger_frame(chart).x_hi).c_str());
  }
  if (o.json) {
    if (reports.size() == 1) {
      std::printf("%s\n", reports[0].json.dump(2).c_str());
      return;
    }
    // Several configs: one array, each object led by the config it is for.
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (size_t i = 0; i < reports.size(); ++i) {
      nlohmann::ordered_json one = {{"source", o.sources[i]}};
      one.update(reports[i].json);
      all.push_back(one);
    }
    std::printf("%s\n", all.dump(2).c_str());
    return;
  }
  for (size_t i = 0; i < reports.size(); ++i) std::printf("%s%s", i ? "\n" : "", reports[i].text.c_str());
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("ledger", "cache memory per request: bytes per token, fixed bytes, totals by kind");
  c->footer(
      "Several configs (--model, --config and --preset repeated, in any mix) are printed one after another\n"
      "(with --json: one array, each object naming its \"source\"), and drawn on one --svg chart.\n"
      "The chart: memory per request (the whole-block bytes the text prints) against context length\n"
      "on a log axis from 1K to the largest max_position_embeddings, one line per config, each up to\n"
      "its own maximum; for one config, stacked by cache kind. --context chooses the printed rows only.");
  auto* m = c->add_option("--model", o->models, "checkpoint directory (repeat to compare several)")->type_name("DIR");
  auto* f = c->add_option("--config", o->configs, "a config.json file (repeat to compare several)")->type_name("FILE");
  auto* p = c->add_option("--preset", o->presets, "a named config (make-model's presets; deepseek-v3.2, glm5 ...)")
                ->type_name("NAME");
  c->add_option("--context", o->contexts, "tokens of context, one or more (default 131072 and 1048576 where the model reaches them)");
  c->add_option("--indexer-cache", o->indexer_cache, "indexer key storage: fp8 (132 B, default) or fp4 (68 B)")
      ->check(CLI::IsMember({"fp4", "fp8"}));
  c->add_flag("--mtp", o->mtp, "include the MTP block's caches (speculative decoding)");
  c->add_option("--spec-tokens", o->spec_tokens,
                "speculative decoding with up to N drafts: the MTP block's caches and the recurrent layers' draft slots")
      ->check(CLI::Range(0, 16));
  c->add_option("--memory", o->memory, "a memory size (24G, 512M, 80GB): how many requests of each context fit");
  c->add_flag("--json", o->json, "print one JSON object (an array of them for several configs)");
  c->add_option("--svg", o->svg,
                "also write a chart of memory per request against context length to FILE (self-contained SVG 1.1)")
      ->type_name("FILE");
  c->callback([o, c, m, f, p] {
    // One list in command-line order (the legend's order): CLI11 keeps each option's values
    // apart, but records every value's option in parse order.
    o->sources.clear();
    size_t next_model = 0, next_config = 0, next_preset = 0;
    for (const CLI::Option* opt : c->parse_order()) {
      if (opt == m && next_model < o->models.size()) o->sources.push_back(o->models[next_model++]);
      if (opt == f && next_config < o->configs.size()) o->sources.push_back(o->configs[next_config++]);
      if (opt == p && next_preset < o->presets.size()) o->sources.push_back(kPresetPrefix + o->presets[next_preset++]);
    }
    for (; next_model < o->models.size(); ++next_model) o->sources.push_back(o->models[next_model]);
    for (; next_config < o->configs.size(); ++next_config) o->sources.push_back(o->configs[next_config]);
    for (; next_preset < o->presets.size(); ++next_preset) o->sources.push_back(kPresetPrefix + o->presets[next_preset]);
    run_ledger(*o);
  });
});

}  // namespace
}  // namespace strata::cli
