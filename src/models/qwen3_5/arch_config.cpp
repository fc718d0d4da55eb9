#include "models/qwen3_5/arch_config.h"

#include <cstdio>

#include "core/human_units.h"
#include "models/qwen3_5/tensors.h"

namespace strata::qwen35 {

ArchConfig::ArchConfig(Config c) : cfg_(std::move(c)) {
  facts_.model_type = cfg_.model_type;
  facts_.architectures = cfg_.architectures;
  facts_.vocab_size = cfg_.vocab_size;
  facts_.max_positions = cfg_.max_position_embeddings;
  facts_.hidden_size = cfg_.hidden_size;
  facts_.layers = cfg_.num_hidden_layers;
  facts_.mtp_layers = cfg_.mtp_num_hidden_layers;
  facts_.eos_token_ids = cfg_.eos_token_ids;
  facts_.hidden_width = cfg_.hidden_size;  // the final norm's output: what the MTP layer reads
}

namespace {
struct Counts {
  int64_t total = 0, active = 0, embedding = 0, mtp = 0;
  uint64_t bytes = 0;
};
Counts count(const Config& c) {
  Counts n;
  const double share = c.moe() ? double(c.num_experts_per_tok) / double(c.num_experts) : 1.0;
  for (const auto& t : expected_tensors(c, TensorLayout{})) {
    n.bytes += uint64_t(t.numel()) * uint64_t(dtype_size(t.dtypes[0]));
    if (t.mtp) {
      n.mtp += t.numel();
      continue;
    }
    n.total += t.numel();
    n.active += t.routed_expert ? int64_t(double(t.numel()) * share + 0.5) : t.numel();
    if (t.name.ends_with("embed_tokens.weight")) n.embedding = t.numel();
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
                       {"mtp_layers", c.mtp_num_hidden_layers}, {"heads", c.num_attention_heads},
                       {"kv_heads", c.num_key_value_heads}, {"head_dim", c.head_dim}, {"rotary_dims", c.rotary_dim()},
                       {"rope_theta", c.rope_theta}, {"linear_key_heads", c.linear_num_key_heads},
                       {"linear_value_heads", c.linear_num_value_heads}, {"linear_key_head_dim", c.linear_key_head_dim},
                       {"linear_value_head_dim", c.linear_value_head_dim}, {"conv_kernel", c.linear_conv_kernel_dim},
                       {"vocab_size", c.vocab_size}, {"max_position_embeddings", c.max_position_embeddings},
                       {"tied_embeddings", c.tie_word_embeddings}};
  if (c.moe())
    j["architecture"]["experts"] = {{"routed", c.num_experts}, {"per_token", c.num_experts_per_tok},
                                    {"inner", c.moe_intermediate_size}, {"shared_inner", c.shared_expert_intermediate_size}};
  else
    j["architecture"]["intermediate_size"] = c.intermediate_size;
  j["schedule"] = {{"linear_layers", c.linear_layers()}, {"full_attention_layers", c.num_hidden_layers - c.linear_layers()},
                   {"layer_types", c.layer_types}};
  j["parameters"] = {{"total", n.total}, {"active_per_token", n.active}, {"embedding", n.embedding}, {"mtp_total", n.mtp}};
  j["bytes"] = {{"total", n.bytes}};
  return j;
}

std::string ArchConfig::describe_text() const {
  const Config& c = cfg_;
  const Counts n = count(c);
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "model_type: %s (%s)\nhidden %lld, %lld layers (%lld Gated DeltaNet + %lld gated attention) + %lld MTP; "
                "attention %lld heads / %lld KV x %lld, RoPE on %lld dims, theta %g; delta net %lld key / %lld value "
                "heads x %lld/%lld, conv %lld\n%s\nparameters: %s total, %s active per token (%s embedding%s); "
                "%s\n",
                c.model_type.c_str(), c.architectures.empty() ? "" : c.architectures[0].c_str(),
                (long long)c.hidden_size, (long long)c.num_hidden_layers, (long long)c.linear_layers(),
                (long long)(c.num_hidden_layers - c.linear_layers()), (long long)c.mtp_num_hidden_layers,
                (long long)c.num_attention_heads, (long long)c.num_key_value_heads, (long long)c.head_dim,
                (long long)c.rotary_dim(), c.rope_theta, (long long)c.linear_num_key_heads,
                (long long)c.linear_num_value_heads, (long long)c.linear_key_head_dim, (long long)c.linear_value_head_dim,
                (long long)c.linear_conv_kernel_dim,
                c.moe() ? ("MoE: " + std::to_string(c.num_experts) + " experts x " + std::to_string(c.moe_intermediate_size) +
                           ", top-" + std::to_string(c.num_experts_per_tok) + ", shared expert " +
                           std::to_string(c.shared_expert_intermediate_size))
                              .c_str()
                        : ("dense SwiGLU " + std::to_string(c.intermediate_size)).c_str(),
                human_count(double(n.total)).c_str(), human_count(double(n.active)).c_str(),
                human_count(double(n.embedding)).c_str(), c.tie_word_embeddings ? ", tied head" : "",
                human_bytes(double(n.bytes)).c_str());
  return buf;
}

models::CheckReport ArchConfig::check_checkpoint(const SafetensorsCheckpoint& ckpt) const {
  return qwen35::check_checkpoint(cfg_, ckpt);
}

models::DecodeTraffic ArchConfig::decode_traffic(int64_t context) const {
  models::DecodeTraffic t;
  const double share = cfg_.moe() ? double(cfg_.num_experts_per_tok) / double(cfg_.num_experts) : 1.0;
  for (const auto& e : expected_tensors(cfg_, TensorLayout{})) {
    if (e.mtp) continue;
    double b = double(e.numel()) * double(dtype_size(e.dtypes[0]));
    if (e.name.ends_with("embed_tokens.weight")) {
      b = double(cfg_.hidden_size) * 2;  // one row read; a tied head reads the whole matrix below
      if (cfg_.tie_word_embeddings) t.weights += double(e.numel()) * 2;
    }
    (e.routed_expert ? t.routed_experts : t.weights) += e.routed_expert ? b * share : b;
  }
  for (const auto& s : cache_layout({}).specs) t.caches += double(s.bytes_exact(context));
  return t;
}

double ArchConfig::prefill_flops_per_token() const {
  const Counts n = count(cfg_);
  // 2 per active parameter; the head counts once even when it is the embedding.
  return 2.0 * double(n.active - n.embedding + (cfg_.tie_word_embeddings ? n.embedding : 0));
}

}  // namespace strata::qwen35
