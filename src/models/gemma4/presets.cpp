#include "models/gemma4/presets.h"

#include "core/error.h"
#include "models/gemma4/tiny_tokenizer.h"

namespace strata::gemma4 {

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> n = {"gemma4-tiny", "gemma4-kv-tiny", "gemma4-e-tiny", "gemma4-moe-tiny",
                                             "gemma4-e2b",  "gemma4-e2b-4l",  "gemma4-12b"};
  return n;
}

namespace {

std::vector<std::string> every_nth_full(int64_t layers, int64_t n) {
  std::vector<std::string> t;
  for (int64_t l = 0; l < layers; ++l) t.push_back((l + 1) % n ? "sliding_attention" : "full_attention");
  return t;
}

Config common() {
  Config c;
  c.model_type = "gemma4_text";
  c.wrapper_type = "gemma4";
  c.vocab_size = 262144;
  c.max_position_embeddings = 131072;
  c.sliding_rope_theta = 1e4;
  c.full_rope_type = "proportional";
  c.full_rope_theta = 1e6;
  c.full_partial_rotary_factor = 0.25;
  c.final_logit_softcapping = 30.0;
  c.vocab_size_per_layer_input = 262144;
  c.eos_token_ids = {1, 106};  // <eos>, <end_of_turn>
  c.strata_random_weights = true;
  return c;
}

}  // namespace

Config preset_config(const std::string& name) {
  Config c = common();
  if (name.ends_with("-tiny")) {
    c.vocab_size = c.vocab_size_per_layer_input = 512;
    c.eos_token_ids = {1, kTinyEndOfTurn};
    c.max_position_embeddings = 4096;
    c.hidden_size = 128;
    c.num_hidden_layers = 6;
    c.layer_types = every_nth_full(6, 3);
    c.sliding_window = 32;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 32;
    c.global_head_dim = 64;
    c.intermediate_size = 256;
    if (name == "gemma4-tiny") return c;
    if (name == "gemma4-kv-tiny" || name == "gemma4-moe-tiny") {
      c.attention_k_eq_v = true;
      c.num_global_key_value_heads = 1;
      if (name == "gemma4-kv-tiny") return c;
      c.enable_moe_block = true;
      c.num_experts = 8;
      c.top_k_experts = 2;
      c.moe_intermediate_size = 32;
      c.intermediate_size = 64;
      return c;
    }
    if (name == "gemma4-e-tiny") {
      c.hidden_size_per_layer_input = 16;
      c.num_kv_shared_layers = 2;
      c.use_double_wide_mlp = true;
      return c;
    }
  }
  if (name == "gemma4-e2b" || name == "gemma4-e2b-4l") {
    c.hidden_size = 1536;
    c.num_attention_heads = 8;
    c.num_key_value_heads = 1;
    c.head_dim = 256;
    c.global_head_dim = 512;
    c.sliding_window = 512;
    c.intermediate_size = 6144;
    c.use_double_wide_mlp = true;
    c.hidden_size_per_layer_input = 256;
    if (name == "gemma4-e2b") {
      c.num_hidden_layers = 35;
      c.layer_types = every_nth_full(35, 5);
      c.num_kv_shared_layers = 20;
    } else {
      c.num_hidden_layers = 4;
      c.layer_types = every_nth_full(4, 2);
      c.num_kv_shared_layers = 2;
    }
    return c;
  }
  if (name == "gemma4-12b") {
    c.wrapper_type = "gemma4_unified";
    c.model_type = "gemma4_unified_text";
    c.architectures = {"Gemma4UnifiedForConditionalGeneration"};
    c.hidden_size = 3840;
    c.num_hidden_layers = 48;
    c.layer_types = every_nth_full(48, 6);
    c.sliding_window = 1024;
    c.num_attention_heads = 16;
    c.num_key_value_heads = 8;
    c.head_dim = 256;
    c.global_head_dim = 512;
    c.attention_k_eq_v = true;
    c.num_global_key_value_heads = 1;
    c.intermediate_size = 15360;
    return c;
  }
  std::string list;
  for (const auto& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error("unknown Gemma 4 preset '" + name + "' (known: " + list + ")");
}

}  // namespace strata::gemma4
