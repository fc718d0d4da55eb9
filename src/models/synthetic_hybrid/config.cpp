#include "models/synthetic_hybrid/config.h"

#include <set>

#include "core/error.h"

namespace strata::hybrid {
using nlohmann::json;

namespace {

template <class T>
void take(const json& j, const char* key, T& out, const std::string& where, bool required) {
  if (!j.contains(key)) {
    if (required) throw Error(where + ": missing key '" + key + "'");
    return;
  }
  try {
    out = j.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(where + ": key '" + key + "' has the wrong type");
  }
}

}  // namespace

Config parse_config(const json& j, const std::string& w) {
  if (!j.is_object()) throw Error(w + ": not a JSON object");
  static const std::set<std::string> known = {
      "architectures", "model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
      "layer_types", "num_attention_heads", "num_key_value_heads", "head_dim", "linear_num_key_heads",
      "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
      "rms_norm_eps", "rope_theta", "max_position_embeddings", "bos_token_id", "eos_token_id",
      "num_nextn_predict_layers", "strata_random_weights", "torch_dtype", "tie_word_embeddings"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) throw Error(w + ": unknown key '" + it.key() + "'");
  Config c;
  take(j, "architectures", c.architectures, w, false);
  take(j, "model_type", c.model_type, w, true);
  if (c.model_type != "strata_hybrid") throw Error(w + ": model_type '" + c.model_type + "' is not strata_hybrid");
  take(j, "vocab_size", c.vocab_size, w, true);
  take(j, "hidden_size", c.hidden_size, w, true);
  take(j, "intermediate_size", c.intermediate_size, w, true);
  take(j, "num_hidden_layers", c.num_hidden_layers, w, true);
  take(j, "layer_types", c.layer_types, w, true);
  take(j, "num_attention_heads", c.num_attention_heads, w, true);
  take(j, "num_key_value_heads", c.num_key_value_heads, w, true);
  take(j, "head_dim", c.head_dim, w, true);
  take(j, "linear_num_key_heads", c.linear_num_key_heads, w, true);
  take(j, "linear_num_value_heads", c.linear_num_value_heads, w, true);
  take(j, "linear_key_head_dim", c.linear_key_head_dim, w, true);
  take(j, "linear_value_head_dim", c.linear_value_head_dim, w, true);
  take(j, "linear_conv_kernel_dim", c.linear_conv_kernel_dim, w, false);
  take(j, "rms_norm_eps", c.rms_norm_eps, w, false);
  take(j, "rope_theta", c.rope_theta, w, false);
  take(j, "max_position_embeddings", c.max_position_embeddings, w, true);
  take(j, "bos_token_id", c.bos_token_id, w, false);
  take(j, "eos_token_id", c.eos_token_id, w, false);
  take(j, "num_nextn_predict_layers", c.num_nextn_predict_layers, w, false);
  take(j, "strata_random_weights", c.strata_random_weights, w, false);
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"] != false)
    throw Error(w + ": tie_word_embeddings must be false (the model has its own lm_head)");

  auto pos = [&](int64_t v, const char* k) {
    if (v <= 0) throw Error(w + ": " + k + " must be positive");
  };
  pos(c.vocab_size, "vocab_size");
  pos(c.hidden_size, "hidden_size");
  pos(c.intermediate_size, "intermediate_size");
  pos(c.num_hidden_layers, "num_hidden_layers");
  pos(c.num_attention_heads, "num_attention_heads");
  pos(c.num_key_value_heads, "num_key_value_heads");
  pos(c.head_dim, "head_dim");
  pos(c.linear_num_key_heads, "linear_num_key_heads");
  pos(c.linear_num_value_heads, "linear_num_value_heads");
  pos(c.linear_key_head_dim, "linear_key_head_dim");
  pos(c.linear_value_head_dim, "linear_value_head_dim");
  pos(c.linear_conv_kernel_dim, "linear_conv_kernel_dim");
  pos(c.max_position_embeddings, "max_position_embeddings");
  if (int64_t(c.layer_types.size()) != c.num_hidden_layers)
    throw Error(w + ": layer_types has " + std::to_string(c.layer_types.size()) + " entries but num_hidden_layers is " +
                std::to_string(c.num_hidden_layers));
  for (const auto& t : c.layer_types)
    if (t != "linear_attention" && t != "full_attention")
      throw Error(w + ": layer_types entry '" + t + "' is neither linear_attention nor full_attention");
  if (c.num_attention_heads % c.num_key_value_heads)
    throw Error(w + ": num_attention_heads must be a multiple of num_key_value_heads");
  if (c.linear_num_value_heads % c.linear_num_key_heads)
    throw Error(w + ": linear_num_value_heads must be a multiple of linear_num_key_heads");
  if (c.head_dim % 2) throw Error(w + ": head_dim must be even (RoPE pairs)");
  if (c.num_nextn_predict_layers < 0 || c.num_nextn_predict_layers > 1)
    throw Error(w + ": num_nextn_predict_layers must be 0 or 1");
  if (c.eos_token_id >= c.vocab_size || c.bos_token_id >= c.vocab_size)
    throw Error(w + ": a special token id is outside the vocabulary");
  return c;
}

nlohmann::ordered_json to_json(const Config& c) {
  nlohmann::ordered_json j;
  j["architectures"] = c.architectures;
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["layer_types"] = c.layer_types;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["linear_num_key_heads"] = c.linear_num_key_heads;
  j["linear_num_value_heads"] = c.linear_num_value_heads;
  j["linear_key_head_dim"] = c.linear_key_head_dim;
  j["linear_value_head_dim"] = c.linear_value_head_dim;
  j["linear_conv_kernel_dim"] = c.linear_conv_kernel_dim;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["max_position_embeddings"] = c.max_position_embeddings;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_id >= 0) j["eos_token_id"] = c.eos_token_id;
  j["num_nextn_predict_layers"] = c.num_nextn_predict_layers;
  j["tie_word_embeddings"] = false;
  j["torch_dtype"] = "bfloat16";
  if (c.strata_random_weights) j["strata_random_weights"] = true;
  return j;
}

cache::CacheLayout cache_layout(const Config& c, const models::CacheOptions& o) {
  cache::CacheLayout L;
  L.block_tokens = kBlockTokens;
  const std::string kv_fmt = "K + V, " + std::to_string(c.num_key_value_heads) + " x " + std::to_string(c.head_dim) + " bf16";
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (c.is_linear(l)) {
      cache::CacheSpec s{cache::CacheKind::linear_state, l, c.state_floats() * 4 + c.conv_tail_values() * 2, 1, 1,
                         "fp32 state " + std::to_string(c.linear_num_value_heads) + " x " +
                             std::to_string(c.linear_key_head_dim) + " x " + std::to_string(c.linear_value_head_dim) +
                             " + bf16 conv tail " + std::to_string(c.linear_conv_kernel_dim - 1) + " x " +
                             std::to_string(c.conv_dim())};
      s.draft_copies = o.draft_tokens;
      L.specs.push_back(s);
    } else {
      L.specs.push_back({cache::CacheKind::full_attention, l, c.kv_entry_bytes(), 0, 1, kv_fmt});
    }
  }
  if (o.include_mtp && c.num_nextn_predict_layers > 0)
    L.specs.push_back({cache::CacheKind::full_attention, c.num_hidden_layers, c.kv_entry_bytes(), 0, 1, kv_fmt});
  return L;
}

}  // namespace strata::hybrid
