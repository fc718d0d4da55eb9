#include "models/dsa/presets.h"

#include "core/error.h"

namespace strata::dsa {
namespace {

// deepseek-ai/DeepSeek-V3.2 config.json.
Config deepseek_v32() {
  Config c;
  c.model_type = "deepseek_v32";
  c.architectures = {"DeepseekV32ForCausalLM"};
  c.vocab_size = 129280;
  c.hidden_size = 7168;
  c.num_hidden_layers = 61;
  c.max_position_embeddings = 163840;
  c.num_nextn_predict_layers = 1;
  c.rms_norm_eps = 1e-6;
  c.num_attention_heads = 128;
  c.q_lora_rank = 1536;
  c.kv_lora_rank = 512;
  c.qk_nope_head_dim = 128;
  c.qk_rope_head_dim = 64;
  c.v_head_dim = 128;
  c.rope_theta = 10000;
  c.yarn = {true, 40, 32, 1, 1.0, 1.0, 4096};
  c.index_n_heads = 64;
  c.index_head_dim = 128;
  c.index_topk = 2048;
  c.indexer_rope_interleave = false;
  c.indexer_types.assign(size_t(c.num_hidden_layers), "full");
  c.intermediate_size = 18432;
  c.first_k_dense_replace = 3;
  c.n_routed_experts = 256;
  c.n_shared_experts = 1;
  c.num_experts_per_tok = 8;
  c.moe_intermediate_size = 2048;
  c.n_group = 8;
  c.topk_group = 4;
  c.norm_topk_prob = true;
  c.routed_scaling_factor = 2.5;
  c.fp8 = true;
  c.bos_token_id = 0;
  c.eos_token_ids = {1};
  return c;
}

// transformers GlmMoeDsaConfig (checkpoint "zai-org/GLM-5"): every value is the class default.
Config glm5() {
  Config c;
  c.model_type = "glm_moe_dsa";
  c.architectures = {"GlmMoeDsaForCausalLM"};
  c.vocab_size = 154880;            // vocab_size
  c.hidden_size = 6144;             // hidden_size
  c.num_hidden_layers = 78;         // num_hidden_layers
  c.max_position_embeddings = 202752;
  c.num_nextn_predict_layers = 1;   // the MTP layer model.layers.78 (_keys_to_ignore_on_load_unexpected)
  c.rms_norm_eps = 1e-5;            // rms_norm_eps
  c.num_attention_heads = 64;       // num_attention_heads = num_key_value_heads
  c.q_lora_rank = 2048;
  c.kv_lora_rank = 512;
  c.qk_nope_head_dim = 192;
  c.qk_rope_head_dim = 64;
  c.v_head_dim = 256;
  c.rope_theta = 10000;             // no rope_parameters: the rotary mixin's default theta
  c.index_n_heads = 32;             // index_n_heads
  c.index_head_dim = 128;           // index_head_dim
  c.index_topk = 2048;              // index_topk
  c.indexer_rope_interleave = true; // GlmMoeDsaIndexer applies the interleaved RoPE
  // index_topk_freq 1, index_skip_topk_offset 2: every layer runs its own indexer.
  c.indexer_types.assign(size_t(c.num_hidden_layers), "full");
  c.intermediate_size = 12288;      // intermediate_size
  c.first_k_dense_replace = 3;      // first_k_dense_replace
  c.n_routed_experts = 256;
  c.n_shared_experts = 1;
  c.num_experts_per_tok = 8;
  c.moe_intermediate_size = 2048;
  c.n_group = 1;                    // n_group = topk_group = 1
  c.topk_group = 1;
  c.norm_topk_prob = true;
  c.routed_scaling_factor = 2.5;
  c.fp8 = false;                    // published in bf16 (and as a separate FP8 release)
  c.bos_token_id = 0;
  c.eos_token_ids = {1};
  return c;
}

void all_full(Config& c) { c.indexer_types.assign(size_t(c.num_hidden_layers), "full"); }

// Small shapes for tests; the structure of the real model (dense then MoE layers, MTP), with
// index_topk 64 so that the indexer selects from the 65th token on.
void tiny(Config& c) {
  c.hidden_size = 256;
  c.num_attention_heads = 4;
  c.q_lora_rank = 128;
  c.kv_lora_rank = 128;
  c.qk_rope_head_dim = 64;
  c.intermediate_size = 512;
  c.first_k_dense_replace = 1;
  c.n_routed_experts = 16;
  c.num_experts_per_tok = 4;
  c.moe_intermediate_size = 128;
  c.n_shared_experts = 1;
  c.index_n_heads = 4;
  c.index_head_dim = 128;
  c.index_topk = 64;
  c.num_nextn_predict_layers = 1;
  c.strata_random_weights = true;
}

}  // namespace

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> n = {"deepseek-v3.2", "deepseek-v3.2-tiny", "deepseek-v3.2-2l",
                                             "glm5",          "glm5-tiny",          "glm5-2l"};
  return n;
}

bool config_only_preset(const std::string& name) { return name == "deepseek-v3.2" || name == "glm5"; }

Config preset_config(const std::string& name) {
  if (name == "deepseek-v3.2") return deepseek_v32();
  if (name == "glm5") return glm5();
  if (name == "deepseek-v3.2-tiny") {
    Config c = deepseek_v32();
    tiny(c);
    c.num_hidden_layers = 3;
    c.qk_nope_head_dim = 64;
    c.v_head_dim = 64;
    c.n_group = 4;
    c.topk_group = 2;
    all_full(c);
    return c;
  }
  if (name == "glm5-tiny") {
    // GLM-5's differences kept: nope != v, one expert group, interleaved indexer RoPE, bf16
    // weights, and shared-indexer layers (1 and 3 reuse 0's and 2's selection).
    Config c = glm5();
    tiny(c);
    c.num_hidden_layers = 4;
    c.qk_nope_head_dim = 96;
    c.v_head_dim = 128;
    c.indexer_types = {"full", "shared", "full", "shared"};
    return c;
  }
  if (name == "deepseek-v3.2-2l") {
    // True shapes: layer 0 dense, layer 1 MoE; no MTP layer (another 11 GB of FP8 experts).
    Config c = deepseek_v32();
    c.num_hidden_layers = 2;
    c.first_k_dense_replace = 1;
    c.num_nextn_predict_layers = 0;
    all_full(c);
    c.strata_random_weights = true;
    return c;
  }
  if (name == "glm5-2l") {
    // True shapes in GLM-5's FP8 release format (bf16 experts would be 19 GB a layer): layer 0
    // dense with its own indexer, layer 1 MoE sharing layer 0's selection; no MTP layer.
    Config c = glm5();
    c.num_hidden_layers = 2;
    c.first_k_dense_replace = 1;
    c.num_nextn_predict_layers = 0;
    c.indexer_types = {"full", "shared"};
    c.fp8 = true;
    c.strata_random_weights = true;
    return c;
  }
  std::string list;
  for (const auto& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error("unknown DSA preset '" + name + "' (known: " + list + ")");
}

}  // namespace strata::dsa
