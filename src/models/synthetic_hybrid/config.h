// strata_hybrid: a synthetic test architecture, not a published model. It exists to prove the
// engine's machinery for hybrid models (recurrent layers beside full-attention layers) before
// a real one lands: Gated DeltaNet layers (a fixed-size fp32 state and a conv tail, rolled
// back through draft slots) and GQA full-attention layers (a KV cache that grows per token),
// a dense SwiGLU MLP after each, and one MTP block (a full-attention layer over
// [norm(embedding), norm(hidden)], as Qwen3.5's) for speculative decoding. Its config keys and
// tensor names follow Qwen3.5's text model where the two share a mechanism.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_spec.h"
#include "models/model_config.h"

namespace strata::hybrid {

struct Config {
  std::vector<std::string> architectures{"StrataHybridForCausalLM"};
  std::string model_type = "strata_hybrid";
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0;
  std::vector<std::string> layer_types;  // per layer: "linear_attention" or "full_attention"
  int64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  int64_t linear_num_key_heads = 0, linear_num_value_heads = 0, linear_key_head_dim = 0, linear_value_head_dim = 0;
  int64_t linear_conv_kernel_dim = 4;
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  int64_t max_position_embeddings = 0;
  int64_t bos_token_id = -1, eos_token_id = -1;
  int64_t num_nextn_predict_layers = 0;  // 0 or 1 MTP block
  bool strata_random_weights = false;    // written by make-model

  bool is_linear(int64_t layer) const { return layer_types.at(size_t(layer)) == "linear_attention"; }
  int64_t conv_dim() const { return 2 * linear_num_key_heads * linear_key_head_dim + linear_num_value_heads * linear_value_head_dim; }
  int64_t state_floats() const { return linear_num_value_heads * linear_key_head_dim * linear_value_head_dim; }
  int64_t conv_tail_values() const { return (linear_conv_kernel_dim - 1) * conv_dim(); }
  int64_t kv_entry_bytes() const { return 2 * num_key_value_heads * head_dim * 2; }  // K then V, bf16
};

// Tokens a pool block covers: small, so that tests cross many block boundaries.
inline constexpr int64_t kBlockTokens = 32;

// Strict: a missing, mistyped or unknown key (a misspelling) is an Error naming it.
Config parse_config(const nlohmann::json& j, const std::string& where);
nlohmann::ordered_json to_json(const Config& c);

// Per layer: a linear_state spec (the recurrent state and its conv tail, plus o.draft_tokens
// draft copies) or a full_attention spec (one K/V entry per token); the MTP block's
// full_attention spec with o.include_mtp.
cache::CacheLayout cache_layout(const Config& c, const models::CacheOptions& o);

}  // namespace strata::hybrid
