// DeepSeek-V4 configuration: every key of the official Hugging Face config.json, typed and
// validated, plus the per-layer facts derived from it (layer kind, RoPE table, hash routing).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/config_keys.h"

namespace strata::dsv4 {

struct RopeScaling {
  std::string type = "yarn";
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
};

struct QuantizationConfig {
  std::string activation_scheme = "dynamic";
  std::string fmt = "e4m3";
  std::string quant_method = "fp8";
  std::string scale_fmt = "ue8m0";
  int64_t weight_block_rows = 128;
  int64_t weight_block_cols = 128;
};

// What a layer attends to: the window only, or the window plus compressed entries.
enum class LayerKind { window, csa, hca };  // ratio 0, 4, 128

struct Config {
  // --- keys of config.json, names as in the file ---
  std::vector<std::string> architectures;
  std::string model_type = "deepseek_v4";
  bool attention_bias = false;
  double attention_dropout = 0.0;
  int64_t bos_token_id = 0;
  int64_t eos_token_id = 1;
  double hc_eps = 1e-6;
  int64_t hc_mult = 4;
  int64_t hc_sinkhorn_iters = 20;
  int64_t head_dim = 512;
  std::string hidden_act = "silu";
  int64_t hidden_size = 0;
  int64_t index_head_dim = 128;
  int64_t index_n_heads = 64;
  int64_t index_topk = 512;
  double initializer_range = 0.02;
  int64_t max_position_embeddings = 0;
  int64_t moe_intermediate_size = 0;
  int64_t n_routed_experts = 0;
  int64_t n_shared_experts = 1;
  bool norm_topk_prob = true;
  int64_t num_attention_heads = 0;
  int64_t num_experts_per_tok = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_hash_layers = 0;
  int64_t num_key_value_heads = 1;
  int64_t num_nextn_predict_layers = 0;
  int64_t o_groups = 0;
  int64_t o_lora_rank = 0;
  int64_t q_lora_rank = 0;
  int64_t qk_rope_head_dim = 64;
  QuantizationConfig quantization_config;
  double rms_norm_eps = 1e-6;
  RopeScaling rope_scaling;
  double rope_theta = 10000.0;
  double routed_scaling_factor = 1.0;
  std::string scoring_func = "sqrtsoftplus";
  int64_t sliding_window = 128;
  double swiglu_limit = 0.0;
  bool tie_word_embeddings = false;
  std::string topk_method = "noaux_tc";
  std::string torch_dtype = "bfloat16";
  std::string transformers_version;
  bool use_cache = true;
  int64_t vocab_size = 0;
  double compress_rope_theta = 0.0;
  std::vector<int64_t> compress_ratios;  // one per main layer, then one per MTP layer
  // Routed-expert storage: "fp4" (MXFP4) or "fp8". Pro's config names it; Flash's omits it and
  // the released checkpoints store FP4, so fp4 is the default.
  std::string expert_dtype = "fp4";
  // How the file was read (empty for a config built in code): optional keys and their
  // sources for `strata inspect`, unknown keys.
  models::ConfigKeys keys;

  // --- derived ---
  int64_t n_layers_total() const { return num_hidden_layers + num_nextn_predict_layers; }
  int64_t compress_ratio(int64_t layer) const { return compress_ratios.at(size_t(layer)); }
  LayerKind layer_kind(int64_t layer) const;
  bool is_hash_layer(int64_t layer) const { return layer < num_hash_layers; }
  // Compressed layers use compress_rope_theta with YaRN; window-only layers plain rope_theta.
  bool uses_yarn(int64_t layer) const { return compress_ratio(layer) > 0 && rope_scaling.factor > 1.0; }
  double layer_rope_theta(int64_t layer) const { return compress_ratio(layer) > 0 ? compress_rope_theta : rope_theta; }
  int64_t mix_hc() const { return (2 + hc_mult) * hc_mult; }
  bool experts_fp4() const { return expert_dtype == "fp4"; }
};

// Builds a Config from a parsed config.json; `where` names the source in errors. Throws
// Error for a wrong model_type, missing or mistyped keys, a misspelt setting, and
// contradictions (list length, ratios outside {0, 4, 128}, block sizes that do not divide the
// dims, ...). Other unknown keys: one warning line on stderr (models/config_keys.h).
Config parse_config(const nlohmann::json& j, const std::string& where);
// Reads DIR/config.json, or the file itself when given a path to a .json file.
Config load_config(const std::string& dir_or_file);
// The config as config.json keys (what make-model writes).
nlohmann::ordered_json to_json(const Config& c);

const char* layer_kind_name(LayerKind k);

}  // namespace strata::dsv4
