// `strata inspect --model DIR | --config FILE [--json]`: architecture, layer schedule,
// parameter counts by component (total and active per token), bytes by dtype, and for a
// checkpoint the result of the tensor check.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "models/deepseek_v4/config.h"
#include "models/deepseek_v4/params.h"
#include "models/deepseek_v4/tensors.h"
#include "models/model_registry.h"

namespace strata::cli {
namespace {
using nlohmann::ordered_json;

std::string schedule_string(const dsv4::Config& c) {
  std::string s;
  for (int64_t L = 0; L < c.n_layers_total(); ++L) {
    if (L) s += " ";
    if (L == c.num_hidden_layers) s += "| mtp: ";
    s += dsv4::layer_kind_name(c.layer_kind(L));
  }
  return s;
}

ordered_json describe(const dsv4::Config& c, const dsv4::ParamCounts& p) {
  ordered_json j;
  j["model_type"] = c.model_type;
  j["architecture"] = {{"hidden_size", c.hidden_size}, {"layers", c.num_hidden_layers},
                       {"mtp_layers", c.num_nextn_predict_layers}, {"heads", c.num_attention_heads},
                       {"head_dim", c.head_dim}, {"rope_dims", c.qk_rope_head_dim}, {"q_lora_rank", c.q_lora_rank},
                       {"o_groups", c.o_groups}, {"o_lora_rank", c.o_lora_rank}, {"sliding_window", c.sliding_window},
                       {"routed_experts", c.n_routed_experts}, {"experts_per_token", c.num_experts_per_tok},
                       {"expert_inner", c.moe_intermediate_size}, {"expert_dtype", c.expert_dtype},
                       {"index_heads", c.index_n_heads}, {"index_head_dim", c.index_head_dim},
                       {"index_topk", c.index_topk}, {"hc_mult", c.hc_mult}, {"vocab_size", c.vocab_size},
                       {"max_position_embeddings", c.max_position_embeddings}};
  ordered_json layers = ordered_json::array();
  int csa = 0, hca = 0, win = 0;
  for (int64_t L = 0; L < c.n_layers_total(); ++L) {
    const bool mtp = L >= c.num_hidden_layers;
    auto kind = c.layer_kind(L);
    if (!mtp) (kind == dsv4::LayerKind::csa ? csa : kind == dsv4::LayerKind::hca ? hca : win)++;
    layers.push_back({{"layer", L}, {"mtp", mtp}, {"kind", dsv4::layer_kind_name(kind)},
                      {"compress_ratio", c.compress_ratio(L)}, {"hash_routing", !mtp && c.is_hash_layer(L)},
                      {"rope_theta", c.layer_rope_theta(L)}, {"yarn", c.uses_yarn(L)}});
  }
  j["schedule"] = {{"csa_layers", csa}, {"hca_layers", hca}, {"window_layers", win},
                   {"hash_layers", c.num_hash_layers}, {"layers", layers}};
  ordered_json total, active;
  for (auto& [k, v] : p.total) total[dsv4::component_name(k)] = v;
  for (auto& [k, v] : p.active) active[dsv4::component_name(k)] = v;
  j["parameters"] = {{"total", p.total_all}, {"active_per_token", p.active_all}, {"total_by_component", total},
                     {"active_by_component", active}, {"mtp_total", p.mtp_total}, {"mtp_active", p.mtp_active}};
  ordered_json bytes;
  for (auto& [t, b] : p.bytes) bytes[std::string(dtype_name(t))] = b;
  j["bytes"] = {{"total", p.bytes_all}, {"by_dtype", bytes}};
  return j;
}

std::string human(double n) {
  char b[32];
  if (n >= 1e9) std::snprintf(b, sizeof b, "%.2fB", n / 1e9);
  else if (n >= 1e6) std::snprintf(b, sizeof b, "%.2fM", n / 1e6);
  else if (n >= 1e3) std::snprintf(b, sizeof b, "%.2fK", n / 1e3);
  else std::snprintf(b, sizeof b, "%.0f", n);
  return b;
}

std::string human_bytes(double n) {
  char b[32];
  if (n >= 1e9) std::snprintf(b, sizeof b, "%.2f GB", n / 1e9);
  else if (n >= 1e6) std::snprintf(b, sizeof b, "%.2f MB", n / 1e6);
  else if (n >= 1e3) std::snprintf(b, sizeof b, "%.2f KB", n / 1e3);
  else std::snprintf(b, sizeof b, "%.0f B", n);
  return b;
}

void print_text(const dsv4::Config& c, const ordered_json& j) {
  const auto& a = j["architecture"];
  std::printf("model_type: %s (%s)\n", c.model_type.c_str(), c.architectures.empty() ? "" : c.architectures[0].c_str());
  std::printf("hidden %lld, %lld layers + %lld MTP, %lld heads x %lld (rope %lld), q_lora %lld, o_groups %lld x %lld\n",
              (long long)c.hidden_size, (long long)c.num_hidden_layers, (long long)c.num_nextn_predict_layers,
              (long long)c.num_attention_heads, (long long)c.head_dim, (long long)c.qk_rope_head_dim,
              (long long)c.q_lora_rank, (long long)c.o_groups, (long long)c.o_lora_rank);
  std::printf("experts: %lld routed x %lld (%s) + 1 shared, top-%lld, routing scale %g; indexer %lld x %lld top-%lld; "
              "window %lld; mHC x%lld\n",
              (long long)c.n_routed_experts, (long long)c.moe_intermediate_size, c.expert_dtype.c_str(),
              (long long)c.num_experts_per_tok, c.routed_scaling_factor, (long long)c.index_n_heads,
              (long long)c.index_head_dim, (long long)c.index_topk, (long long)c.sliding_window, (long long)c.hc_mult);
  (void)a;
  const auto& s = j["schedule"];
  std::printf("schedule: %d CSA + %d HCA + %d window-only; hash routing in layers 0-%lld\n", s["csa_layers"].get<int>(),
              s["hca_layers"].get<int>(), s["window_layers"].get<int>(), (long long)c.num_hash_layers - 1);
  std::printf("  %s\n", schedule_string(c).c_str());
  std::printf("  RoPE: compressed layers theta %g with YaRN x%g over %lld positions; window-only layers theta %g, no YaRN\n",
              c.compress_rope_theta, c.rope_scaling.factor, (long long)c.rope_scaling.original_max_position_embeddings,
              c.rope_theta);
  const auto& p = j["parameters"];
  std::printf("parameters (main layers): %s total, %s active per token\n", human(p["total"].get<double>()).c_str(),
              human(p["active_per_token"].get<double>()).c_str());
  for (auto& [k, v] : p["total_by_component"].items())
    std::printf("  %-16s %12s total %12s active\n", k.c_str(), human(v.get<double>()).c_str(),
                human(p["active_by_component"][k].get<double>()).c_str());
  std::printf("  %-16s %12s total %12s active\n", "mtp block", human(p["mtp_total"].get<double>()).c_str(),
              human(p["mtp_active"].get<double>()).c_str());
  std::printf("bytes: %s total\n", human_bytes(j["bytes"]["total"].get<double>()).c_str());
  for (auto& [k, v] : j["bytes"]["by_dtype"].items()) std::printf("  %-8s %s\n", k.c_str(), human_bytes(v.get<double>()).c_str());
}

AutoRegister reg([](CLI::App& app) {
  auto* c = app.add_subcommand("inspect", "describe a model: layer schedule, parameters, bytes, tensor check");
  static std::string model, config;
  static bool as_json = false;
  auto* m = c->add_option("--model", model, "checkpoint directory");
  c->add_option("--config", config, "a config.json file (no weights needed)")->excludes(m);
  c->add_flag("--json", as_json, "print one JSON object");
  c->callback([] {
    if (model.empty() && config.empty()) throw Error("inspect needs --model DIR or --config FILE");
    const std::string src = model.empty() ? config : model;
    models::require_supported(src);
    dsv4::Config cfg = dsv4::load_config(src);
    ordered_json j = describe(cfg, dsv4::count_params(cfg));
    int rc = 0;
    if (!model.empty()) {
      auto ckpt = SafetensorsCheckpoint::open_dir(model);
      auto r = dsv4::check_checkpoint(cfg, ckpt);
      j["checkpoint"] = {{"tensors", ckpt.size()}, {"bytes", ckpt.total_bytes()}, {"ok", r.ok()},
                         {"missing", r.missing}, {"mismatched", r.mismatched}, {"unexpected", r.unexpected}};
      if (!r.ok()) rc = 1;
    }
    if (as_json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      print_text(cfg, j);
      if (j.contains("checkpoint")) {
        const auto& k = j["checkpoint"];
        std::printf("checkpoint: %zu tensors, %s: %s\n", k["tensors"].get<size_t>(),
                    human_bytes(k["bytes"].get<double>()).c_str(), k["ok"].get<bool>() ? "all expected tensors present" : "INVALID");
        for (auto& x : k["missing"]) std::printf("  missing %s\n", x.get<std::string>().c_str());
        for (auto& x : k["mismatched"]) std::printf("  mismatched %s\n", x.get<std::string>().c_str());
        if (!k["unexpected"].empty()) std::printf("  %zu tensors the model does not use\n", k["unexpected"].size());
      }
    }
    set_exit_code(rc);
  });
});
}  // namespace
}  // namespace strata::cli
