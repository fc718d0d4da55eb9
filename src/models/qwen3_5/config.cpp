#include "models/qwen3_5/config.h"

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace strata::qwen35 {
using nlohmann::json;

namespace {

void require(bool ok, const std::string& where, const std::string& what) {
  if (!ok) throw Error(where + ": " + what);
}

// Legacy layouts name the RoPE variant in rope_scaling or rope_type; text positions use
// default RoPE ("mrope" is default RoPE for text-only positions).
void require_default_rope(const std::string& type, const std::string& where, const std::string& key) {
  require(type == "default" || type == "mrope", where, key + " '" + type + "' (text positions use default RoPE)");
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
  models::ConfigReader top(j, where, c.keys);
  const std::string wrapper = top.string("model_type");
  c.architectures = top.metadata_or("architectures", c.architectures);
  std::optional<models::ConfigReader> text;
  if (wrapper == "qwen3_5" || wrapper == "qwen3_5_moe") {
    require(j.contains("text_config") && j["text_config"].is_object(), where,
            "model_type " + wrapper + " needs a text_config");
    c.wrapper_type = wrapper;
    text = top.object("text_config", true);
    c.has_vision = j.contains("vision_config") && j["vision_config"].is_object();
    // The vision tower (its tensors are skipped) and the image/video placeholders.
    top.metadata({"vision_config", "image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id"});
  }
  models::ConfigReader& t = text ? *text : top;
  const std::string w = t.where();
  c.model_type = t.string("model_type");
  require(c.model_type == "qwen3_5_text" || c.model_type == "qwen3_5_moe_text", w,
          "model_type '" + c.model_type + "' is not qwen3_5_text or qwen3_5_moe_text");
  require(c.wrapper_type.empty() || (c.wrapper_type == "qwen3_5") == (c.model_type == "qwen3_5_text"), w,
          "text_config model_type " + c.model_type + " does not go with " + c.wrapper_type);
  // Training-time and routing-loss settings transformers' config class carries.
  t.metadata({"decoder_sparse_step", "norm_topk_prob", "output_router_logits", "router_aux_loss_coef"});
  const std::string act = t.string_or("hidden_act", "silu");
  require(act == "silu", w, "hidden_act '" + act + "' (only silu)");
  require(t.boolean_or("attn_output_gate", true), w,
          "attn_output_gate false (Qwen3.5's attention always splits q_proj into q | gate)");
  require(!t.boolean_or("attention_bias", false), w, "attention_bias true is not Qwen3.5's");
  require(!t.boolean_or("mtp_use_dedicated_embeddings", false), w,
          "mtp_use_dedicated_embeddings true is not supported");
  const std::string ssm = t.string_or("mamba_ssm_dtype", "float32");
  require(ssm == "float32", w, "mamba_ssm_dtype '" + ssm + "' (the recurrent state is fp32)");
  require(t.get_or("mlp_only_layers", std::vector<int64_t>{}).empty(), w, "mlp_only_layers is not supported");

  c.vocab_size = t.integer("vocab_size");
  c.hidden_size = t.integer("hidden_size");
  c.num_hidden_layers = t.integer("num_hidden_layers");
  c.max_position_embeddings = t.integer("max_position_embeddings");
  c.rms_norm_eps = t.number_or("rms_norm_eps", c.rms_norm_eps);
  c.num_attention_heads = t.integer("num_attention_heads");
  c.num_key_value_heads = t.integer("num_key_value_heads");
  c.head_dim = t.integer_or("head_dim", c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0);
  c.linear_num_key_heads = t.integer("linear_num_key_heads");
  c.linear_num_value_heads = t.integer("linear_num_value_heads");
  c.linear_key_head_dim = t.integer("linear_key_head_dim");
  c.linear_value_head_dim = t.integer("linear_value_head_dim");
  c.linear_conv_kernel_dim = t.integer_or("linear_conv_kernel_dim", c.linear_conv_kernel_dim);
  c.mtp_num_hidden_layers = t.integer_or("mtp_num_hidden_layers", c.mtp_num_hidden_layers);
  // RoPE: rope_parameters (the current layout, which then supersedes the legacy top-level
  // keys), or the legacy keys.
  if (auto rp = t.optional_object("rope_parameters", nullptr)) {
    t.metadata({"rope_theta", "partial_rotary_factor"});
    require_default_rope(rp->string_or("rope_type", "default"), w, "rope_parameters.rope_type");
    rp->metadata({"mrope_interleaved", "mrope_section"});  // image/video positions
    c.rope_theta = rp->number_or("rope_theta", c.rope_theta);
    c.partial_rotary_factor = rp->number_or("partial_rotary_factor", c.partial_rotary_factor);
  } else {
    c.rope_theta = t.number_or("rope_theta", c.rope_theta);
    c.partial_rotary_factor = t.number_or("partial_rotary_factor", c.partial_rotary_factor);
  }
  if (auto rs = t.optional_object("rope_scaling", nullptr)) {
    const bool old = !rs->has("rope_type") && rs->has("type");
    require_default_rope(rs->string_or(old ? "type" : "rope_type", "default"), w, "rope_scaling.rope_type");
    rs->metadata({old ? "rope_type" : "type", "mrope_interleaved", "mrope_section"});
  }
  require_default_rope(t.string_or("rope_type", "default"), w, "rope_type");
  // layer_types, else every full_attention_interval-th layer full attention.
  int64_t every = 4;
  if (t.has("layer_types")) t.metadata({"full_attention_interval"});
  else every = t.integer_or("full_attention_interval", every);
  require(every > 0, w, "full_attention_interval must be positive");
  std::vector<std::string> by_interval;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    by_interval.push_back((l + 1) % every ? "linear_attention" : "full_attention");
  c.layer_types = t.get_or("layer_types", by_interval);
  if (c.model_type == "qwen3_5_moe_text") {
    c.num_experts = t.integer("num_experts");
    c.num_experts_per_tok = t.integer("num_experts_per_tok");
    c.moe_intermediate_size = t.integer("moe_intermediate_size");
    c.shared_expert_intermediate_size = t.integer("shared_expert_intermediate_size");
    t.metadata({"intermediate_size"});  // the dense MLP of mlp_only_layers, which must be empty
  } else {
    c.intermediate_size = t.integer("intermediate_size");
  }
  // tie_word_embeddings: the wrapper's, else the text config's.
  if (text && top.has("tie_word_embeddings")) {
    c.tie_word_embeddings = top.boolean_or("tie_word_embeddings", false);
    t.metadata({"tie_word_embeddings"});
  } else {
    c.tie_word_embeddings = t.boolean_or("tie_word_embeddings", false);
    if (text) top.metadata({"tie_word_embeddings"});
  }
  c.eos_token_ids = t.ids_or_empty("eos_token_id");
  c.strata_random_weights = top.metadata_or("strata_random_weights", false);
  c.keys.finish();

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
