#include "models/deepseek_v4/arch_config.h"

#include <cstdarg>
#include <cstdio>

#include "core/dtype.h"
#include "core/human_units.h"
#include "models/deepseek_v4/indexer_scratch.h"
#include "models/deepseek_v4/params.h"
#include "models/deepseek_v4/tensors.h"

namespace strata::dsv4 {
using nlohmann::ordered_json;

namespace {

void appendf(std::string& out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out += buf;
}

std::string schedule_string(const Config& c) {
  std::string s;
  for (int64_t L = 0; L < c.n_layers_total(); ++L) {
    if (L) s += " ";
    if (L == c.num_hidden_layers) s += "| mtp: ";
    s += layer_kind_name(c.layer_kind(L));
  }
  return s;
}

}  // namespace

CacheLayoutOptions layout_options(const models::CacheOptions& o) {
  CacheLayoutOptions lo;
  lo.index_keys = o.fp4_index_keys ? IndexKeyFormat::fp4 : IndexKeyFormat::fp8;
  lo.include_mtp = o.include_mtp;
  return lo;
}

ArchConfig::ArchConfig(Config c) : cfg_(std::move(c)) {
  facts_.model_type = cfg_.model_type;
  facts_.architectures = cfg_.architectures;
  facts_.vocab_size = cfg_.vocab_size;
  facts_.max_positions = cfg_.max_position_embeddings;
  facts_.hidden_size = cfg_.hidden_size;
  facts_.layers = cfg_.num_hidden_layers;
  facts_.mtp_layers = cfg_.num_nextn_predict_layers;
  if (cfg_.eos_token_id >= 0) facts_.eos_token_ids.push_back(cfg_.eos_token_id);
  facts_.hidden_width = cfg_.hc_mult * cfg_.hidden_size;  // the final hc streams of a token
}

cache::CacheLayout ArchConfig::cache_layout(const models::CacheOptions& o) const {
  return dsv4::cache_layout(cfg_, layout_options(o));
}

std::vector<models::LedgerVariant> ArchConfig::ledger_variants(const models::CacheOptions& o) const {
  CacheLayoutOptions paper = layout_options(o);
  paper.entry_bytes_override = 576;
  paper.index_key_bytes_override = 64;
  models::LedgerVariant v;
  v.key = "paper_9_2_bytes";
  v.description =
      "layer-by-layer §9.2 counts 576-byte entries without scale bytes and 64-byte FP4 index keys, no compressor state";
  v.layout = dsv4::cache_layout(cfg_, paper);
  std::erase_if(v.layout.specs, [](const cache::CacheSpec& s) { return s.kind == cache::CacheKind::compressor_state; });
  return {v};
}

int64_t ArchConfig::workspace_bytes(int64_t max_context, int64_t parts) const {
  return indexer_scratch_bytes(cfg_, max_context, parts);
}

ordered_json ArchConfig::describe() const {
  const Config& c = cfg_;
  const ParamCounts p = count_params(c);
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
    if (!mtp) (kind == LayerKind::csa ? csa : kind == LayerKind::hca ? hca : win)++;
    layers.push_back({{"layer", L}, {"mtp", mtp}, {"kind", layer_kind_name(kind)},
                      {"compress_ratio", c.compress_ratio(L)}, {"hash_routing", !mtp && c.is_hash_layer(L)},
                      {"rope_theta", c.layer_rope_theta(L)}, {"yarn", c.uses_yarn(L)}});
  }
  j["schedule"] = {{"csa_layers", csa}, {"hca_layers", hca}, {"window_layers", win},
                   {"hash_layers", c.num_hash_layers}, {"layers", layers}};
  ordered_json total, active;
  for (auto& [k, v] : p.total) total[component_name(k)] = v;
  for (auto& [k, v] : p.active) active[component_name(k)] = v;
  j["parameters"] = {{"total", p.total_all}, {"active_per_token", p.active_all}, {"total_by_component", total},
                     {"active_by_component", active}, {"mtp_total", p.mtp_total}, {"mtp_active", p.mtp_active}};
  ordered_json bytes;
  for (auto& [t, b] : p.bytes) bytes[std::string(dtype_name(t))] = b;
  j["bytes"] = {{"total", p.bytes_all}, {"by_dtype", bytes}};
  return j;
}

std::string ArchConfig::describe_text() const {
  const Config& c = cfg_;
  const ordered_json j = describe();
  std::string out;
  appendf(out, "model_type: %s (%s)\n", c.model_type.c_str(), c.architectures.empty() ? "" : c.architectures[0].c_str());
  appendf(out, "hidden %lld, %lld layers + %lld MTP, %lld heads x %lld (rope %lld), q_lora %lld, o_groups %lld x %lld\n",
          (long long)c.hidden_size, (long long)c.num_hidden_layers, (long long)c.num_nextn_predict_layers,
          (long long)c.num_attention_heads, (long long)c.head_dim, (long long)c.qk_rope_head_dim,
          (long long)c.q_lora_rank, (long long)c.o_groups, (long long)c.o_lora_rank);
  appendf(out,
          "experts: %lld routed x %lld (%s) + 1 shared, top-%lld, routing scale %g; indexer %lld x %lld top-%lld; "
          "window %lld; mHC x%lld\n",
          (long long)c.n_routed_experts, (long long)c.moe_intermediate_size, c.expert_dtype.c_str(),
          (long long)c.num_experts_per_tok, c.routed_scaling_factor, (long long)c.index_n_heads,
          (long long)c.index_head_dim, (long long)c.index_topk, (long long)c.sliding_window, (long long)c.hc_mult);
  const auto& s = j["schedule"];
  appendf(out, "schedule: %d CSA + %d HCA + %d window-only; hash routing in layers 0-%lld\n", s["csa_layers"].get<int>(),
          s["hca_layers"].get<int>(), s["window_layers"].get<int>(), (long long)c.num_hash_layers - 1);
  out += "  " + schedule_string(c) + "\n";
  appendf(out,
          "  RoPE: compressed layers theta %g with YaRN x%g over %lld positions; window-only layers theta %g, no YaRN\n",
          c.compress_rope_theta, c.rope_scaling.factor, (long long)c.rope_scaling.original_max_position_embeddings,
          c.rope_theta);
  const auto& p = j["parameters"];
  appendf(out, "parameters (main layers): %s total, %s active per token\n", human_count(p["total"].get<double>()).c_str(),
          human_count(p["active_per_token"].get<double>()).c_str());
  for (auto& [k, v] : p["total_by_component"].items())
    appendf(out, "  %-16s %12s total %12s active\n", k.c_str(), human_count(v.get<double>()).c_str(),
            human_count(p["active_by_component"][k].get<double>()).c_str());
  appendf(out, "  %-16s %12s total %12s active\n", "mtp block", human_count(p["mtp_total"].get<double>()).c_str(),
          human_count(p["mtp_active"].get<double>()).c_str());
  appendf(out, "bytes: %s total\n", human_bytes(j["bytes"]["total"].get<double>()).c_str());
  for (auto& [k, v] : j["bytes"]["by_dtype"].items())
    appendf(out, "  %-8s %s\n", k.c_str(), human_bytes(v.get<double>()).c_str());
  return out;
}

models::CheckReport ArchConfig::check_checkpoint(const SafetensorsCheckpoint& ckpt) const {
  return dsv4::check_checkpoint(cfg_, ckpt);
}

models::DecodeTraffic ArchConfig::decode_traffic(int64_t context) const { return dsv4::decode_traffic(cfg_, context); }

double ArchConfig::prefill_flops_per_token() const {
  // 2 per active parameter (the embedding row is a lookup).
  const ParamCounts p = count_params(cfg_);
  return 2.0 * double(p.active_all - p.active.at(Component::embedding));
}

}  // namespace strata::dsv4
