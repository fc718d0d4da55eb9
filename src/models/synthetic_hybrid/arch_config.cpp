#include "models/synthetic_hybrid/arch_config.h"

#include <cstdio>

#include "core/dtype.h"
#include "models/synthetic_hybrid/tensors.h"

namespace strata::hybrid {

ArchConfig::ArchConfig(Config c) : cfg_(std::move(c)) {
  facts_.model_type = cfg_.model_type;
  facts_.architectures = cfg_.architectures;
  facts_.vocab_size = cfg_.vocab_size;
  facts_.max_positions = cfg_.max_position_embeddings;
  facts_.hidden_size = cfg_.hidden_size;
  facts_.layers = cfg_.num_hidden_layers;
  facts_.mtp_layers = cfg_.num_nextn_predict_layers;
  if (cfg_.eos_token_id >= 0) facts_.eos_token_ids.push_back(cfg_.eos_token_id);
  facts_.hidden_width = cfg_.hidden_size;  // the final norm's output rows
}

nlohmann::ordered_json ArchConfig::describe() const {
  const Config& c = cfg_;
  int64_t total = 0, mtp = 0, embed = 0;
  uint64_t bytes = 0;
  for (const auto& t : expected_tensors(c)) {
    (t.mtp ? mtp : total) += t.numel();
    if (t.name == "model.embed_tokens.weight") embed = t.numel();
    bytes += uint64_t(t.numel()) * uint64_t(dtype_size(t.dtype));
  }
  int64_t linear = 0;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) linear += c.is_linear(l);
  nlohmann::ordered_json j;
  j["model_type"] = c.model_type;
  j["architecture"] = {{"hidden_size", c.hidden_size}, {"layers", c.num_hidden_layers},
                       {"mtp_layers", c.num_nextn_predict_layers}, {"heads", c.num_attention_heads},
                       {"kv_heads", c.num_key_value_heads}, {"head_dim", c.head_dim},
                       {"linear_key_heads", c.linear_num_key_heads}, {"linear_value_heads", c.linear_num_value_heads},
                       {"linear_key_head_dim", c.linear_key_head_dim},
                       {"linear_value_head_dim", c.linear_value_head_dim}, {"conv_kernel", c.linear_conv_kernel_dim},
                       {"intermediate_size", c.intermediate_size}, {"vocab_size", c.vocab_size},
                       {"max_position_embeddings", c.max_position_embeddings}};
  j["schedule"] = {{"linear_layers", linear}, {"full_attention_layers", c.num_hidden_layers - linear},
                   {"layer_types", c.layer_types}};
  j["parameters"] = {{"total", total}, {"active_per_token", total}, {"embedding", embed}, {"mtp_total", mtp}};
  j["bytes"] = {{"total", bytes}};
  return j;
}

std::string ArchConfig::describe_text() const {
  const Config& c = cfg_;
  const auto j = describe();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "model_type: %s (synthetic test architecture)\nhidden %lld, %lld layers (%lld Gated DeltaNet + %lld full "
                "attention) + %lld MTP; attention %lld heads / %lld KV x %lld; delta net %lld key / %lld value heads x "
                "%lld/%lld, conv %lld\nparameters: %lld total; %llu bytes\n",
                c.model_type.c_str(), (long long)c.hidden_size, (long long)c.num_hidden_layers,
                (long long)j["schedule"]["linear_layers"].get<int64_t>(),
                (long long)j["schedule"]["full_attention_layers"].get<int64_t>(), (long long)c.num_nextn_predict_layers,
                (long long)c.num_attention_heads, (long long)c.num_key_value_heads, (long long)c.head_dim,
                (long long)c.linear_num_key_heads, (long long)c.linear_num_value_heads, (long long)c.linear_key_head_dim,
                (long long)c.linear_value_head_dim, (long long)c.linear_conv_kernel_dim,
                (long long)j["parameters"]["total"].get<int64_t>(), (unsigned long long)j["bytes"]["total"].get<uint64_t>());
  return buf;
}

models::CheckReport ArchConfig::check_checkpoint(const SafetensorsCheckpoint& ckpt) const {
  return hybrid::check_checkpoint(cfg_, ckpt);
}

models::DecodeTraffic ArchConfig::decode_traffic(int64_t context) const {
  models::DecodeTraffic t;
  for (const auto& e : expected_tensors(cfg_)) {
    if (e.mtp) continue;
    double b = double(e.numel()) * double(dtype_size(e.dtype));
    if (e.name == "model.embed_tokens.weight") b = double(cfg_.hidden_size) * 2;  // one row
    t.weights += b;
  }
  for (const auto& s : cache_layout({}).specs) t.caches += double(s.bytes_exact(context));
  return t;
}

double ArchConfig::prefill_flops_per_token() const {
  double p = 0;
  for (const auto& e : expected_tensors(cfg_))
    if (!e.mtp && e.name != "model.embed_tokens.weight") p += double(e.numel());
  return 2 * p;
}

}  // namespace strata::hybrid
