// Gemma 4 (`gemma4`, `gemma4_unified` with a `text_config`; bare `gemma4_text`,
// `gemma4_unified_text`): the text model's config as published. Layers are sliding-window
// (`sliding_attention`, window `sliding_window`) or full attention, 5:1 in the large models;
// full layers have their own head size (`global_head_dim`), proportional RoPE, and in the
// 12B/26B/31B one projection for K and V (`attention_k_eq_v`). The E-series adds per-layer
// input embeddings (PLE) and last layers that reuse an earlier layer's K/V; the 26B adds a
// routed MoE beside each layer's dense MLP.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_spec.h"
#include "models/config_keys.h"
#include "models/model_config.h"

namespace strata::gemma4 {

struct Config {
  // the checkpoint's top level
  std::vector<std::string> architectures;
  std::string wrapper_type;  // "gemma4" / "gemma4_unified", or "" for a bare text config
  bool has_vision = false, has_audio = false;
  // text_config
  std::string model_type;  // "gemma4_text" / "gemma4_unified_text"
  int64_t vocab_size = 0, hidden_size = 0, num_hidden_layers = 0, max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  std::vector<std::string> layer_types;
  int64_t sliding_window = 0;
  int64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  int64_t global_head_dim = 0;             // full layers' head size (0: head_dim)
  int64_t num_global_key_value_heads = 0;  // full K=V layers' KV heads (0: num_key_value_heads)
  bool attention_k_eq_v = false;
  double sliding_rope_theta = 1e4;
  std::string full_rope_type = "proportional";  // or "default"
  double full_rope_theta = 1e6, full_partial_rotary_factor = 1.0;
  int64_t intermediate_size = 0;
  bool use_double_wide_mlp = false;
  double final_logit_softcapping = 0;  // 0: none
  int64_t hidden_size_per_layer_input = 0, vocab_size_per_layer_input = 0;  // PLE (0: none)
  int64_t num_kv_shared_layers = 0;
  bool enable_moe_block = false;
  int64_t num_experts = 0, top_k_experts = 0, moe_intermediate_size = 0;
  bool tie_word_embeddings = true;
  std::vector<int64_t> eos_token_ids;
  bool strata_random_weights = false;
  models::ConfigKeys keys;

  bool sliding(int64_t l) const { return layer_types.at(size_t(l)) == "sliding_attention"; }
  // Full layers where K and V are one projection (no v_proj).
  bool k_eq_v(int64_t l) const { return attention_k_eq_v && !sliding(l); }
  int64_t layer_head_dim(int64_t l) const { return !sliding(l) && global_head_dim > 0 ? global_head_dim : head_dim; }
  int64_t layer_kv_heads(int64_t l) const {
    return k_eq_v(l) && num_global_key_value_heads > 0 ? num_global_key_value_heads : num_key_value_heads;
  }
  int64_t first_kv_shared() const { return num_hidden_layers - num_kv_shared_layers; }
  bool kv_shared(int64_t l) const { return num_kv_shared_layers > 0 && l >= first_kv_shared(); }
  // The layer whose K/V a shared layer reads: the last one before the shared block of its type.
  int64_t kv_source(int64_t l) const;
  int64_t layer_intermediate(int64_t l) const { return intermediate_size * (use_double_wide_mlp && kv_shared(l) ? 2 : 1); }
  bool ple() const { return hidden_size_per_layer_input > 0; }
  // Cache entry per token: K then V (bf16, after norm and RoPE), or for K=V layers the shared
  // projection's output alone (bf16), from which K and V are rebuilt.
  int64_t kv_entry_bytes(int64_t l) const { return (k_eq_v(l) ? 1 : 2) * layer_kv_heads(l) * layer_head_dim(l) * 2; }
  int64_t sliding_layers() const;
};

// Throws Error naming the key (or the layer) for a missing, mistyped, misspelt or
// contradictory value: layer_types against num_hidden_layers, a window that is not positive,
// shared layers without a source of their type, head counts that do not divide, an
// unsupported RoPE type. Other unknown keys: one warning line (models/config_keys.h).
Config parse_config(const nlohmann::json& j, const std::string& where);
// The config as the published checkpoint writes it (the multimodal wrapper around text_config).
nlohmann::ordered_json to_json(const Config& c);

// Per layer with its own K/V: a sliding_window ring of `sliding_window` entries (K + V) or a
// full_attention spec (K + V, or the K=V projection alone), blocks of 128 tokens. KV-shared
// layers keep nothing.
cache::CacheLayout cache_layout(const Config& c, const models::CacheOptions& o);

}  // namespace strata::gemma4
