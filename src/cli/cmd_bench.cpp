// `strata bench --model DIR`: measures this machine's limits (read bandwidth, bf16 and int8
// dot-product peaks) and then prefill and batch-1 decode of the model, reporting each figure
// as a ratio to those limits: decode against the read-bandwidth roofline (bytes a step must
// read ÷ bandwidth), prefill FLOP/s against the bf16 peak. --json for scripts.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "cli/bench_engine.h"
#include "cli/bench_profile.h"
#include "cli/commands.h"
#include "cli/preload.h"
#include "core/cpu.h"
#include "core/error.h"
#include "core/process_stats.h"
#include "engine/sampling_ops.h"
#include "kernels/linear_profile.h"
#include "kernels/parallel.h"
#include "kernels/probe.h"
#include "cache/cache_map.h"
#include "cache/pool.h"
#include "models/registry.h"

namespace strata::cli {
namespace {

struct Opts {
  std::string model;
  int64_t prompt_tokens = 128, decode_tokens = 16;
  int threads = 0;
  double probe_seconds = 0.5;
  bool json = false, skip_probes = false, profile = false;
  int spec_tokens = 0;
  std::vector<int> spec_batches{1, 8};
  std::vector<int> batches;        // --batches: aggregate batched decode
  std::vector<int64_t> contexts;  // --context: decode step time at these context lengths
  int64_t context_steps = 4;
  int64_t prefix_tokens = 0, suffix_tokens = 16;  // --prefix-tokens: prefix-cache hit vs cold TTFT
  std::string indexer_cache = "fp8";  // --indexer-cache: index key storage of the decode states
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void run_bench(const Opts& o) {
  if (o.threads > 0) kernels::set_num_threads(o.threads);
  const int threads = kernels::num_threads();
  nlohmann::ordered_json j;
  j["isa"] = std::string(isa_name(active_isa()));
  j["threads"] = threads;
  double bw = 0, bf16 = 0, fp64 = 0;
  if (!o.skip_probes) {
    auto b1 = kernels::probe_read_bandwidth(size_t(1) << 30, 1, o.probe_seconds);
    auto bn = kernels::probe_read_bandwidth(size_t(1) << 30, threads, o.probe_seconds);
    auto pf = kernels::probe_bf16_peak(threads, o.probe_seconds);
    auto pi = kernels::probe_int8_peak(threads, o.probe_seconds);
    auto pd = kernels::probe_fp64_peak(threads, o.probe_seconds);
    bw = bn.value;
    bf16 = pf.value;
    fp64 = pd.value;
    j["machine"] = {{"read_gbps_1_thread", b1.value}, {"read_gbps", bn.value}, {"bf16_gflops", pf.value},
                    {"bf16_method", pf.method}, {"int8_gops", pi.value}, {"int8_method", pi.method},
                    {"fp64_gflops", pd.value}, {"fp64_method", pd.method}};
  }

  // Start-up: opening the checkpoint maps it (no weight is read); the pages are then read in
  // through the model's own mappings, so prefill and decode below take no page fault.
  const ProcessStats ps0 = process_stats();
  const auto tl = std::chrono::steady_clock::now();
  std::shared_ptr<const models::Model> model = models::load_model(o.model);
  const double load_s = seconds_since(tl);
  const ProcessStats ps1 = process_stats();
  const auto tp = std::chrono::steady_clock::now();
  const PreloadResult pre = preload_checkpoint(model->checkpoint(), o.model, 1e18);
  const bool preloaded = pre.read_in;
  const double preload_s = seconds_since(tp);
  const ProcessStats ps2 = process_stats();
  {
    const double ckpt_bytes = double(model->checkpoint().total_bytes());
    j["startup"] = {{"load_seconds", load_s},
                    {"load_minor_faults", ps1.minor_faults - ps0.minor_faults},
                    {"load_major_faults", ps1.major_faults - ps0.major_faults},
                    {"checkpoint_bytes", ckpt_bytes},
                    {"preloaded", preloaded},
                    {"preload_seconds", preload_s},
                    {"preload_gbps", preloaded && preload_s > 0 ? ckpt_bytes / preload_s / 1e9 : 0},
                    {"preload_minor_faults", ps2.minor_faults - ps1.minor_faults},
                    {"preload_major_faults", ps2.major_faults - ps1.major_faults},
                    {"huge_page_bytes", pre.huge_bytes},
                    {"huge_page_mappable_bytes", pre.huge_mappable},
                    {"recached_bytes", pre.recached_bytes},
                    {"resident_bytes", ps2.resident_bytes}};
  }
  const auto& mc = model->model_config();
  const auto& facts = model->facts();
  std::mt19937_64 rng(1);
  std::vector<int64_t> ids(size_t(std::max<int64_t>(1, o.prompt_tokens)));
  for (auto& x : ids) x = int64_t(rng() % uint64_t(facts.vocab_size));
  models::CacheOptions co;
  co.fp4_index_keys = o.indexer_cache == "fp4";
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
  // The read probe again, right after the decode steps: on a shared host the bandwidth moves
  // between the start's probe and the steps, and the roofline is only as good as its probe.
  double bw_after = 0;
  if (!o.skip_probes) bw_after = kernels::probe_read_bandwidth(size_t(1) << 30, threads, o.probe_seconds).value;

  const double decode_tps = double(o.decode_tokens) / decode_s;
  const auto traffic = mc.decode_traffic(st->pos);
  const double achieved = traffic.total() * decode_tps / 1e9;
  const double flops_tok = mc.prefill_flops_per_token();
  const double prefill_tps = double(ids.size()) / prefill_s;
  j["model"] = {{"dir", o.model}, {"model_type", facts.model_type}, {"layers", facts.layers},
                {"hidden_size", facts.hidden_size}};
  j["prefill"] = {{"tokens", ids.size()}, {"seconds", prefill_s}, {"tokens_per_s", prefill_tps},
                  {"gflops", flops_tok * prefill_tps / 1e9}, {"pct_of_bf16_peak", bf16 > 0 ? 100 * flops_tok * prefill_tps / 1e9 / bf16 : 0},
                  {"pct_of_fp64_peak", fp64 > 0 ? 100 * flops_tok * prefill_tps / 1e9 / fp64 : 0}};
  j["decode"] = {{"tokens", o.decode_tokens}, {"context", st->pos}, {"seconds", decode_s}, {"tokens_per_s", decode_tps},
                 {"bytes_per_token", traffic.total()}, {"weight_bytes", traffic.weights},
                 {"routed_expert_bytes", traffic.routed_experts}, {"cache_bytes", traffic.caches},
                 {"achieved_gbps", achieved}, {"roofline_tokens_per_s", bw > 0 ? bw * 1e9 / traffic.total() : 0},
                 {"pct_of_roofline", bw > 0 ? 100 * achieved / bw : 0}};
  if (bw_after > 0) {
    j["machine"]["read_gbps_after_decode"] = bw_after;
    j["decode"]["pct_of_roofline_after"] = 100 * achieved / bw_after;
  }
  if (o.profile) {
    j["prefill"]["profile"] = profile_rows(prefill_profile, 1.0, bw);
    j["prefill"]["profiled_ms"] = profiled_ms(j["prefill"]["profile"]);
    j["decode"]["profile"] = profile_rows(profile, double(o.decode_tokens), bw);
    j["decode"]["profiled_ms_per_token"] = profiled_ms(j["decode"]["profile"]);
  }
  if (!o.contexts.empty()) {
    // Decode at long context from a synthetic state (Model::synthetic_sequence), placed in a
    // cache pool as the engine places a request's (its entries in pool blocks reserved ahead,
    // not in vectors that reallocate and copy ~20 MB of entries as they grow at 128K; the
    // forward pass's workspace in the pool's): one warm-up step, then the mean of
    // context_steps steps.
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    double first_ms = 0;
    const cache::CacheLayout layout = mc.cache_layout(co);
    for (int64_t ctx : o.contexts) {
      const int64_t pos = std::max<int64_t>(layout.block_tokens, ctx / layout.block_tokens * layout.block_tokens);
      auto cs = model->synthetic_sequence(pos, uint64_t(pos), co);
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
                          ? model->workspace(pool.workspace(), pool.workspace_bytes(), steps_ahead, parts)
                          : nullptr;
      cs->use_workspace(ws.get());
      int64_t tok = 1;
      model->decode(*cs, tok);
      auto tc = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < o.context_steps; ++i) model->decode(*cs, tok = (tok * 7919 + 13) % facts.vocab_size);
      const double ms = 1e3 * seconds_since(tc) / double(std::max<int64_t>(1, o.context_steps));
      if (first_ms == 0) first_ms = ms;
      const auto tr = mc.decode_traffic(pos);
      rows.push_back({{"context", pos}, {"step_ms", ms}, {"ratio_to_first", ms / first_ms},
                      {"bytes_per_token", tr.total()}, {"cache_bytes", tr.caches}, {"pool_bytes", pool.bytes_in_use()},
                      {"indexer_scratch_bytes", pool.workspace_bytes()}});
    }
    j["long_context"] = rows;
  }
  if (!o.batches.empty()) {
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
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  if (j.contains("machine")) {
    const auto& m = j["machine"];
    std::printf("machine: %s, %d threads: read %.1f GB/s (%.1f with 1 thread), bf16 %.0f GFLOP/s (%s), int8 %.0f GOPS, "
                "fp64 fma %.0f GFLOP/s\n",
                j["isa"].get<std::string>().c_str(), threads, m["read_gbps"].get<double>(),
                m["read_gbps_1_thread"].get<double>(), m["bf16_gflops"].get<double>(),
                m["bf16_method"].get<std::string>().c_str(), m["int8_gops"].get<double>(), m["fp64_gflops"].get<double>());
  }
  // Ratios to the machine's limits only where the probes measured them (not with --skip-probes).
  const bool probed = j.contains("machine");
  {
    const auto& u = j["startup"];
    std::printf("start-up: checkpoint opened in %.3f s (%lld page faults); %.2f GB of weights %s",
                u["load_seconds"].get<double>(), (long long)(u["load_minor_faults"].get<int64_t>() + u["load_major_faults"].get<int64_t>()),
                u["checkpoint_bytes"].get<double>() / 1e9, u["preloaded"].get<bool>() ? "read in through its mappings" : "left to demand paging (larger than 3/4 of memory)");
    if (u["preloaded"].get<bool>())
      std::printf(": %.2f s = %.2f GB/s (%lld minor + %lld major page faults)", u["preload_seconds"].get<double>(),
                  u["preload_gbps"].get<double>(), (long long)u["preload_minor_faults"].get<int64_t>(),
                  (long long)u["preload_major_faults"].get<int64_t>());
    if (u["preloaded"].get<bool>())
      std::printf("; %.2f of %.2f GB mapped in 2 MB pages%s", u["huge_page_bytes"].get<double>() / 1e9,
                  u["huge_page_mappable_bytes"].get<double>() / 1e9,
                  u["recached_bytes"].get<double>() > 0
                      ? (" (" + std::to_string(int(u["recached_bytes"].get<double>() / 1e6)) + " MB read again to cache them so)").c_str()
                      : "");
    std::printf("; %.0f MB resident\n", u["resident_bytes"].get<double>() / 1e6);
  }
  std::printf("prefill: %zu tokens in %.3f s = %.1f tokens/s, %.1f GFLOP/s", ids.size(), prefill_s, prefill_tps,
              flops_tok * prefill_tps / 1e9);
  if (probed)
    std::printf(" (%.1f%% of bf16 peak, %.1f%% of fp64 fma peak)", j["prefill"]["pct_of_bf16_peak"].get<double>(),
                j["prefill"]["pct_of_fp64_peak"].get<double>());
  std::printf("\n");
  if (o.profile) {
    std::printf("prefill products by weight shape (%.1f ms of %.1f; time on the calling thread):\n",
                j["prefill"]["profiled_ms"].get<double>(), 1e3 * prefill_s);
    print_profile(j["prefill"]["profile"], probed, "  ");
  }
  std::printf("decode: %lld tokens at context %lld = %.2f tokens/s; %.1f MB read per token (weights %.1f, experts %.1f, "
              "caches %.2f) = %.1f GB/s achieved",
              (long long)o.decode_tokens, (long long)st->pos, decode_tps, traffic.total() / 1e6, traffic.weights / 1e6,
              traffic.routed_experts / 1e6, traffic.caches / 1e6, achieved);
  if (probed)
    std::printf(", %.1f%% of the %.1f tokens/s roofline (%.1f%% at the %.1f GB/s probed right after)",
                j["decode"]["pct_of_roofline"].get<double>(), j["decode"]["roofline_tokens_per_s"].get<double>(),
                j["decode"]["pct_of_roofline_after"].get<double>(), j["machine"]["read_gbps_after_decode"].get<double>());
  std::printf("\n");
  if (o.profile) {
    std::printf("decode products by weight shape, per token (%.1f ms of %.1f; time on the calling thread — MoE's experts "
                "run one per thread side by side):\n",
                j["decode"]["profiled_ms_per_token"].get<double>(), 1e3 / decode_tps);
    print_profile(j["decode"]["profile"], probed, "  ");
  }
  if (j.contains("batched_decode")) {
    std::printf("batched decode through the engine (%lld-token prompts, %lld tokens each):\n", (long long)o.prompt_tokens,
                (long long)o.decode_tokens);
    for (const auto& r : j["batched_decode"]) {
      std::printf("  batch %3d: %8.2f tokens/s aggregate  %.2fx the first\n", r["batch"].get<int>(),
                  r["tokens_per_s"].get<double>(), r["ratio_to_first"].get<double>());
      if (r.contains("profile")) {
        std::printf("    products by weight shape, per step (%.1f ms of %.1f):\n", r["profiled_ms_per_step"].get<double>(),
                    1e3 * r["batch"].get<int>() / r["tokens_per_s"].get<double>());
        print_profile(r["profile"], probed, "    ");
      }
    }
  }
  if (j.contains("long_context")) {
    std::printf("decode step at long context (synthetic state in a cache pool; %lld steps each):\n",
                (long long)o.context_steps);
    for (const auto& r : j["long_context"])
      std::printf("  context %8lld: %8.1f ms/token  %.2fx the first  (%.1f MB read per token, caches %.1f MB)\n",
                  (long long)r["context"].get<int64_t>(), r["step_ms"].get<double>(), r["ratio_to_first"].get<double>(),
                  r["bytes_per_token"].get<double>() / 1e6, r["cache_bytes"].get<double>() / 1e6);
  }
  if (j.contains("prefix_cache")) {
    const auto& p = j["prefix_cache"];
    std::printf("prefix cache, %lld-token shared prefix + %lld-token suffix: time to first token cold %.3f s, hit %.3f s "
                "(%.1fx; %lld tokens reused, %lld computed; first token %s a cold run's)\n",
                (long long)p["prefix_tokens"].get<int64_t>(), (long long)p["suffix_tokens"].get<int64_t>(),
                p["cold_ttft_s"].get<double>(), p["hit_ttft_s"].get<double>(), p["speedup"].get<double>(),
                (long long)p["hit_cached_tokens"].get<int64_t>(), (long long)p["hit_recomputed_tokens"].get<int64_t>(),
                p["first_token_identical"].get<bool>() ? "equals" : "DIFFERS FROM");
  }
  if (!j.contains("speculative")) return;
  for (const auto& b : j["speculative"]) {
    auto line = [&](const char* name, const nlohmann::ordered_json& r) {
      std::printf("  %-18s %8.2f tokens/s  %.2fx", name, r["tokens_per_s"].get<double>(), r["speedup"].get<double>());
      if (r.contains("acceptance_rate"))
        std::printf("  acceptance %.1f%%, %.2f tokens per verification", 100 * r["acceptance_rate"].get<double>(),
                    r["mean_accepted_length"].get<double>());
      std::printf("\n");
    };
    std::printf("speculative decoding, batch %d, up to %d drafts (outputs %s):\n", b["batch"].get<int>(),
                b["spec_tokens"].get<int>(), b["outputs_identical"].get<bool>() ? "identical" : "DIFFERENT");
    line("no speculation", b["plain"]);
    line("MTP drafts", b["mtp"]);
    line("forced acceptance", b["forced_acceptance"]);
  }
}

AutoRegister reg([](CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* c = app.add_subcommand("bench", "prefill and decode speed as ratios to this machine's measured limits");
  c->add_option("--model", o->model, "model directory")->required();
  c->add_option("--prompt-tokens", o->prompt_tokens, "prefill length (default 128)");
  c->add_option("--decode-tokens", o->decode_tokens, "decode steps (default 16)");
  c->add_option("--threads", o->threads, "worker threads (default: all cores, or STRATA_THREADS)");
  c->add_option("--probe-seconds", o->probe_seconds, "time per machine probe (default 0.5)");
  c->add_flag("--skip-probes", o->skip_probes, "do not measure the machine");
  c->add_flag("--json", o->json, "print one JSON object");
  c->add_flag("--profile", o->profile,
              "time the products of the prefill and of the decode steps (batch 1 and --batches) by weight shape: ms per step, weight GB/s and GMAC/s of each");
  c->add_option("--spec-tokens", o->spec_tokens,
                "also measure speculative decoding with up to N drafts: none vs MTP vs forced acceptance")
      ->check(CLI::Range(0, 16));
  c->add_option("--batches", o->batches, "also measure aggregate decode tokens/s of this many requests at once")
      ->delimiter(',');
  c->add_option("--context", o->contexts,
                 "also time decode steps at these context lengths (rounded down to 128), from a synthetic state")
      ->delimiter(',');
  c->add_option("--context-steps", o->context_steps, "decode steps timed per --context length (default 4)");
  c->add_option("--indexer-cache", o->indexer_cache,
                "indexer key storage of the prefill/decode and --context states: fp8 (default) or fp4 (as serve)")
      ->check(CLI::IsMember({"fp8", "fp4"}));
  c->add_option("--prefix-tokens", o->prefix_tokens,
                 "also measure time to first token of a prompt sharing this many tokens with the previous one vs cold");
  c->add_option("--suffix-tokens", o->suffix_tokens, "unshared tokens after the --prefix-tokens prefix (default 16)");
  c->add_option("--spec-batches", o->spec_batches, "batch sizes for --spec-tokens (default 1 8)")->delimiter(',');
  c->callback([o] { run_bench(*o); });
});

}  // namespace
}  // namespace strata::cli
