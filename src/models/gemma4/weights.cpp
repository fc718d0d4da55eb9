#include "models/gemma4/weights.h"

#include <cstring>

#include "core/numfmt.h"
#include "models/gemma4/tensors.h"

namespace strata::gemma4 {

namespace {

struct Binder {
  const SafetensorsCheckpoint& ck;
  ModelWeights& w;

  // bf16 bits in place when 2-byte aligned (the check guarantees BF16), else copied.
  const uint16_t* bf16(const std::string& name) const {
    TensorRef t = ck.get(name);
    if (reinterpret_cast<uintptr_t>(t.data) % 2 == 0) return t.as<uint16_t>();
    auto& buf = w.owned.emplace_back(size_t(t.info->numel()) * 2);
    std::memcpy(buf.data(), t.data, buf.size());
    return reinterpret_cast<const uint16_t*>(buf.data());
  }
  LinearWeight linear(const std::string& name) const {
    const TensorInfo* t = ck.get(name).info;
    return {kernels::WeightFormat::bf16, bf16(name), nullptr, t->shape[0], t->shape[1]};
  }
  GegluWeights geglu(const std::string& p) const {
    return {linear(p + "gate_proj.weight"), linear(p + "up_proj.weight"), linear(p + "down_proj.weight")};
  }
};

DecoderWeights decoder(const Binder& b, const Config& c, int64_t l, const std::string& p) {
  DecoderWeights w;
  w.input_norm = b.bf16(p + "input_layernorm.weight");
  w.post_attention_norm = b.bf16(p + "post_attention_layernorm.weight");
  w.pre_feedforward_norm = b.bf16(p + "pre_feedforward_layernorm.weight");
  w.post_feedforward_norm = b.bf16(p + "post_feedforward_layernorm.weight");
  w.layer_scalar = bf16_to_f32(b.bf16(p + "layer_scalar")[0]);
  const std::string a = p + "self_attn.";
  w.attn.q = b.linear(a + "q_proj.weight");
  w.attn.o = b.linear(a + "o_proj.weight");
  w.attn.q_norm = b.bf16(a + "q_norm.weight");
  if (!c.kv_shared(l)) {
    w.attn.k = b.linear(a + "k_proj.weight");
    if (!c.k_eq_v(l)) w.attn.v = b.linear(a + "v_proj.weight");
    w.attn.k_norm = b.bf16(a + "k_norm.weight");
  }
  w.mlp = b.geglu(p + "mlp.");
  if (c.ple()) {
    w.ple.gate = b.linear(p + "per_layer_input_gate.weight");
    w.ple.projection = b.linear(p + "per_layer_projection.weight");
    w.ple.post_norm = b.bf16(p + "post_per_layer_input_norm.weight");
  }
  if (c.enable_moe_block) {
    const int64_t E = c.num_experts, I = c.moe_intermediate_size, d = c.hidden_size;
    w.moe.router = b.linear(p + "router.proj.weight");
    w.moe.router_scale = b.bf16(p + "router.scale");
    w.moe.expert_scale = b.bf16(p + "router.per_expert_scale");
    w.moe.pre_norm = b.bf16(p + "pre_feedforward_layernorm_2.weight");
    w.moe.post_norm_dense = b.bf16(p + "post_feedforward_layernorm_1.weight");
    w.moe.post_norm_experts = b.bf16(p + "post_feedforward_layernorm_2.weight");
    const uint16_t* gu = b.bf16(p + "experts.gate_up_proj");
    const uint16_t* dn = b.bf16(p + "experts.down_proj");
    for (int64_t e = 0; e < E; ++e) {
      const uint16_t* g = gu + e * 2 * I * d;
      w.moe.experts.push_back({{kernels::WeightFormat::bf16, g, nullptr, I, d},
                               {kernels::WeightFormat::bf16, g + I * d, nullptr, I, d},
                               {kernels::WeightFormat::bf16, dn + e * d * I, nullptr, d, I}});
    }
  }
  return w;
}

}  // namespace

void bind_weights(const Config& c, const SafetensorsCheckpoint& ckpt, ModelWeights& w) {
  const std::string p = prefix_of(ckpt);
  Binder b{ckpt, w};
  w.embed = b.bf16(p + "embed_tokens.weight");
  w.norm = b.bf16(p + "norm.weight");
  w.head = LinearWeight{kernels::WeightFormat::bf16, w.embed, nullptr, c.vocab_size, c.hidden_size};
  if (c.ple()) {
    w.ple_embed = b.bf16(p + "embed_tokens_per_layer.weight");
    w.ple_projection = b.linear(p + "per_layer_model_projection.weight");
    w.ple_norm = b.bf16(p + "per_layer_projection_norm.weight");
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    w.layers.push_back(decoder(b, c, l, p + "layers." + std::to_string(l) + "."));
}

}  // namespace strata::gemma4
