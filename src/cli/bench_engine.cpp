#include "cli/bench_engine.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>

#include "cli/bench_profile.h"
#include "core/error.h"
#include "engine/engine.h"
#include "engine/speculative.h"

namespace strata::cli {
namespace {

using clock = std::chrono::steady_clock;

struct ModeResult {
  double tokens_per_s = 0;
  double steps = 0;                                     // decode steps after every request started
  std::vector<kernels::LinearProfileEntry> profile;     // theirs, with run_batch's profile
  SpeculativeStats spec;
  std::map<uint64_t, std::vector<int32_t>> outputs;  // per request
};

std::vector<int32_t> prompt_for(uint64_t seed, int64_t n, int32_t vocab) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (auto& t : p) t = int32_t(rng() % uint64_t(vocab));
  return p;
}

SamplingParams greedy(int64_t decode_tokens) {
  SamplingParams p;
  p.max_tokens = decode_tokens;
  p.temperature = 0.0;  // greedy (the default samples at 1.0 with a per-request seed)
  p.ignore_eos = true;
  return p;
}

// Batch B: B requests through the engine at once; decode tokens/s is counted from the moment
// every request has its first token (all prefills done). Without speculation the window ends
// when the first request finishes, so every step in it runs all B rows even where the requests
// started a step or two apart (the first is admitted while the others are still being
// submitted); each request gets B tokens beyond decode_tokens for that slack. With speculation
// (a request's tokens per step vary) it ends with the last token.
ModeResult run_batch(const std::shared_ptr<const models::Model>& m, const std::shared_ptr<const Tokenizer>& tok, int batch,
                     int64_t prompt_tokens, int64_t decode_tokens, int spec_tokens, bool adaptive,
                     const std::map<uint64_t, std::vector<int32_t>>* forced, bool profile = false) {
  const bool full_steps = spec_tokens == 0;
  const int64_t tokens_each = decode_tokens + (full_steps ? batch : 0);
  engine::EngineOptions eo;
  eo.max_running = batch;
  eo.max_context = prompt_tokens + tokens_each + 1;
  eo.spec_tokens = spec_tokens;
  eo.spec_adaptive = adaptive;
  eo.prefix_cache = false;
  engine::Engine eng(m, tok, eo);
  std::mutex mu;
  std::condition_variable cv;
  int done = 0, started = 0;
  std::string error;
  int64_t after_start = 0;
  bool window_closed = false;
  std::map<uint64_t, int64_t> own_after_start;  // full_steps: each request's tokens in the window
  clock::time_point t_all_started, t_end;
  ModeResult r;
  const auto close_window = [&](int64_t tokens) {
    window_closed = true;
    after_start = tokens;
    t_end = clock::now();
    if (profile) r.profile = kernels::linear_profile_stop();
  };
  for (int b = 0; b < batch; ++b) {
    engine::Request q;
    q.id = uint64_t(b + 1);
    q.prompt = prompt_for(100 + uint64_t(b), prompt_tokens, tok->vocab_size());
    q.sampling = greedy(tokens_each);
    if (forced) q.forced_drafts = forced->at(q.id);
    eng.submit(std::move(q), [&](const engine::Event& e) {
      std::lock_guard lk(mu);
      if (e.kind == engine::EventKind::token) {
        auto& out = r.outputs[e.request_id];
        out.push_back(e.token);
        if (out.size() == 1 && ++started == batch) {
          t_all_started = clock::now();
          if (profile) kernels::linear_profile_start();
        } else if (started == batch && !window_closed) {
          ++after_start;
          ++own_after_start[e.request_id];
        }
      }
      if (e.finish != FinishReason::none || e.cancelled || !e.error.empty()) {
        if (!e.error.empty()) error = e.error;
        ++done;
        // the finisher's tokens in the window are its steps, each of which ran all B rows
        if (full_steps && !window_closed && started == batch) close_window(own_after_start[e.request_id] * batch);
        if (!full_steps && done == batch) close_window(after_start);
        cv.notify_all();
      }
    });
  }
  std::unique_lock lk(mu);
  cv.wait(lk, [&] { return done == batch; });
  if (!error.empty()) throw Error("bench: a request failed: " + error);
  if (!window_closed) throw Error("bench: a request finished before every request had started; raise --decode-tokens");
  const double s = std::chrono::duration<double>(t_end - t_all_started).count();
  r.tokens_per_s = s > 0 ? double(after_start) / s : 0;
  r.steps = double(after_start) / double(batch);
  auto mt = eng.metrics();
  r.spec = {mt.spec_rounds, mt.spec_drafted, mt.spec_accepted, mt.spec_emitted};
  return r;
}

nlohmann::ordered_json report(const ModeResult& r, double plain_tps) {
  nlohmann::ordered_json j;
  j["tokens_per_s"] = r.tokens_per_s;
  j["speedup"] = plain_tps > 0 ? r.tokens_per_s / plain_tps : 0;
  if (r.spec.rounds) {
    j["acceptance_rate"] = r.spec.acceptance_rate();
    j["mean_accepted_length"] = r.spec.mean_accepted_length();
  }
  return j;
}

}  // namespace

nlohmann::ordered_json bench_batches(const std::shared_ptr<const models::Model>& model, const std::shared_ptr<const Tokenizer>& tok,
                                     int64_t prompt_tokens, int64_t decode_tokens, const std::vector<int>& batches,
                                     bool profile, double read_gbps) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  double first = 0;
  for (int batch : batches) {
    if (batch < 1) throw Error("bench --batches: batch sizes must be at least 1");
    const ModeResult r = run_batch(model, tok, batch, prompt_tokens, decode_tokens, 0, true, nullptr, profile);
    if (first == 0) first = r.tokens_per_s;
    nlohmann::ordered_json row = {{"batch", batch}, {"tokens_per_s", r.tokens_per_s}, {"ratio_to_first", first > 0 ? r.tokens_per_s / first : 0}};
    if (profile && r.steps > 0) {
      row["profile"] = profile_rows(r.profile, r.steps, read_gbps);
      row["profiled_ms_per_step"] = profiled_ms(row["profile"]);
    }
    out.push_back(row);
  }
  return out;
}

nlohmann::ordered_json bench_prefix(const std::shared_ptr<const models::Model>& model, const std::shared_ptr<const Tokenizer>& tok,
                                    int64_t prefix_tokens, int64_t suffix_tokens) {
  if (prefix_tokens < 1 || suffix_tokens < 1) throw Error("bench --prefix-tokens: prefix and suffix need at least 1 token");
  engine::EngineOptions eo;
  eo.max_context = prefix_tokens + suffix_tokens + 2;
  // one request at a time, but pool room for several: prefix checkpoints live in the budget
  // the running requests do not need
  eo.max_running = 8;
  eo.prefix_cache = true;
  engine::Engine eng(model, tok, eo);
  const int32_t vocab = tok->vocab_size();
  struct Run {
    double ttft = 0;
    int64_t cached = 0;
    int32_t first = -1;
  };
  uint64_t next_id = 1;
  // One request, alone on engine e; returns its time to first token, first token and how much
  // of its prompt was cached.
  auto run = [&](engine::Engine& e, const std::vector<int32_t>& prefix, uint64_t suffix_seed) {
    engine::Request q;
    q.id = next_id++;
    q.prompt = prefix;
    const auto suffix = prompt_for(suffix_seed, suffix_tokens, vocab);
    q.prompt.insert(q.prompt.end(), suffix.begin(), suffix.end());
    q.sampling = greedy(1);
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::string error;
    Run r;
    const auto t0 = clock::now();
    e.submit(std::move(q), [&](const engine::Event& ev) {
      std::lock_guard lk(mu);
      if (ev.kind == engine::EventKind::token && r.first < 0) {
        r.first = ev.token;
        r.ttft = std::chrono::duration<double>(clock::now() - t0).count();
      }
      if (ev.finish != FinishReason::none || ev.cancelled || !ev.error.empty()) {
        error = ev.error;
        r.cached = ev.cached_prompt_tokens;
        done = true;
        cv.notify_all();
      }
    });
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return done; });
    if (!error.empty()) throw Error("bench: a request failed: " + error);
    return r;
  };
  const auto shared = prompt_for(7, prefix_tokens, vocab);
  run(eng, prompt_for(8, prefix_tokens, vocab), 1);  // warm-up: first-touch pages, thread pool
  const Run cold = run(eng, shared, 2);              // the shared prefix's first request: cold
  const auto before = eng.metrics();
  const Run hit = run(eng, shared, 3);               // same prefix, another suffix: a hit
  const auto after = eng.metrics();
  // what the hit's first token must be: its prompt on an engine without prefix caching
  engine::EngineOptions no = eo;
  no.prefix_cache = false;
  engine::Engine plain(model, tok, no);
  const int32_t reference_first = run(plain, shared, 3).first;
  nlohmann::ordered_json j;
  j["prefix_tokens"] = prefix_tokens;
  j["suffix_tokens"] = suffix_tokens;
  j["cold_ttft_s"] = cold.ttft;
  j["hit_ttft_s"] = hit.ttft;
  j["speedup"] = hit.ttft > 0 ? cold.ttft / hit.ttft : 0;
  j["hit_cached_tokens"] = hit.cached;
  j["hit_recomputed_tokens"] = int64_t(prefix_tokens + suffix_tokens) - hit.cached;
  j["prefix_hit_tokens"] = after.prefix_hit_tokens - before.prefix_hit_tokens;
  j["first_token_identical"] = hit.first == reference_first;
  return j;
}

nlohmann::ordered_json bench_speculative(const std::shared_ptr<const models::Model>& model,
                                         const std::shared_ptr<const Tokenizer>& tok, int spec_tokens,
                                         int64_t prompt_tokens, int64_t decode_tokens, const std::vector<int>& batches) {
  if (model->n_mtp() == 0) throw Error("bench --spec-tokens: the checkpoint has no MTP block");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int batch : batches) {
    const ModeResult plain = run_batch(model, tok, batch, prompt_tokens, decode_tokens, 0, true, nullptr);
    const ModeResult mtp = run_batch(model, tok, batch, prompt_tokens, decode_tokens, spec_tokens, true, nullptr);
    const ModeResult forced = run_batch(model, tok, batch, prompt_tokens, decode_tokens, spec_tokens, false, &plain.outputs);
    // Speculation must not change a single token.
    const bool identical = mtp.outputs == plain.outputs && forced.outputs == plain.outputs;
    nlohmann::ordered_json j;
    j["batch"] = batch;
    j["spec_tokens"] = spec_tokens;
    j["outputs_identical"] = identical;
    j["plain"] = report(plain, plain.tokens_per_s);
    j["mtp"] = report(mtp, plain.tokens_per_s);
    j["forced_acceptance"] = report(forced, plain.tokens_per_s);
    out.push_back(j);
  }
  return out;
}

}  // namespace strata::cli
