#include "cli/bench_run.h"

#include <chrono>
#include <random>

#include "cache/cache_map.h"
#include "cache/pool.h"
#include "cli/bench_engine.h"
#include "cli/bench_lockstep.h"
#include "cli/bench_structured.h"
#include "cli/bench_profile.h"
#include "core/error.h"
#include "core/numerics.h"
#include "dist/world.h"
#include "engine/sampling_ops.h"
#include "kernels/linear_profile.h"
#include "kernels/parallel.h"
#include "kernels/probe.h"

namespace strata::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Decode at long context from a synthetic state (Model::synthetic_sequence), placed in a cache
// pool as the engine places a request's (its entries in pool blocks reserved ahead, not in
// vectors that reallocate and copy ~20 MB of entries as they grow at 128K; the forward pass's
// workspace in the pool's): one warm-up step, then the mean of context_steps steps.
nlohmann::ordered_json long_context(const BenchOptions& o, const models::Model& model, const models::CacheOptions& co) {
  const auto& mc = model.model_config();
  const auto& facts = model.facts();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  double first_ms = 0;
  const cache::CacheLayout layout = mc.cache_layout(co);
  for (int64_t ctx : o.contexts) {
    const int64_t pos = std::max<int64_t>(layout.block_tokens, ctx / layout.block_tokens * layout.block_tokens);
    auto cs = model.synthetic_sequence(pos, uint64_t(pos), co);
    if (!cs) throw Error("bench --context: " + facts.model_type + " has no synthetic long-context state");
    const int64_t steps_ahead = pos + 1 + o.context_steps;
    const int64_t parts = kernels::num_threads();
    cache::CachePool pool(layout, cache::CachePool::sequence_bytes_bound(layout, steps_ahead), true,
                          mc.workspace_bytes(steps_ahead, parts));
    cache::PoolSeq seq;
    if (!pool.reserve(seq, steps_ahead)) throw Error("bench: the long-context cache pool is too small");
    auto map = cs->cache_map(layout);
    cache::bind_to_pool(map, pool, seq);
    const auto ws = pool.workspace_bytes() > 0
                        ? model.workspace(pool.workspace(), pool.workspace_bytes(), steps_ahead, parts)
                        : nullptr;
    cs->use_workspace(ws.get());
    int64_t tok = 1;
    model.decode(*cs, tok);
    // The profile's regions time what grows with the context outside the weight products (a
    // sparse indexer's scan); its per-call cost is a clock read, nothing beside the products.
    kernels::linear_profile_start();
    auto tc = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < o.context_steps; ++i) model.decode(*cs, tok = (tok * 7919 + 13) % facts.vocab_size);
    const double ms = 1e3 * seconds_since(tc) / double(std::max<int64_t>(1, o.context_steps));
    kernels::linear_profile_stop();
    nlohmann::ordered_json regions = nlohmann::ordered_json::object();
    for (const auto& r : kernels::region_profile())
      regions[r.name] = 1e3 * r.seconds / double(std::max<int64_t>(1, o.context_steps));
    if (first_ms == 0) first_ms = ms;
    const auto tr = mc.decode_traffic(pos);
    rows.push_back({{"context", pos}, {"step_ms", ms}, {"ratio_to_first", ms / first_ms},
                    {"bytes_per_token", tr.total()}, {"cache_bytes", tr.caches}, {"pool_bytes", pool.bytes_in_use()},
                    {"indexer_scratch_bytes", pool.workspace_bytes()}, {"regions_ms", regions}});
  }
  return rows;
}

// The same random prompt in every pass.
std::vector<int64_t> prompt_ids(const BenchOptions& o, const models::Model& model) {
  std::mt19937_64 rng(1);
  std::vector<int64_t> ids(size_t(std::max<int64_t>(1, o.prompt_tokens)));
  for (auto& x : ids) x = int64_t(rng() % uint64_t(model.facts().vocab_size));
  return ids;
}

models::CacheOptions cache_options(const BenchOptions& o) {
  models::CacheOptions co;
  co.fp4_index_keys = o.indexer_cache == "fp4";
  return co;
}

}  // namespace

void bench_warm_up(const BenchOptions& o, const models::Model& model) {
  const std::vector<int64_t> ids = prompt_ids(o, model);
  auto st = model.new_sequence(cache_options(o));
  const auto logits = model.forward(*st, ids.data(), int64_t(ids.size()));
  model.decode(*st, argmax(logits));
}

nlohmann::ordered_json bench_run(const BenchOptions& o, const std::shared_ptr<const models::Model>& model,
                                 const BenchMachine& machine) {
  nlohmann::ordered_json j;
  j["numerics"] = std::string(numerics_name(active_numerics()));  // the profile this pass ran under
  const auto& mc = model->model_config();
  const std::vector<int64_t> ids = prompt_ids(o, *model);
  const models::CacheOptions co = cache_options(o);
  auto st = model->new_sequence(co);
  if (o.profile) kernels::linear_profile_start();
  auto t0 = std::chrono::steady_clock::now();
  auto logits = model->forward(*st, ids.data(), int64_t(ids.size()));
  const double prefill_s = seconds_since(t0);
  const auto prefill_profile = o.profile ? kernels::linear_profile_stop() : std::vector<kernels::LinearProfileEntry>{};
  int64_t next = 0;
  if (o.profile) kernels::linear_profile_start();
  auto t1 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < o.decode_tokens; ++i) {
    next = argmax(logits);  // greedy generation's choice (std::max_element took ~0.5 ms a step)
    logits = model->decode(*st, next);
  }
  const double decode_s = seconds_since(t1);
  const auto profile = o.profile ? kernels::linear_profile_stop() : std::vector<kernels::LinearProfileEntry>{};
  double bw_after = 0;
  if (machine.probed)
    bw_after = kernels::probe_read_bandwidth(size_t(1) << 30, machine.threads, o.probe_seconds).value;

  const double bw = machine.read_gbps, bf16 = machine.bf16_gflops, fp64 = machine.fp64_gflops;
  const double decode_tps = double(o.decode_tokens) / decode_s;
  const auto traffic = mc.decode_traffic(st->pos);
  const double achieved = traffic.total() * decode_tps / 1e9;
  const double flops_tok = mc.prefill_flops_per_token();
  const double prefill_tps = double(ids.size()) / prefill_s;
  j["prefill"] = {{"tokens", ids.size()}, {"seconds", prefill_s}, {"tokens_per_s", prefill_tps},
                  {"gflops", flops_tok * prefill_tps / 1e9}, {"pct_of_bf16_peak", bf16 > 0 ? 100 * flops_tok * prefill_tps / 1e9 / bf16 : 0},
                  {"pct_of_fp64_peak", fp64 > 0 ? 100 * flops_tok * prefill_tps / 1e9 / fp64 : 0}};
  j["decode"] = {{"tokens", o.decode_tokens}, {"context", st->pos}, {"seconds", decode_s}, {"tokens_per_s", decode_tps},
                 {"bytes_per_token", traffic.total()}, {"weight_bytes", traffic.weights},
                 {"routed_expert_bytes", traffic.routed_experts}, {"cache_bytes", traffic.caches},
                 {"achieved_gbps", achieved}, {"roofline_tokens_per_s", bw > 0 ? bw * 1e9 / traffic.total() : 0},
                 {"pct_of_roofline", bw > 0 ? 100 * achieved / bw : 0}};
  if (bw_after > 0) {
    j["read_gbps_after_decode"] = bw_after;
    j["decode"]["pct_of_roofline_after"] = 100 * achieved / bw_after;
  }
  if (o.profile) {
    j["prefill"]["profile"] = profile_rows(prefill_profile, 1.0, bw);
    j["prefill"]["profiled_ms"] = profiled_ms(j["prefill"]["profile"]);
    j["decode"]["profile"] = profile_rows(profile, double(o.decode_tokens), bw);
    j["decode"]["profiled_ms_per_token"] = profiled_ms(j["decode"]["profile"]);
  }
  if (!o.contexts.empty()) j["long_context"] = long_context(o, *model, co);
  if (!o.batches.empty() && (o.lockstep || dist::size() > 1)) {
    j["batched_decode"] = bench_lockstep_batches(*model, o.prompt_tokens, o.decode_tokens, o.batches);
  } else if (!o.batches.empty()) {
    auto tok = std::make_shared<const Tokenizer>(Tokenizer::load(o.model));
    j["batched_decode"] = bench_batches(model, tok, o.prompt_tokens, o.decode_tokens, o.batches, o.profile, bw);
  }
  if (o.prefix_tokens > 0) {
    auto tok = std::make_shared<const Tokenizer>(Tokenizer::load(o.model));
    j["prefix_cache"] = bench_prefix(model, tok, o.prefix_tokens, o.suffix_tokens);
  }
  if (o.spec_tokens > 0) {
    auto tok = std::make_shared<const Tokenizer>(Tokenizer::load(o.model));
    j["speculative"] = bench_speculative(model, tok, o.spec_tokens, o.prompt_tokens, o.decode_tokens, o.spec_batches);
  }
  if (!o.json_schema.empty()) {
    auto tok = std::make_shared<const Tokenizer>(Tokenizer::load(o.model));
    j["structured_output"] = bench_structured(model, tok, o.json_schema, o.prompt_tokens, o.decode_tokens);
  }
  return j;
}

}  // namespace strata::cli
