#include "models/gemma4/config.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace strata::gemma4 {
using nlohmann::json;

namespace {

void require(bool ok, const std::string& where, const std::string& what) {
  if (!ok) throw Error(where + ": " + what);
}

bool is_wrapper(const std::string& t) { return t == "gemma4" || t == "gemma4_unified"; }
bool is_text(const std::string& t) { return t == "gemma4_text" || t == "gemma4_unified_text"; }

// transformers' default when layer_types is absent: every 6th layer full, the last one full.
std::vector<std::string> default_layer_types(int64_t n) {
  std::vector<std::string> t;
  for (int64_t l = 0; l < n; ++l) t.push_back((l + 1) % 6 ? "sliding_attention" : "full_attention");
  if (!t.empty()) t.back() = "full_attention";
  return t;
}

}  // namespace

int64_t Config::kv_source(int64_t l) const {
  for (int64_t j = first_kv_shared() - 1; j >= 0; --j)
    if (layer_types[size_t(j)] == layer_types[size_t(l)]) return j;
  return -1;
}

int64_t Config::sliding_layers() const {
  int64_t n = 0;
  for (int64_t l = 0; l < num_hidden_layers; ++l) n += sliding(l);
  return n;
}

Config parse_config(const json& j, const std::string& where) {
  require(j.is_object(), where, "not a JSON object");
  Config c;
  models::ConfigReader top(j, where, c.keys);
  const std::string wrapper = top.string("model_type");
  c.architectures = top.metadata_or("architectures", c.architectures);
  std::optional<models::ConfigReader> text;
  if (is_wrapper(wrapper)) {
    require(j.contains("text_config") && j["text_config"].is_object(), where,
            "model_type " + wrapper + " needs a text_config");
    c.wrapper_type = wrapper;
    text = top.object("text_config", true);
    c.has_vision = j.contains("vision_config") && j["vision_config"].is_object();
    c.has_audio = j.contains("audio_config") && j["audio_config"].is_object();
    // The vision and audio towers (their tensors are skipped) and their placeholder tokens.
    top.metadata({"vision_config", "audio_config", "boi_token_id", "eoi_token_id", "image_token_id", "video_token_id",
                  "boa_token_id", "eoa_token_id", "eoa_token_index", "audio_token_id", "initializer_range",
                  "vision_soft_tokens_per_image", "audio_soft_tokens_per_image", "mm_tokens_per_image"});
  }
  models::ConfigReader& t = text ? *text : top;
  const std::string w = t.where();
  c.model_type = t.string("model_type");
  require(is_text(c.model_type), w, "model_type '" + c.model_type + "' is not gemma4_text or gemma4_unified_text");
  t.metadata({"initializer_range", "use_cache", "attention_dropout", "pad_token_id", "bos_token_id"});
  const std::string act = t.string_or("hidden_activation", "gelu_pytorch_tanh");
  require(act == "gelu_pytorch_tanh", w, "hidden_activation '" + act + "' (Gemma 4's GeGLU is gelu_pytorch_tanh)");
  require(!t.boolean_or("attention_bias", false), w, "attention_bias true is not Gemma 4's");
  const std::string bidir = t.string_or("use_bidirectional_attention", "");
  // "vision": image tokens attend both ways, text stays causal (text-only input is plain causal).
  require(bidir.empty() || bidir == "vision", w,
          "use_bidirectional_attention '" + bidir + "' (only causal text attention, or 'vision')");

  c.vocab_size = t.integer("vocab_size");
  c.hidden_size = t.integer("hidden_size");
  c.num_hidden_layers = t.integer("num_hidden_layers");
  c.max_position_embeddings = t.integer_or("max_position_embeddings", 131072);
  c.rms_norm_eps = t.number_or("rms_norm_eps", c.rms_norm_eps);
  c.sliding_window = t.integer("sliding_window");
  c.num_attention_heads = t.integer("num_attention_heads");
  c.num_key_value_heads = t.integer("num_key_value_heads");
  c.head_dim = t.integer_or("head_dim", 256);
  // transformers: absent means 512; null (or 0) means the full layers use head_dim too.
  const json& raw = text ? j["text_config"] : j;
  const bool null_global = raw.contains("global_head_dim") && raw["global_head_dim"].is_null();
  c.global_head_dim = null_global ? c.head_dim : t.integer_or("global_head_dim", 512);
  if (c.global_head_dim == 0) c.global_head_dim = c.head_dim;
  c.num_global_key_value_heads = t.integer_or("num_global_key_value_heads", 0);
  c.attention_k_eq_v = t.boolean_or("attention_k_eq_v", false);
  c.intermediate_size = t.integer("intermediate_size");
  c.use_double_wide_mlp = t.boolean_or("use_double_wide_mlp", false);
  c.final_logit_softcapping = t.number_or("final_logit_softcapping", 0.0);
  // PLE: transformers' default is 256 when the key is absent.
  c.hidden_size_per_layer_input = t.integer_or("hidden_size_per_layer_input", 256);
  c.vocab_size_per_layer_input = t.integer_or("vocab_size_per_layer_input", 262144);
  c.num_kv_shared_layers = t.integer_or("num_kv_shared_layers", 0);
  c.enable_moe_block = t.boolean_or("enable_moe_block", false);
  if (c.enable_moe_block) {
    c.num_experts = t.integer("num_experts");
    c.top_k_experts = t.integer("top_k_experts");
    c.moe_intermediate_size = t.integer("moe_intermediate_size");
  } else {
    t.metadata({"num_experts", "top_k_experts", "moe_intermediate_size"});
  }
  c.layer_types = t.get_or("layer_types", default_layer_types(c.num_hidden_layers));
  if (!c.layer_types.empty() && c.layer_types.back() == "sliding_attention") {
    // As transformers does (with the same warning): the last layer is always full attention.
    std::fprintf(stderr, "warning: %s: layer_types ends with sliding_attention; the last layer is full attention\n",
                 w.c_str());
    c.layer_types.back() = "full_attention";
  }
  // RoPE per layer type: default on sliding layers, proportional (or default) on full ones.
  if (auto rp = t.optional_object("rope_parameters", nullptr)) {
    if (auto s = rp->optional_object("sliding_attention", nullptr)) {
      const std::string type = s->string_or("rope_type", "default");
      require(type == "default", w, "rope_parameters.sliding_attention.rope_type '" + type + "' (only default)");
      c.sliding_rope_theta = s->number_or("rope_theta", c.sliding_rope_theta);
    }
    if (auto f = rp->optional_object("full_attention", nullptr)) {
      c.full_rope_type = f->string_or("rope_type", "default");
      require(c.full_rope_type == "default" || c.full_rope_type == "proportional", w,
              "rope_parameters.full_attention.rope_type '" + c.full_rope_type + "' (default or proportional)");
      c.full_rope_theta = f->number_or("rope_theta", c.full_rope_theta);
      c.full_partial_rotary_factor = f->number_or("partial_rotary_factor", 1.0);
      require(f->number_or("factor", 1.0) == 1.0, w, "rope_parameters.full_attention.factor other than 1 is not supported");
    }
  } else {
    c.full_partial_rotary_factor = 0.25;  // transformers' defaults: proportional, 0.25, theta 1e6
  }
  if (text && top.has("tie_word_embeddings")) {
    c.tie_word_embeddings = top.boolean_or("tie_word_embeddings", true);
    t.metadata({"tie_word_embeddings"});
  } else {
    c.tie_word_embeddings = t.boolean_or("tie_word_embeddings", true);
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
  pos(c.sliding_window, "sliding_window");
  pos(c.num_attention_heads, "num_attention_heads");
  pos(c.num_key_value_heads, "num_key_value_heads");
  pos(c.head_dim, "head_dim");
  pos(c.global_head_dim, "global_head_dim");
  pos(c.intermediate_size, "intermediate_size");
  require(c.tie_word_embeddings, w, "tie_word_embeddings false: Gemma 4's head is its embedding");
  require(c.num_global_key_value_heads >= 0, w, "num_global_key_value_heads must not be negative");
  require(c.hidden_size_per_layer_input >= 0, w, "hidden_size_per_layer_input must not be negative");
  if (c.ple())
    require(c.vocab_size_per_layer_input >= c.vocab_size, w,
            "vocab_size_per_layer_input " + std::to_string(c.vocab_size_per_layer_input) +
                " is smaller than vocab_size: every token needs a per-layer embedding");
  require(c.final_logit_softcapping >= 0, w, "final_logit_softcapping must not be negative");
  if (c.enable_moe_block) {
    pos(c.num_experts, "num_experts");
    pos(c.top_k_experts, "top_k_experts");
    pos(c.moe_intermediate_size, "moe_intermediate_size");
    require(c.top_k_experts <= c.num_experts, w, "top_k_experts exceeds num_experts");
  }
  require(int64_t(c.layer_types.size()) == c.num_hidden_layers, w,
          "layer_types has " + std::to_string(c.layer_types.size()) + " entries but num_hidden_layers is " +
              std::to_string(c.num_hidden_layers));
  for (size_t l = 0; l < c.layer_types.size(); ++l)
    require(c.layer_types[l] == "sliding_attention" || c.layer_types[l] == "full_attention", w,
            "layer_types[" + std::to_string(l) + "] '" + c.layer_types[l] +
                "' is neither sliding_attention nor full_attention");
  require(c.num_kv_shared_layers >= 0 && c.num_kv_shared_layers < c.num_hidden_layers, w,
          "num_kv_shared_layers must be in [0, num_hidden_layers)");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string L = "layer " + std::to_string(l) + " (" + c.layer_types[size_t(l)] + ")";
    if (c.kv_shared(l))
      require(c.kv_source(l) >= 0, w,
              L + " shares K/V (num_kv_shared_layers " + std::to_string(c.num_kv_shared_layers) +
                  ") but no earlier layer of its type computes them");
    require(c.num_attention_heads % c.layer_kv_heads(l) == 0, w,
            L + ": num_attention_heads must be a multiple of its " + std::to_string(c.layer_kv_heads(l)) + " KV heads");
    require(c.layer_head_dim(l) % 16 == 0, w,
            L + ": head size " + std::to_string(c.layer_head_dim(l)) + " must be a multiple of 16 (the attention kernels' lanes)");
  }
  require(c.full_partial_rotary_factor > 0 && c.full_partial_rotary_factor <= 1, w,
          "rope_parameters.full_attention.partial_rotary_factor must be in (0, 1]");
  for (int64_t e : c.eos_token_ids) require(e >= 0 && e < c.vocab_size, w, "eos_token_id outside the vocabulary");
  return c;
}

nlohmann::ordered_json to_json(const Config& c) {
  nlohmann::ordered_json t;
  t["model_type"] = c.model_type;
  t["vocab_size"] = c.vocab_size;
  t["hidden_size"] = c.hidden_size;
  t["intermediate_size"] = c.intermediate_size;
  t["num_hidden_layers"] = c.num_hidden_layers;
  t["layer_types"] = c.layer_types;
  t["sliding_window"] = c.sliding_window;
  t["num_attention_heads"] = c.num_attention_heads;
  t["num_key_value_heads"] = c.num_key_value_heads;
  t["head_dim"] = c.head_dim;
  t["global_head_dim"] = c.global_head_dim;
  t["num_global_key_value_heads"] =
      c.num_global_key_value_heads > 0 ? nlohmann::ordered_json(c.num_global_key_value_heads) : nlohmann::ordered_json();
  t["attention_k_eq_v"] = c.attention_k_eq_v;
  nlohmann::ordered_json full = {{"rope_type", c.full_rope_type}, {"rope_theta", c.full_rope_theta}};
  if (c.full_rope_type == "proportional") full["partial_rotary_factor"] = c.full_partial_rotary_factor;
  t["rope_parameters"] = {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", c.sliding_rope_theta}}},
                          {"full_attention", full}};
  t["max_position_embeddings"] = c.max_position_embeddings;
  t["rms_norm_eps"] = c.rms_norm_eps;
  t["hidden_activation"] = "gelu_pytorch_tanh";
  t["attention_bias"] = false;
  t["final_logit_softcapping"] =
      c.final_logit_softcapping > 0 ? nlohmann::ordered_json(c.final_logit_softcapping) : nlohmann::ordered_json();
  t["hidden_size_per_layer_input"] = c.hidden_size_per_layer_input;
  t["vocab_size_per_layer_input"] = c.vocab_size_per_layer_input;
  t["num_kv_shared_layers"] = c.num_kv_shared_layers;
  t["use_double_wide_mlp"] = c.use_double_wide_mlp;
  t["enable_moe_block"] = c.enable_moe_block;
  // transformers writes every field of its config class: the MoE ones null on dense models.
  const auto or_null = [&](int64_t v) { return c.enable_moe_block ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); };
  t["num_experts"] = or_null(c.num_experts);
  t["top_k_experts"] = or_null(c.top_k_experts);
  t["moe_intermediate_size"] = or_null(c.moe_intermediate_size);
  t["tie_word_embeddings"] = c.tie_word_embeddings;
  t["bos_token_id"] = 2;
  t["pad_token_id"] = 0;
  if (c.eos_token_ids.size() == 1) t["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty()) t["eos_token_id"] = c.eos_token_ids;
  t["dtype"] = "bfloat16";
  nlohmann::ordered_json j;
  j["architectures"] = c.architectures.empty() ? nlohmann::ordered_json::array({"Gemma4ForConditionalGeneration"})
                                               : nlohmann::ordered_json(c.architectures);
  j["model_type"] = c.wrapper_type.empty() ? "gemma4" : c.wrapper_type;
  j["text_config"] = t;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (c.strata_random_weights) j["strata_random_weights"] = true;
  return j;
}

cache::CacheLayout cache_layout(const Config& c, const models::CacheOptions& o) {
  (void)o;  // no MTP block, no recurrent state: draft tokens need no copies
  cache::CacheLayout L;
  L.block_tokens = 128;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (c.kv_shared(l)) continue;
    const std::string shape = std::to_string(c.layer_kv_heads(l)) + " x " + std::to_string(c.layer_head_dim(l)) + " bf16";
    if (c.sliding(l))
      L.specs.push_back({cache::CacheKind::sliding_window, l, c.kv_entry_bytes(l), c.sliding_window, 1, "K + V, " + shape});
    else
      L.specs.push_back({cache::CacheKind::full_attention, l, c.kv_entry_bytes(l), 0, 1,
                         c.k_eq_v(l) ? "K=V projection, " + shape : "K + V, " + shape});
  }
  return L;
}

}  // namespace strata::gemma4
