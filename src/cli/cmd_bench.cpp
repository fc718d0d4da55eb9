// `strata bench --model DIR`: measures this machine's limits (read bandwidth, bf16 and int8
// dot-product peaks) and then prefill and batch-1 decode of the model, reporting each figure
// as a ratio to those limits: decode against the read-bandwidth roofline (bytes a step must
// read ÷ bandwidth), prefill FLOP/s against the bf16 peak. --json for scripts.
// --numerics exact fast measures each profile in turn on the same loaded model, labelled.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/bench_expert_parallel.h"
#include "cli/bench_options.h"
#include "cli/bench_report.h"
#include "cli/bench_run.h"
#include "cli/commands.h"
#include "cli/numerics_option.h"
#include "cli/preload.h"
#include "core/cpu.h"
#include "core/error.h"
#include "dist/world.h"
#include "core/numerics.h"
#include "core/process_stats.h"
#include "kernels/parallel.h"
#include "kernels/probe.h"
#include "models/registry.h"

namespace strata::cli {
namespace {

using Opts = BenchOptions;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void print_startup(const nlohmann::ordered_json& u) {
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
  std::printf("; %.0f MB resident", u["resident_bytes"].get<double>() / 1e6);
  if (u["read_through_seconds"].get<double>() > 0)
    std::printf("; every weight line then read once in %.2f s = %.1f GB/s (warm-up)", u["read_through_seconds"].get<double>(),
                u["read_through_gbps"].get<double>());
  std::printf("\n");
}

void run_bench(const Opts& o) {
  // Over several ranks every measured pass must run the same forward passes on every rank:
  // the engine's modes schedule by wall-clock time, so only the fixed loops run.
  if (dist::size() > 1) {
    if (o.expert_parallel || o.prefix_tokens > 0 || o.spec_tokens > 0 || !o.json_schema.empty())
      throw Error("bench over " + std::to_string(dist::size()) +
                  " MPI ranks measures prefill, decode, --context and --batches (in lockstep); --ep-ranks, "
                  "--prefix-tokens, --spec-tokens and --json-schema run in one process");
  }
  // Dispatch planning reads routing tables and times nothing: no probes, no passes.
  if (o.expert_parallel) {
    const auto j = bench_expert_parallel(o.model, o.ep);
    if (o.json) std::printf("%s\n", nlohmann::ordered_json{{"expert_parallel", j}}.dump(2).c_str());
    else print_expert_parallel(j);
    return;
  }
  if (o.threads > 0) kernels::set_num_threads(o.threads);
  BenchMachine machine;
  machine.threads = kernels::num_threads();
  const int threads = machine.threads;
  // The first profile is active while the model loads; each pass then runs under its own.
  const std::vector<Numerics> profiles = resolve_numerics_list(o.numerics, "bench");
  set_numerics(profiles.front());
  nlohmann::ordered_json j;
  j["isa"] = std::string(isa_name(active_isa()));
  if (profiles.size() == 1) {
    j["numerics"] = std::string(numerics_name(profiles.front()));
  } else {
    j["numerics"] = nlohmann::ordered_json::array();
    for (Numerics n : profiles) j["numerics"].push_back(std::string(numerics_name(n)));
  }
  j["threads"] = threads;
  if (!o.skip_probes) {
    auto b1 = kernels::probe_read_bandwidth(size_t(1) << 30, 1, o.probe_seconds);
    auto bn = kernels::probe_read_bandwidth(size_t(1) << 30, threads, o.probe_seconds);
    auto pf = kernels::probe_bf16_peak(threads, o.probe_seconds);
    auto pi = kernels::probe_int8_peak(threads, o.probe_seconds);
    auto pd = kernels::probe_fp64_peak(threads, o.probe_seconds);
    machine.probed = true;
    machine.read_gbps = bn.value;
    machine.bf16_gflops = pf.value;
    machine.fp64_gflops = pd.value;
    j["machine"] = {{"read_gbps_1_thread", b1.value}, {"read_gbps", bn.value}, {"bf16_gflops", pf.value},
                    {"bf16_method", pf.method}, {"int8_gops", pi.value}, {"int8_method", pi.method},
                    {"fp64_gflops", pd.value}, {"fp64_method", pd.method}};
  }

  // Start-up: opening the checkpoint maps it (no weight is read); the pages are then read in
  // through the model's own mappings, so prefill and decode below take no page fault.
  const ProcessStats ps0 = process_stats();
  const auto tl = std::chrono::steady_clock::now();
  std::unique_ptr<models::Model> loaded = models::load_model(o.model);
  apply_expert_balance(*loaded, o.model, o.balance);
  std::shared_ptr<const models::Model> model = std::move(loaded);
  const double load_s = seconds_since(tl);
  const ProcessStats ps1 = process_stats();
  const auto tp = std::chrono::steady_clock::now();
  const auto holds = [&](const std::string& t) { return model->holds_tensor(t); };
  const PreloadResult pre = preload_checkpoint(model->checkpoint(), o.model, 1e18, false, holds);
  const bool preloaded = pre.read_in;
  const double preload_s = seconds_since(tp);
  const ProcessStats ps2 = process_stats();
  // a preloaded checkpoint read once more in full, so that no measured pass reads a weight first
  const double read_through_s = preloaded ? read_through_checkpoint(model->checkpoint(), holds) : 0.0;
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
                    {"resident_bytes", ps2.resident_bytes},
                    {"read_through_seconds", read_through_s},
                    {"read_through_gbps", read_through_s > 0 ? ckpt_bytes / read_through_s / 1e9 : 0}};
  }
  const auto& facts = model->facts();
  j["model"] = {{"dir", o.model}, {"model_type", facts.model_type}, {"layers", facts.layers},
                {"hidden_size", facts.hidden_size}};
  // One profile: its pass's keys at the top, as before profiles could be compared. Several: a
  // pass each under "runs", labelled, on the same loaded model.
  std::vector<nlohmann::ordered_json> runs;
  if (profiles.size() > 1)
    for (Numerics n : profiles) {
      ScopedNumerics scoped(n);
      bench_warm_up(o, *model);
    }
  for (Numerics n : profiles) {
    ScopedNumerics scoped(n);
    runs.push_back(bench_run(o, model, machine));
  }
  if (runs.size() == 1) {
    for (auto& [k, v] : runs[0].items()) {
      if (k == "numerics") continue;
      if (k == "read_gbps_after_decode") j["machine"][k] = v;
      else j[k] = v;
    }
  } else {
    j["runs"] = runs;
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
  print_startup(j["startup"]);
  // Ratios to the machine's limits only where the probes measured them (not with --skip-probes).
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    std::printf("%snumerics: %s\n", i ? "\n" : "", r["numerics"].get<std::string>().c_str());
    print_bench_run(r, o, machine.probed, r.value("read_gbps_after_decode", 0.0));
  }
  if (runs.size() > 1) print_profiles_compared(runs);
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
  c->add_flag("--lockstep", o->lockstep,
              "--batches by a fixed loop of batched forward passes, no engine (always so under mpirun)");
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
  c->add_option("--json-schema", o->json_schema,
                "also measure decoding under this JSON Schema's grammar at batch 1: step time vs free decoding, and "
                "the grammar's own work per step (cold and warm)");
  auto* ep = c->add_option("--ep-ranks", o->ep.ranks,
                            "instead of timing: plan expert-parallel dispatch over N ranks (DeepSeek-V4) on a Zipf token "
                            "stream; per hash-routed MoE layer, FP8 bytes per token and the max/mean load of experts and "
                            "of ranks without and with replicated hot experts")
                 ->check(CLI::Range(1, 4096));
  c->add_option("--ep-zipf", o->ep.zipf, "Zipf exponent of the --ep-ranks token stream (default 1.1)")
      ->check(CLI::Range(0.0, 10.0))
      ->needs(ep);
  c->add_option("--ep-tokens", o->ep.tokens, "tokens in the --ep-ranks batch (default 4096)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 26))
      ->needs(ep);
  c->add_option("--ep-extra-slots", o->ep.extra_slots,
                "with --ep-ranks or --ep-balance: expert slots per rank beyond its shard for replicas (default an "
                "eighth of the shard, at least 1)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 20));
  add_expert_balance_options(*c, o->balance, /*slots_option=*/false);
  c->add_option("--ep-seed", o->ep.seed, "seed of the --ep-ranks token stream (default 1)")->needs(ep);
  add_numerics_option(*c, o->numerics);
  c->callback([o, ep] {
    o->expert_parallel = ep->count() > 0;
    o->balance.extra_slots = o->ep.extra_slots;
    run_bench(*o);
  });
});

}  // namespace
}  // namespace strata::cli
