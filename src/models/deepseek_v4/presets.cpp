#include "models/deepseek_v4/presets.h"

#include "core/error.h"

namespace strata::dsv4 {
namespace {

// Everything the official configs share (rope, YaRN, mHC, window, vocabulary, quantization).
Config common() {
  Config c;
  c.architectures = {"DeepseekV4ForCausalLM"};
  c.hc_eps = 1e-6;
  c.hc_mult = 4;
  c.hc_sinkhorn_iters = 20;
  c.head_dim = 512;
  c.qk_rope_head_dim = 64;
  c.index_head_dim = 128;
  c.max_position_embeddings = 1048576;
  c.n_shared_experts = 1;
  c.num_key_value_heads = 1;
  c.num_nextn_predict_layers = 1;
  c.rms_norm_eps = 1e-6;
  c.rope_scaling = {"yarn", 16.0, 65536, 32.0, 1.0};
  c.rope_theta = 10000;
  c.compress_rope_theta = 160000;
  c.scoring_func = "sqrtsoftplus";
  c.sliding_window = 128;
  c.swiglu_limit = 10.0;
  c.vocab_size = 129280;
  c.expert_dtype = "fp4";
  c.transformers_version = "4.57.1";
  return c;
}

}  // namespace

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> n = {"flash-tiny", "pro-tiny", "flash-2l"};
  return n;
}

Config preset_config(const std::string& name) {
  Config c = common();
  if (name == "flash-tiny") {
    // Flash's structure: window-only layers 0-1, then CSA/HCA alternating, 3 hash layers, MTP.
    // index_topk 32 makes CSA sparse from 128 tokens on.
    c.hidden_size = 256;
    c.num_attention_heads = 4;
    c.q_lora_rank = 128;
    c.o_groups = 2;
    c.o_lora_rank = 128;
    c.n_routed_experts = 16;
    c.num_experts_per_tok = 4;
    c.moe_intermediate_size = 128;
    c.index_n_heads = 4;
    c.index_topk = 32;
    c.num_hidden_layers = 6;
    c.num_hash_layers = 3;
    c.routed_scaling_factor = 1.5;
    c.compress_ratios = {0, 0, 4, 128, 4, 128, 0};
  } else if (name == "pro-tiny") {
    // Pro's structure: HCA layers 0-1, then CSA/HCA alternating, 3 hash layers, MTP.
    c.hidden_size = 384;
    c.num_attention_heads = 8;
    c.q_lora_rank = 256;
    c.o_groups = 4;
    c.o_lora_rank = 128;
    c.n_routed_experts = 16;
    c.num_experts_per_tok = 4;
    c.moe_intermediate_size = 128;
    c.index_n_heads = 4;
    c.index_topk = 32;
    c.num_hidden_layers = 6;
    c.num_hash_layers = 3;
    c.routed_scaling_factor = 2.5;
    c.compress_ratios = {128, 128, 4, 128, 4, 128, 0};
  } else if (name == "flash-2l") {
    // V4-Flash's true per-layer shapes, one CSA and one HCA layer, plus MTP. Layer 0 routes
    // by hash, layer 1 by the biased router, so both kinds are measured.
    c.hidden_size = 4096;
    c.num_attention_heads = 64;
    c.q_lora_rank = 1024;
    c.o_groups = 8;
    c.o_lora_rank = 1024;
    c.n_routed_experts = 256;
    c.num_experts_per_tok = 6;
    c.moe_intermediate_size = 2048;
    c.index_n_heads = 64;
    c.index_topk = 512;
    c.num_hidden_layers = 2;
    c.num_hash_layers = 1;
    c.routed_scaling_factor = 1.5;
    c.compress_ratios = {4, 128, 0};
  } else {
    std::string list;
    for (auto& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
    throw Error("unknown preset '" + name + "' (known: " + list + ")");
  }
  return c;
}

}  // namespace strata::dsv4
