#include "models/gemma4/arch_config.h"

#include <cstdio>

#include "core/human_units.h"
#include "models/gemma4/tensors.h"

namespace strata::gemma4 {

ArchConfig::ArchConfig(Config c) : cfg_(std::move(c)) {
  facts_.model_type = cfg_.model_type;
  facts_.architectures = cfg_.architectures;
  facts_.vocab_size = cfg_.vocab_size;
  facts_.max_positions = cfg_.max_position_embeddings;
  facts_.hidden_size = cfg_.hidden_size;
  facts_.layers = cfg_.num_hidden_layers;
  facts_.mtp_layers = 0;
  facts_.eos_token_ids = cfg_.eos_token_ids;
  facts_.hidden_width = cfg_.hidden_size;
}

namespace {
struct Counts {
  int64_t total = 0, active = 0, embedding = 0;
  uint64_t bytes = 0;
};
Counts count(const Config& c) {
  Counts n;
  const double share = c.enable_moe_block ? double(c.top_k_experts) / double(c.num_experts) : 1.0;
  for (const auto& t : expected_tensors(c)) {
    n.bytes += uint64_t(t.numel()) * uint64_t(dtype_size(t.dtypes[0]));
    n.total += t.numel();
    // A token reads one row of each embedding table.
    if (t.name.ends_with("embed_tokens.weight")) n.embedding = t.numel();
    if (t.name.ends_with("embed_tokens_per_layer.weight")) continue;
    n.active += t.routed_expert ? int64_t(double(t.numel()) * share + 0.5) : t.numel();
  }
  return n;
}
}  // namespace

nlohmann::ordered_json ArchConfig::describe() const {
  const Config& c = cfg_;
  const Counts n = count(c);
  nlohmann::ordered_json j;
  j["model_type"] = c.model_type;
  j["architecture"] = {{"hidden_size", c.hidden_size}, {"layers", c.num_hidden_layers},
                       {"heads", c.num_attention_heads}, {"sliding_kv_heads", c.num_key_value_heads},
                       {"sliding_head_dim", c.head_dim}, {"sliding_window", c.sliding_window},
                       {"global_head_dim", c.global_head_dim}, {"attention_k_eq_v", c.attention_k_eq_v},
                       {"full_rope", c.full_rope_type}, {"full_rope_theta", c.full_rope_theta},
                       {"full_partial_rotary_factor", c.full_partial_rotary_factor},
                       {"sliding_rope_theta", c.sliding_rope_theta}, {"intermediate_size", c.intermediate_size},
                       {"final_logit_softcapping", c.final_logit_softcapping}, {"vocab_size", c.vocab_size},
                       {"max_position_embeddings", c.max_position_embeddings}};
  if (c.num_global_key_value_heads > 0) j["architecture"]["global_kv_heads"] = c.num_global_key_value_heads;
  if (c.ple()) j["architecture"]["per_layer_input"] = c.hidden_size_per_layer_input;
  if (c.num_kv_shared_layers > 0) j["architecture"]["kv_shared_layers"] = c.num_kv_shared_layers;
  if (c.enable_moe_block)
    j["architecture"]["experts"] = {{"routed", c.num_experts}, {"per_token", c.top_k_experts},
                                    {"inner", c.moe_intermediate_size}};
  j["schedule"] = {{"sliding_layers", c.sliding_layers()}, {"full_layers", c.num_hidden_layers - c.sliding_layers()},
                   {"layer_types", c.layer_types}};
  j["parameters"] = {{"total", n.total}, {"active_per_token", n.active}, {"embedding", n.embedding}};
  j["bytes"] = {{"total", n.bytes}};
  return j;
}

std::string ArchConfig::describe_text() const {
  const Config& c = cfg_;
  const Counts n = count(c);
  std::string extras;
  if (c.ple()) extras += ", PLE " + std::to_string(c.hidden_size_per_layer_input) + " per layer";
  if (c.num_kv_shared_layers > 0) extras += ", last " + std::to_string(c.num_kv_shared_layers) + " layers KV-shared";
  if (c.enable_moe_block)
    extras += ", MoE " + std::to_string(c.num_experts) + " experts x " + std::to_string(c.moe_intermediate_size) +
              " top-" + std::to_string(c.top_k_experts);
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "model_type: %s (%s)\nhidden %lld, %lld layers (%lld sliding, window %lld + %lld full); %lld heads; "
                "sliding KV %lld x %lld, full KV %lld x %lld%s; GeGLU %lld%s\nparameters: %s total, %s active per "
                "token (%s embedding, tied head); %s\n",
                c.model_type.c_str(), c.architectures.empty() ? "" : c.architectures[0].c_str(),
                (long long)c.hidden_size, (long long)c.num_hidden_layers, (long long)c.sliding_layers(),
                (long long)c.sliding_window, (long long)(c.num_hidden_layers - c.sliding_layers()),
                (long long)c.num_attention_heads, (long long)c.num_key_value_heads, (long long)c.head_dim,
                (long long)(c.attention_k_eq_v && c.num_global_key_value_heads > 0 ? c.num_global_key_value_heads
                                                                                   : c.num_key_value_heads),
                (long long)c.global_head_dim, c.attention_k_eq_v ? " (K=V)" : "", (long long)c.intermediate_size,
                extras.c_str(), human_count(double(n.total)).c_str(), human_count(double(n.active)).c_str(),
                human_count(double(n.embedding)).c_str(), human_bytes(double(n.bytes)).c_str());
  return buf;
}

models::CheckReport ArchConfig::check_checkpoint(const SafetensorsCheckpoint& ckpt) const {
  return gemma4::check_checkpoint(cfg_, ckpt);
}

models::DecodeTraffic ArchConfig::decode_traffic(int64_t context) const {
  models::DecodeTraffic t;
  const double share = cfg_.enable_moe_block ? double(cfg_.top_k_experts) / double(cfg_.num_experts) : 1.0;
  for (const auto& e : expected_tensors(cfg_)) {
    double b = double(e.numel()) * double(dtype_size(e.dtypes[0]));
    if (e.name.ends_with("embed_tokens.weight")) {
      t.weights += b;  // the tied head reads it all; the lookup one row
      b = double(cfg_.hidden_size) * 2;
    } else if (e.name.ends_with("embed_tokens_per_layer.weight")) {
      b = double(e.shape[1]) * 2;  // one row
    }
    (e.routed_expert ? t.routed_experts : t.weights) += e.routed_expert ? b * share : b;
  }
  for (const auto& s : cache_layout({}).specs) t.caches += double(s.bytes_exact(context));
  return t;
}

double ArchConfig::prefill_flops_per_token() const {
  const Counts n = count(cfg_);
  return 2.0 * double(n.active);  // the tied head counts the embedding once, the lookup nothing
}

}  // namespace strata::gemma4
