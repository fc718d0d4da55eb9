// The DSA family's config.json: DeepSeek-V3.2 (`deepseek_v32`) and GLM-5 (`glm_moe_dsa`). Both
// are MLA models (q and kv low-rank latents, 512 + 64 latent cache) whose every layer attends to
// the top `index_topk` tokens a lightning indexer picks, with a dense FFN in the first
// `first_k_dense_replace` layers, a group-limited sigmoid-routed MoE after them, and one MTP
// (nextn) layer stored as model.layers.<num_hidden_layers>. GLM-5 layers may share the previous
// full layer's selection (`indexer_types`), and its indexer RoPE is interleaved where
// DeepSeek-V3.2's is not.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_spec.h"
#include "models/config_keys.h"
#include "models/model_config.h"

namespace strata::dsa {

struct Yarn {
  bool on = false;
  double factor = 1, beta_fast = 32, beta_slow = 1, mscale = 1, mscale_all_dim = 1;
  int64_t original_max_position_embeddings = 4096;
};

struct Config {
  std::string model_type;  // "deepseek_v32" or "glm_moe_dsa"
  std::vector<std::string> architectures;
  int64_t vocab_size = 0, hidden_size = 0, num_hidden_layers = 0, max_position_embeddings = 0;
  int64_t num_nextn_predict_layers = 0;
  double rms_norm_eps = 1e-6;
  // MLA
  int64_t num_attention_heads = 0, q_lora_rank = 0, kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  double rope_theta = 10000;
  Yarn yarn;
  // lightning indexer
  int64_t index_n_heads = 0, index_head_dim = 0, index_topk = 0;
  bool indexer_rope_interleave = false;  // GLM-5: true
  std::vector<std::string> indexer_types;  // per main layer: "full" or "shared"
  // FFN
  int64_t intermediate_size = 0, first_k_dense_replace = 0;
  int64_t n_routed_experts = 0, n_shared_experts = 0, num_experts_per_tok = 0, moe_intermediate_size = 0;
  int64_t n_group = 1, topk_group = 1;
  bool norm_topk_prob = true;
  double routed_scaling_factor = 1;
  // weights: FP8 e4m3 in 128x128 blocks with power-of-two scales, or bf16
  bool fp8 = false;
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;
  bool tie_word_embeddings = false;
  bool strata_random_weights = false;
  models::ConfigKeys keys;

  bool glm() const { return model_type == "glm_moe_dsa"; }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  int64_t layers_with_mtp() const { return num_hidden_layers + num_nextn_predict_layers; }
  bool is_mtp(int64_t layer) const { return layer >= num_hidden_layers; }
  bool dense(int64_t layer) const { return layer < first_k_dense_replace && !is_mtp(layer); }
  // Whether the layer runs an indexer of its own (the MTP layer always does).
  bool full_indexer(int64_t layer) const { return is_mtp(layer) || indexer_types.at(size_t(layer)) == "full"; }
  int64_t full_indexer_layers() const;
  // The attention's softmax scale: qk_head_dim^-1/2, times mscale^2 under YaRN.
  double softmax_scale() const;
  // Cache entries: the FP8 latent (kv_lora e4m3 + an fp32 scale per 128) + the bf16 RoPE key,
  // and the FP8 index key (index_head_dim e4m3 + an fp32 scale per 128).
  int64_t latent_entry_bytes() const { return kv_lora_rank + kv_lora_rank / 128 * 4 + qk_rope_head_dim * 2; }
  int64_t index_entry_bytes() const { return index_head_dim + index_head_dim / 128 * 4; }
};

// Throws Error naming the key for a missing, mistyped, misspelt or contradictory value (index_topk
// missing, indexer shapes that do not fit the kernels, an unsupported quantization or RoPE type,
// indexer_types against num_hidden_layers ...). Other unknown keys: one warning line on stderr.
Config parse_config(const nlohmann::json& j, const std::string& where);
// The config as the published checkpoint writes it.
nlohmann::ordered_json to_json(const Config& c);

// Per layer an mla_latent spec and, for layers with an indexer of their own, an indexer_keys
// spec; the MTP layer's with o.include_mtp. Blocks of 64 tokens (FlashMLA's page).
cache::CacheLayout cache_layout(const Config& c, const models::CacheOptions& o);

}  // namespace strata::dsa
