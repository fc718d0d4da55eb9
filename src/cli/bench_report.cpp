#include "cli/bench_report.h"

#include "cli/bench_structured.h"

#include <cstdio>
#include <string>

#include "cli/bench_profile.h"

namespace strata::cli {
namespace {

void print_speculative(const nlohmann::ordered_json& runs) {
  for (const auto& b : runs) {
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

}  // namespace

void print_bench_run(const nlohmann::ordered_json& j, const BenchOptions& o, bool probed, double read_gbps_after) {
  const auto& p = j["prefill"];
  const double prefill_s = p["seconds"].get<double>();
  std::printf("prefill: %lld tokens in %.3f s = %.1f tokens/s, %.1f GFLOP/s", (long long)p["tokens"].get<int64_t>(),
              prefill_s, p["tokens_per_s"].get<double>(), p["gflops"].get<double>());
  if (probed)
    std::printf(" (%.1f%% of bf16 peak, %.1f%% of fp64 fma peak)", p["pct_of_bf16_peak"].get<double>(),
                p["pct_of_fp64_peak"].get<double>());
  std::printf("\n");
  if (o.profile) {
    std::printf("prefill products by weight shape (%.1f ms of %.1f; time on the calling thread):\n",
                p["profiled_ms"].get<double>(), 1e3 * prefill_s);
    print_profile(p["profile"], probed, "  ");
  }
  const auto& d = j["decode"];
  const double decode_tps = d["tokens_per_s"].get<double>();
  std::printf("decode: %lld tokens at context %lld = %.2f tokens/s; %.1f MB read per token (weights %.1f, experts %.1f, "
              "caches %.2f) = %.1f GB/s achieved",
              (long long)d["tokens"].get<int64_t>(), (long long)d["context"].get<int64_t>(), decode_tps,
              d["bytes_per_token"].get<double>() / 1e6, d["weight_bytes"].get<double>() / 1e6,
              d["routed_expert_bytes"].get<double>() / 1e6, d["cache_bytes"].get<double>() / 1e6,
              d["achieved_gbps"].get<double>());
  if (probed)
    std::printf(", %.1f%% of the %.1f tokens/s roofline (%.1f%% at the %.1f GB/s probed right after)",
                d["pct_of_roofline"].get<double>(), d["roofline_tokens_per_s"].get<double>(),
                d["pct_of_roofline_after"].get<double>(), read_gbps_after);
  std::printf("\n");
  if (o.profile) {
    std::printf("decode products by weight shape, per token (%.1f ms of %.1f; time on the calling thread — MoE's experts "
                "run one per thread side by side):\n",
                d["profiled_ms_per_token"].get<double>(), 1e3 / decode_tps);
    print_profile(d["profile"], probed, "  ");
  }
  if (j.contains("batched_decode")) {
    const bool lockstep = !j["batched_decode"].empty() && j["batched_decode"][0].contains("mode");
    std::printf("batched decode %s (%lld-token prompts, %lld tokens each):\n",
                lockstep ? "in lockstep, no engine" : "through the engine", (long long)o.prompt_tokens,
                (long long)o.decode_tokens);
    for (const auto& r : j["batched_decode"]) {
      std::printf("  batch %3d: %8.2f tokens/s aggregate  %.2fx the first", r["batch"].get<int>(),
                  r["tokens_per_s"].get<double>(), r["ratio_to_first"].get<double>());
      if (lockstep && r["ranks"].get<int>() > 1)
        std::printf("  (%d ranks: %.1f%% of the steps in the expert exchange, %.1f KB received a step)",
                    r["ranks"].get<int>(), 100 * r["exchange_share"].get<double>(),
                    r["exchange_bytes_per_step"].get<double>() / 1e3);
      std::printf("\n");
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
    for (const auto& r : j["long_context"]) {
      std::printf("  context %8lld: %8.1f ms/token  %.2fx the first  (%.1f MB read per token, caches %.1f MB)",
                  (long long)r["context"].get<int64_t>(), r["step_ms"].get<double>(), r["ratio_to_first"].get<double>(),
                  r["bytes_per_token"].get<double>() / 1e6, r["cache_bytes"].get<double>() / 1e6);
      if (r.contains("regions_ms"))
        for (const auto& [name, ms] : r["regions_ms"].items())
          std::printf("; %s %.1f ms (%.0f%%)", name.c_str(), ms.get<double>(),
                      100 * ms.get<double>() / r["step_ms"].get<double>());
      std::printf("\n");
    }
  }
  if (j.contains("prefix_cache")) {
    const auto& c = j["prefix_cache"];
    std::printf("prefix cache, %lld-token shared prefix + %lld-token suffix: time to first token cold %.3f s, hit %.3f s "
                "(%.1fx; %lld tokens reused, %lld computed; first token %s a cold run's)\n",
                (long long)c["prefix_tokens"].get<int64_t>(), (long long)c["suffix_tokens"].get<int64_t>(),
                c["cold_ttft_s"].get<double>(), c["hit_ttft_s"].get<double>(), c["speedup"].get<double>(),
                (long long)c["hit_cached_tokens"].get<int64_t>(), (long long)c["hit_recomputed_tokens"].get<int64_t>(),
                c["first_token_identical"].get<bool>() ? "equals" : "DIFFERS FROM");
  }
  if (j.contains("speculative")) print_speculative(j["speculative"]);
  if (j.contains("structured_output")) print_structured(j["structured_output"]);
}

void print_profiles_compared(const std::vector<nlohmann::ordered_json>& runs) {
  const auto& base = runs.front();
  auto ratio = [&](const nlohmann::ordered_json& r, const char* part) {
    return r[part]["tokens_per_s"].get<double>() / base[part]["tokens_per_s"].get<double>();
  };
  std::printf("\n");
  for (size_t i = 1; i < runs.size(); ++i) {
    const auto& r = runs[i];
    std::printf("numerics %s vs %s: prefill %.2fx, decode %.2fx tokens/s", r["numerics"].get<std::string>().c_str(),
                base["numerics"].get<std::string>().c_str(), ratio(r, "prefill"), ratio(r, "decode"));
    if (r.contains("batched_decode"))
      for (size_t b = 0; b < r["batched_decode"].size(); ++b)
        std::printf(", batch %d %.2fx", r["batched_decode"][b]["batch"].get<int>(),
                    r["batched_decode"][b]["tokens_per_s"].get<double>() /
                        base["batched_decode"][b]["tokens_per_s"].get<double>());
    std::printf("\n");
  }
}

}  // namespace strata::cli
