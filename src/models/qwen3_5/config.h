// Qwen3.5 (dense `qwen3_5`, MoE `qwen3_5_moe`): the text model's config, as published — the VLM
// wrapper with a `text_config` (`qwen3_5_text`, `qwen3_5_moe_text`), or a bare text config.
// Layers are Gated DeltaNet (`linear_attention`) or gated full attention (`full_attention`),
// 3:1 in the published models, each followed by a dense SwiGLU or an MoE; one MTP layer drafts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_spec.h"
#include "models/config_keys.h"
#include "models/model_config.h"

namespace strata::qwen35 {

struct Config {
  // the checkpoint's top level
  std::vector<std::string> architectures;
  std::string wrapper_type;  // "qwen3_5" / "qwen3_5_moe", or "" for a bare text config
  bool has_vision = false;   // a vision_config: the tower's tensors are skipped
  // text_config
  std::string model_type;    // "qwen3_5_text" / "qwen3_5_moe_text"
  int64_t vocab_size = 0, hidden_size = 0, num_hidden_layers = 0, max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  std::vector<std::string> layer_types;
  int64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  double rope_theta = 10000.0, partial_rotary_factor = 0.25;
  int64_t linear_num_key_heads = 0, linear_num_value_heads = 0, linear_key_head_dim = 0, linear_value_head_dim = 0;
  int64_t linear_conv_kernel_dim = 4;
  int64_t intermediate_size = 0;  // dense
  int64_t num_experts = 0, num_experts_per_tok = 0, moe_intermediate_size = 0, shared_expert_intermediate_size = 0;
  bool tie_word_embeddings = false;
  int64_t mtp_num_hidden_layers = 0;
  std::vector<int64_t> eos_token_ids;
  bool strata_random_weights = false;
  // How the file was read: optional keys and their sources for `strata inspect`, unknown keys.
  models::ConfigKeys keys;

  bool moe() const { return num_experts > 0; }
  bool is_linear(int64_t layer) const { return layer_types.at(size_t(layer)) == "linear_attention"; }
  int64_t rotary_dim() const { return int64_t(double(head_dim) * partial_rotary_factor); }
  int64_t conv_dim() const { return 2 * linear_num_key_heads * linear_key_head_dim + linear_num_value_heads * linear_value_head_dim; }
  int64_t state_floats() const { return linear_num_value_heads * linear_key_head_dim * linear_value_head_dim; }
  int64_t conv_tail_values() const { return (linear_conv_kernel_dim - 1) * conv_dim(); }
  int64_t kv_entry_bytes() const { return 2 * num_key_value_heads * head_dim * 2; }  // K then V, bf16
  int64_t linear_layers() const;
};

// Throws Error naming the key for a missing, mistyped, misspelt or contradictory value
// (layer_types against num_hidden_layers, head counts that do not divide, an unsupported RoPE
// type ...). Other unknown keys: one warning line on stderr (models/config_keys.h).
Config parse_config(const nlohmann::json& j, const std::string& where);
// The config as the published checkpoint writes it (the VLM wrapper around text_config).
nlohmann::ordered_json to_json(const Config& c);

// Per layer: a linear_state spec (fp32 state [Hv][Dk][Dv] + bf16 conv tail [K-1][conv_dim],
// with o.draft_tokens draft copies) or a full_attention spec (bf16 K and V per token); the MTP
// layers' full_attention specs with o.include_mtp. Blocks of 128 tokens.
cache::CacheLayout cache_layout(const Config& c, const models::CacheOptions& o);

}  // namespace strata::qwen35
