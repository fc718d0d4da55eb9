#include "models/qwen3_5/weights.h"

#include <cstring>

#include "core/error.h"
#include "core/numfmt.h"

namespace strata::qwen35 {

namespace {

struct Binder {
  const SafetensorsCheckpoint& ck;
  ModelWeights& w;

  // bf16 bits of a tensor: in place when it is stored BF16 and 2-byte aligned, else converted.
  const uint16_t* bf16(const std::string& name) const {
    TensorRef t = ck.get(name);
    if (t.info->dtype == DType::BF16 && reinterpret_cast<uintptr_t>(t.data) % 2 == 0) return t.as<uint16_t>();
    auto& buf = w.owned.emplace_back(size_t(t.info->numel()) * 2);
    auto* out = reinterpret_cast<uint16_t*>(buf.data());
    for (int64_t i = 0; i < t.info->numel(); ++i) {
      if (t.info->dtype == DType::BF16) {
        std::memcpy(out + i, t.data + 2 * i, 2);
      } else if (t.info->dtype == DType::F32) {
        float f;
        std::memcpy(&f, t.data + 4 * i, 4);
        out[i] = f32_to_bf16(f);
      } else {
        throw Error(name + ": unsupported dtype " + std::string(dtype_name(t.info->dtype)));
      }
    }
    return out;
  }
  // The tensor's values as the bf16 execution holds them, in fp32.
  std::vector<float> values(const std::string& name) const {
    const uint16_t* b = bf16(name);
    std::vector<float> v(size_t(ck.get(name).info->numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = bf16_to_f32(b[i]);
    return v;
  }
  LinearWeight linear(const std::string& name) const {
    const TensorInfo* t = ck.get(name).info;
    return {kernels::WeightFormat::bf16, bf16(name), nullptr, t->shape[0], t->shape[1]};
  }
  SwigluWeights swiglu(const std::string& p) const {
    return {linear(p + "gate_proj.weight"), linear(p + "up_proj.weight"), linear(p + "down_proj.weight")};
  }
};

DecoderWeights decoder(const Binder& b, const Config& c, const std::string& p, bool linear, bool fused) {
  DecoderWeights w;
  w.linear = linear;
  w.input_norm = b.bf16(p + "input_layernorm.weight");
  w.post_norm = b.bf16(p + "post_attention_layernorm.weight");
  if (linear) {
    const std::string a = p + "linear_attn.";
    w.gdn.qkv = b.linear(a + "in_proj_qkv.weight");
    w.gdn.z = b.linear(a + "in_proj_z.weight");
    w.gdn.b = b.linear(a + "in_proj_b.weight");
    w.gdn.a = b.linear(a + "in_proj_a.weight");
    w.gdn.out = b.linear(a + "out_proj.weight");
    w.gdn.conv = b.values(a + "conv1d.weight");
    w.gdn.a_log = b.values(a + "A_log");
    w.gdn.dt_bias = b.values(a + "dt_bias");
    w.gdn.norm = b.bf16(a + "norm.weight");
  } else {
    const std::string a = p + "self_attn.";
    w.attn.q = b.linear(a + "q_proj.weight");
    w.attn.k = b.linear(a + "k_proj.weight");
    w.attn.v = b.linear(a + "v_proj.weight");
    w.attn.o = b.linear(a + "o_proj.weight");
    w.attn.q_norm = b.bf16(a + "q_norm.weight");
    w.attn.k_norm = b.bf16(a + "k_norm.weight");
  }
  if (!c.moe()) {
    w.mlp = b.swiglu(p + "mlp.");
    return w;
  }
  const int64_t E = c.num_experts, I = c.moe_intermediate_size, d = c.hidden_size;
  w.moe.router = b.linear(p + "mlp.gate.weight");
  w.moe.shared = b.swiglu(p + "mlp.shared_expert.");
  w.moe.shared_gate = b.linear(p + "mlp.shared_expert_gate.weight");
  if (fused) {
    const uint16_t* gu = b.bf16(p + "mlp.experts.gate_up_proj");
    const uint16_t* dn = b.bf16(p + "mlp.experts.down_proj");
    for (int64_t e = 0; e < E; ++e) {
      const uint16_t* g = gu + e * 2 * I * d;
      w.moe.experts.push_back({{kernels::WeightFormat::bf16, g, nullptr, I, d},
                               {kernels::WeightFormat::bf16, g + I * d, nullptr, I, d},
                               {kernels::WeightFormat::bf16, dn + e * d * I, nullptr, d, I}});
    }
  } else {
    for (int64_t e = 0; e < E; ++e) w.moe.experts.push_back(b.swiglu(p + "mlp.experts." + std::to_string(e) + "."));
  }
  return w;
}

}  // namespace

void bind_weights(const Config& c, const SafetensorsCheckpoint& ckpt, ModelWeights& w) {
  const TensorLayout t = layout_of(ckpt);
  Binder b{ckpt, w};
  w.embed = b.bf16(t.prefix + "embed_tokens.weight");
  w.norm = b.bf16(t.prefix + "norm.weight");
  w.head = c.tie_word_embeddings
               ? LinearWeight{kernels::WeightFormat::bf16, w.embed, nullptr, c.vocab_size, c.hidden_size}
               : b.linear("lm_head.weight");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    w.layers.push_back(decoder(b, c, t.prefix + "layers." + std::to_string(l) + ".", c.is_linear(l), t.fused_experts));
  w.has_mtp = c.mtp_num_hidden_layers > 0;
  if (w.has_mtp) {
    w.mtp_fc = b.linear("mtp.fc.weight");
    w.mtp_norm_embedding = b.bf16("mtp.pre_fc_norm_embedding.weight");
    w.mtp_norm_hidden = b.bf16("mtp.pre_fc_norm_hidden.weight");
    w.mtp_norm = b.bf16("mtp.norm.weight");
    w.mtp_layer = decoder(b, c, "mtp.layers.0.", false, t.fused_mtp_experts);
  }
}

}  // namespace strata::qwen35
