#include "cli/bench_structured.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>

#include "core/error.h"
#include "engine/engine.h"
#include "grammar/grammar_cache.h"
#include "io/json_file.h"

namespace strata::cli {
namespace {

using clock = std::chrono::steady_clock;

struct Run {
  std::vector<int32_t> tokens;
  double step_s = 0;  // per token after the first
  bool complete = false;
};

Run decode(engine::Engine& eng, const std::vector<int32_t>& prompt, int64_t decode_tokens,
           const std::optional<StructuredOutput>& so) {
  engine::Request q;
  q.prompt = prompt;
  q.sampling.temperature = 1.0;
  q.sampling.seed = 17;
  q.sampling.max_tokens = decode_tokens;
  q.sampling.ignore_eos = !so;  // a free run decodes every token; a schema run ends with its JSON
  q.sampling.structured = so;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string error;
  Run r;
  clock::time_point first, last;
  eng.submit(std::move(q), [&](const engine::Event& ev) {
    std::lock_guard lk(mu);
    if (ev.kind == engine::EventKind::token) {
      last = clock::now();
      if (r.tokens.empty()) first = last;
      r.tokens.push_back(ev.token);
    }
    if (ev.finish != FinishReason::none || ev.cancelled || !ev.error.empty()) {
      error = ev.error;
      r.complete = ev.finish == FinishReason::stop;
      done = true;
      cv.notify_all();
    }
  });
  std::unique_lock lk(mu);
  cv.wait(lk, [&] { return done; });
  if (!error.empty()) throw Error("bench --json-schema: a request failed: " + error);
  if (r.tokens.size() > 1) r.step_s = std::chrono::duration<double>(last - first).count() / double(r.tokens.size() - 1);
  return r;
}

// Seconds per step of the grammar's own work over `tokens`: the logits copy the Sampler makes,
// the mask, and the accept.
double replay(const std::shared_ptr<const grammar::CompiledGrammar>& g, const std::vector<int32_t>& tokens,
              int32_t vocab, const std::vector<int32_t>& eos) {
  std::vector<float> logits(static_cast<size_t>(vocab)), work;
  std::mt19937 rng(1);
  for (auto& x : logits) x = float(rng() % 1000) / 100.0f;
  grammar::Matcher m(g);
  const auto t0 = clock::now();
  for (int32_t t : tokens) {
    work.assign(logits.begin(), logits.end());
    m.apply(work, eos);
    m.accept(t, eos);
  }
  return std::chrono::duration<double>(clock::now() - t0).count() / double(std::max<size_t>(tokens.size(), 1));
}

}  // namespace

nlohmann::ordered_json bench_structured(const std::shared_ptr<const models::Model>& model,
                                        const std::shared_ptr<const Tokenizer>& tok, const std::string& schema_file,
                                        int64_t prompt_tokens, int64_t decode_tokens) {
  const StructuredOutput so = StructuredOutput::schema(read_ordered_json_file(schema_file).dump());
  engine::EngineOptions eo;
  eo.max_running = 1;
  eo.max_context = prompt_tokens + decode_tokens + 1;
  eo.prefix_cache = false;
  engine::Engine eng(model, tok, eo);
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
  std::mt19937_64 rng(3);
  for (auto& t : prompt) t = int32_t(rng() % uint64_t(tok->vocab_size()));
  decode(eng, prompt, 4, std::nullopt);  // warm-up: pages, threads
  Run free_a = decode(eng, prompt, decode_tokens, std::nullopt);
  Run schema_a = decode(eng, prompt, decode_tokens, so);
  Run free_b = decode(eng, prompt, decode_tokens, std::nullopt);
  Run schema_b = decode(eng, prompt, decode_tokens, so);
  if (schema_a.tokens != schema_b.tokens) throw Error("bench --json-schema: the schema runs differ");

  grammar::GrammarCache cache(tok);
  const auto t0 = clock::now();
  const auto g = cache.get(so.json_schema);
  const double compile_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::vector<int32_t> eos;
  if (tok->eos_id() >= 0) eos.push_back(tok->eos_id());
  const int32_t vocab = int32_t(model->vocab_size());
  const double cold = replay(g, schema_a.tokens, vocab, eos);
  const auto st = g->stats();
  const double warm = std::min(replay(g, schema_a.tokens, vocab, eos), replay(g, schema_a.tokens, vocab, eos));
  const double free_step = std::min(free_a.step_s, free_b.step_s);
  const double schema_step = std::min(schema_a.step_s, schema_b.step_s);
  std::string text = tok->decode(schema_a.tokens, /*skip_special=*/true);
  const bool parses = nlohmann::json::accept(text);
  nlohmann::ordered_json j;
  j["schema_file"] = schema_file;
  j["tokens"] = schema_a.tokens.size();
  j["complete"] = schema_a.complete;
  j["output_parses"] = parses;
  j["free_step_ms"] = {free_a.step_s * 1e3, free_b.step_s * 1e3};
  j["schema_step_ms"] = {schema_a.step_s * 1e3, schema_b.step_s * 1e3};
  j["grammar_compile_ms"] = compile_s * 1e3;
  j["grammar_states"] = st.misses;
  j["cold_ms_per_step"] = cold * 1e3;
  j["cold_trie_walk_ms"] = st.miss_seconds * 1e3;
  j["warm_ms_per_step"] = warm * 1e3;
  j["warm_pct_of_free_step"] = free_step > 0 ? 100 * warm / free_step : 0;
  j["schema_step_over_free_step"] = free_step > 0 ? schema_step / free_step : 0;
  return j;
}

void print_structured(const nlohmann::ordered_json& j) {
  std::printf("structured output (%s): %lld tokens, %s, %s\n", j["schema_file"].get<std::string>().c_str(),
              (long long)j["tokens"].get<int64_t>(), j["complete"].get<bool>() ? "complete" : "cut by --decode-tokens",
              j["output_parses"].get<bool>() ? "parses as JSON" : "not (yet) JSON");
  std::printf("  decode step, free %.3f / %.3f ms, under the grammar %.3f / %.3f ms (%.3fx, best of each)\n",
              j["free_step_ms"][0].get<double>(), j["free_step_ms"][1].get<double>(),
              j["schema_step_ms"][0].get<double>(), j["schema_step_ms"][1].get<double>(),
              j["schema_step_over_free_step"].get<double>());
  std::printf("  grammar work per step: warm %.4f ms = %.2f%% of a free step; cold %.3f ms (%lld states, trie walks "
              "%.1f ms; compile %.2f ms)\n",
              j["warm_ms_per_step"].get<double>(), j["warm_pct_of_free_step"].get<double>(),
              j["cold_ms_per_step"].get<double>(), (long long)j["grammar_states"].get<int64_t>(),
              j["cold_trie_walk_ms"].get<double>(), j["grammar_compile_ms"].get<double>());
}

}  // namespace strata::cli
