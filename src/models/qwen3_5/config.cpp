#include "models/qwen3_5/config.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"

namespace strata::qwen35 {
using nlohmann::json;

namespace {

template <class T>
bool take(const json& j, const char* key, T& out, const std::string& where, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) throw Error(where + ": missing key '" + key + "'");
    return false;
  }
  try {
    out = j.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(where + ": key '" + key + "' has the wrong type");
  }
  return true;
}

void require(bool ok, const std::string& where, const std::string& what) {
  if (!ok) throw Error(where + ": " + what);
}

// Keys a Qwen3.5 text config may hold: what the parser reads and what published configs and
// transformers' config class carry besides.
const std::vector<std::string>& known_text_keys() {
  static const std::vector<std::string> k = {
      "architectures", "attention_bias", "attention_dropout", "attn_output_gate", "bos_token_id",
      "decoder_sparse_step", "dtype", "eos_token_id", "full_attention_interval", "head_dim", "hidden_act",
      "hidden_size", "initializer_range", "intermediate_size", "layer_types", "linear_conv_kernel_dim",
      "linear_key_head_dim", "linear_num_key_heads", "linear_num_value_heads", "linear_value_head_dim",
      "mamba_ssm_dtype", "max_position_embeddings", "mlp_only_layers", "model_type", "moe_intermediate_size",
      "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings", "norm_topk_prob", "num_attention_heads",
      "num_experts", "num_experts_per_tok", "num_hidden_layers", "num_key_value_heads", "output_router_logits",
      "pad_token_id", "partial_rotary_factor", "rms_norm_eps", "rope_parameters", "rope_scaling", "rope_theta",
      "rope_type", "router_aux_loss_coef", "shared_expert_intermediate_size", "strata_random_weights",
      "tie_word_embeddings", "torch_dtype", "transformers_version", "use_cache", "vocab_size"};
  return k;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return d[b.size()];
}

// A key one or two edits from a known one is a misspelling that would silently fall back to a
// default: an error. Other unknown keys are left alone (configs carry many a tool's extras).
void check_spelling(const json& t, const std::string& where) {
  for (const auto& [key, value] : t.items()) {
    const auto& known = known_text_keys();
    if (key.size() < 5 || std::find(known.begin(), known.end(), key) != known.end()) continue;
    for (const auto& k : known)
      if (edit_distance(key, k) <= 2)
        throw Error(where + ": unknown key '" + key + "' (did you mean '" + k + "'?)");
  }
}

}  // namespace

int64_t Config::linear_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < num_hidden_layers; ++l) n += is_linear(l);
  return n;
}

Config parse_config(const json& j, const std::string& where) {
  require(j.is_object(), where, "not a JSON object");
  Config c;
  std::string top;
  take(j, "model_type", top, where, false);
  take(j, "architectures", c.architectures, where, false);
  const json* t = &j;
  std::string w = where;
  if (top == "qwen3_5" || top == "qwen3_5_moe") {
    require(j.contains("text_config") && j["text_config"].is_object(), where, "model_type " + top + " needs a text_config");
    c.wrapper_type = top;
    t = &j["text_config"];
    w = where + " text_config";
    c.has_vision = j.contains("vision_config") && j["vision_config"].is_object();
  }
  take(*t, "model_type", c.model_type, w, true);
  check_spelling(*t, w);
  require(c.model_type == "qwen3_5_text" || c.model_type == "qwen3_5_moe_text", w,
          "model_type '" + c.model_type + "' is not qwen3_5_text or qwen3_5_moe_text");
  require(c.wrapper_type.empty() || (c.wrapper_type == "qwen3_5") == (c.model_type == "qwen3_5_text"), w,
          "text_config model_type " + c.model_type + " does not go with " + c.wrapper_type);
  std::string act = "silu";
  take(*t, "hidden_act", act, w, false);
  require(act == "silu", w, "hidden_act '" + act + "' (only silu)");
  bool gate = true;
  take(*t, "attn_output_gate", gate, w, false);
  require(gate, w, "attn_output_gate false (Qwen3.5's attention always splits q_proj into q | gate)");
  bool bias = false;
  take(*t, "attention_bias", bias, w, false);
  require(!bias, w, "attention_bias true is not Qwen3.5's");
  bool dedicated = false;
  take(*t, "mtp_use_dedicated_embeddings", dedicated, w, false);
  require(!dedicated, w, "mtp_use_dedicated_embeddings true is not supported");
  std::string ssm = "float32";
  take(*t, "mamba_ssm_dtype", ssm, w, false);
  require(ssm == "float32", w, "mamba_ssm_dtype '" + ssm + "' (the recurrent state is fp32)");
  std::vector<int64_t> mlp_only;
  take(*t, "mlp_only_layers", mlp_only, w, false);
  require(mlp_only.empty(), w, "mlp_only_layers is not supported");

  take(*t, "vocab_size", c.vocab_size, w, true);
  take(*t, "hidden_size", c.hidden_size, w, true);
  take(*t, "num_hidden_layers", c.num_hidden_layers, w, true);
  take(*t, "max_position_embeddings", c.max_position_embeddings, w, true);
  take(*t, "rms_norm_eps", c.rms_norm_eps, w, false);
  take(*t, "num_attention_heads", c.num_attention_heads, w, true);
  take(*t, "num_key_value_heads", c.num_key_value_heads, w, true);
  if (!take(*t, "head_dim", c.head_dim, w, false) && c.num_attention_heads > 0)
    c.head_dim = c.hidden_size / c.num_attention_heads;
  take(*t, "linear_num_key_heads", c.linear_num_key_heads, w, true);
  take(*t, "linear_num_value_heads", c.linear_num_value_heads, w, true);
  take(*t, "linear_key_head_dim", c.linear_key_head_dim, w, true);
  take(*t, "linear_value_head_dim", c.linear_value_head_dim, w, true);
  take(*t, "linear_conv_kernel_dim", c.linear_conv_kernel_dim, w, false);
  take(*t, "mtp_num_hidden_layers", c.mtp_num_hidden_layers, w, false);
  // RoPE: rope_parameters (the current layout), or the legacy top-level keys.
  take(*t, "rope_theta", c.rope_theta, w, false);
  take(*t, "partial_rotary_factor", c.partial_rotary_factor, w, false);
  if (t->contains("rope_parameters") && !(*t)["rope_parameters"].is_null()) {
    const json& rp = (*t)["rope_parameters"];
    require(rp.is_object(), w, "rope_parameters must be an object");
    std::string type = "default";
    take(rp, "rope_type", type, w + " rope_parameters", false);
    require(type == "default", w, "rope_parameters.rope_type '" + type + "' (text positions use default RoPE)");
    take(rp, "rope_theta", c.rope_theta, w + " rope_parameters", false);
    take(rp, "partial_rotary_factor", c.partial_rotary_factor, w + " rope_parameters", false);
  }
  if (!take(*t, "layer_types", c.layer_types, w, false)) {
    int64_t every = 4;
    take(*t, "full_attention_interval", every, w, false);
    require(every > 0, w, "full_attention_interval must be positive");
    for (int64_t l = 0; l < c.num_hidden_layers; ++l)
      c.layer_types.push_back((l + 1) % every ? "linear_attention" : "full_attention");
  }
  if (c.model_type == "qwen3_5_moe_text") {
    take(*t, "num_experts", c.num_experts, w, true);
    take(*t, "num_experts_per_tok", c.num_experts_per_tok, w, true);
    take(*t, "moe_intermediate_size", c.moe_intermediate_size, w, true);
    take(*t, "shared_expert_intermediate_size", c.shared_expert_intermediate_size, w, true);
  } else {
    take(*t, "intermediate_size", c.intermediate_size, w, true);
  }
  // tie_word_embeddings: the wrapper's, else the text config's.
  if (!take(j, "tie_word_embeddings", c.tie_word_embeddings, where, false))
    take(*t, "tie_word_embeddings", c.tie_word_embeddings, w, false);
  if (t->contains("eos_token_id") && !(*t)["eos_token_id"].is_null()) {
    const json& e = (*t)["eos_token_id"];
    if (e.is_array()) take(*t, "eos_token_id", c.eos_token_ids, w, false);
    else c.eos_token_ids.push_back(e.get<int64_t>());
  }
  take(j, "strata_random_weights", c.strata_random_weights, where, false);

  auto pos = [&](int64_t v, const char* k) { require(v > 0, w, std::string(k) + " must be positive"); };
  pos(c.vocab_size, "vocab_size");
  pos(c.hidden_size, "hidden_size");
  pos(c.num_hidden_layers, "num_hidden_layers");
  pos(c.max_position_embeddings, "max_position_embeddings");
  pos(c.num_attention_heads, "num_attention_heads");
  pos(c.num_key_value_heads, "num_key_value_heads");
  pos(c.head_dim, "head_dim");
  pos(c.linear_num_key_heads, "linear_num_key_heads");
  pos(c.linear_num_value_heads, "linear_num_value_heads");
  pos(c.linear_key_head_dim, "linear_key_head_dim");
  pos(c.linear_value_head_dim, "linear_value_head_dim");
  pos(c.linear_conv_kernel_dim, "linear_conv_kernel_dim");
  if (c.moe()) {
    pos(c.num_experts_per_tok, "num_experts_per_tok");
    pos(c.moe_intermediate_size, "moe_intermediate_size");
    pos(c.shared_expert_intermediate_size, "shared_expert_intermediate_size");
    require(c.num_experts_per_tok <= c.num_experts, w, "num_experts_per_tok exceeds num_experts");
  } else {
    pos(c.intermediate_size, "intermediate_size");
  }
  require(int64_t(c.layer_types.size()) == c.num_hidden_layers, w,
          "layer_types has " + std::to_string(c.layer_types.size()) + " entries but num_hidden_layers is " +
              std::to_string(c.num_hidden_layers));
  for (const auto& lt : c.layer_types)
    require(lt == "linear_attention" || lt == "full_attention", w,
            "layer_types entry '" + lt + "' is neither linear_attention nor full_attention");
  require(c.num_attention_heads % c.num_key_value_heads == 0, w,
          "num_attention_heads must be a multiple of num_key_value_heads");
  require(c.linear_num_value_heads % c.linear_num_key_heads == 0, w,
          "linear_num_value_heads must be a multiple of linear_num_key_heads");
  require(c.partial_rotary_factor > 0 && c.partial_rotary_factor <= 1, w, "partial_rotary_factor must be in (0, 1]");
  require(c.head_dim % 16 == 0, w, "head_dim must be a multiple of 16 (the attention kernels' lane count)");
  require(c.rotary_dim() % 2 == 0 && c.rotary_dim() > 0, w, "the rotary dims (head_dim x partial_rotary_factor) must be even");
  require(c.mtp_num_hidden_layers >= 0 && c.mtp_num_hidden_layers <= 1, w, "mtp_num_hidden_layers must be 0 or 1");
  for (int64_t e : c.eos_token_ids) require(e >= 0 && e < c.vocab_size, w, "eos_token_id outside the vocabulary");
  return c;
}

nlohmann::ordered_json to_json(const Config& c) {
  nlohmann::ordered_json t;
  t["model_type"] = c.model_type;
  t["vocab_size"] = c.vocab_size;
  t["hidden_size"] = c.hidden_size;
  t["num_hidden_layers"] = c.num_hidden_layers;
  t["layer_types"] = c.layer_types;
  t["max_position_embeddings"] = c.max_position_embeddings;
  t["rms_norm_eps"] = c.rms_norm_eps;
  t["hidden_act"] = "silu";
  t["attn_output_gate"] = true;
  t["attention_bias"] = false;
  t["num_attention_heads"] = c.num_attention_heads;
  t["num_key_value_heads"] = c.num_key_value_heads;
  t["head_dim"] = c.head_dim;
  t["rope_parameters"] = {{"mrope_interleaved", true},
                          {"mrope_section", {(c.rotary_dim() / 2 + 2) / 3, (c.rotary_dim() / 2 + 1) / 3, c.rotary_dim() / 2 / 3}},
                          {"rope_type", "default"},
                          {"rope_theta", c.rope_theta},
                          {"partial_rotary_factor", c.partial_rotary_factor}};
  t["linear_num_key_heads"] = c.linear_num_key_heads;
  t["linear_num_value_heads"] = c.linear_num_value_heads;
  t["linear_key_head_dim"] = c.linear_key_head_dim;
  t["linear_value_head_dim"] = c.linear_value_head_dim;
  t["linear_conv_kernel_dim"] = c.linear_conv_kernel_dim;
  if (c.moe()) {
    t["num_experts"] = c.num_experts;
    t["num_experts_per_tok"] = c.num_experts_per_tok;
    t["moe_intermediate_size"] = c.moe_intermediate_size;
    t["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
  } else {
    t["intermediate_size"] = c.intermediate_size;
  }
  t["mtp_num_hidden_layers"] = c.mtp_num_hidden_layers;
  t["mtp_use_dedicated_embeddings"] = false;
  t["mamba_ssm_dtype"] = "float32";
  if (c.eos_token_ids.size() == 1) t["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty()) t["eos_token_id"] = c.eos_token_ids;
  t["tie_word_embeddings"] = c.tie_word_embeddings;
  t["dtype"] = "bfloat16";
  nlohmann::ordered_json j;
  const bool moe = c.moe();
  j["architectures"] = c.architectures.empty()
                           ? nlohmann::ordered_json::array({moe ? "Qwen3_5MoeForConditionalGeneration"
                                                                : "Qwen3_5ForConditionalGeneration"})
                           : nlohmann::ordered_json(c.architectures);
  j["model_type"] = moe ? "qwen3_5_moe" : "qwen3_5";
  j["text_config"] = t;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (c.strata_random_weights) j["strata_random_weights"] = true;
  return j;
}

cache::CacheLayout cache_layout(const Config& c, const models::CacheOptions& o) {
  cache::CacheLayout L;
  L.block_tokens = 128;
  const std::string kv_fmt =
      "K + V, " + std::to_string(c.num_key_value_heads) + " x " + std::to_string(c.head_dim) + " bf16";
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (c.is_linear(l)) {
      cache::CacheSpec s{cache::CacheKind::linear_state, l, c.state_floats() * 4 + c.conv_tail_values() * 2, 1, 1,
                         "fp32 " + std::to_string(c.linear_num_value_heads) + "x" +
                             std::to_string(c.linear_key_head_dim) + "x" + std::to_string(c.linear_value_head_dim) +
                             " + bf16 conv " + std::to_string(c.linear_conv_kernel_dim - 1) + "x" +
                             std::to_string(c.conv_dim())};
      s.draft_copies = o.draft_tokens;
      L.specs.push_back(s);
    } else {
      L.specs.push_back({cache::CacheKind::full_attention, l, c.kv_entry_bytes(), 0, 1, kv_fmt});
    }
  }
  if (o.include_mtp)
    for (int64_t j = 0; j < c.mtp_num_hidden_layers; ++j)
      L.specs.push_back({cache::CacheKind::full_attention, c.num_hidden_layers + j, c.kv_entry_bytes(), 0, 1, kv_fmt});
  return L;
}

}  // namespace strata::qwen35
