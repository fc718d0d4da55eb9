#include "models/dsa/weights.h"

#include <cstring>

#include "core/error.h"
#include "core/numfmt.h"

namespace strata::dsa {
namespace {

struct Binder {
  const Config& c;
  const SafetensorsCheckpoint& ck;
  ModelWeights& w;

  uint8_t* own(size_t bytes) { return w.owned.emplace_back(bytes).data(); }

  // bf16 bits in place when stored BF16 and 2-byte aligned, else converted.
  const uint16_t* bf16(const std::string& name) {
    const TensorRef t = ck.get(name);
    if (t.info->dtype == DType::BF16 && reinterpret_cast<uintptr_t>(t.data) % 2 == 0) return t.as<uint16_t>();
    auto* out = reinterpret_cast<uint16_t*>(own(static_cast<size_t>(t.info->numel()) * 2));
    for (int64_t i = 0; i < t.info->numel(); ++i) {
      if (t.info->dtype == DType::BF16) {
        std::memcpy(out + i, t.data + 2 * i, 2);
      } else {
        float f;
        std::memcpy(&f, t.data + 4 * i, 4);
        out[i] = f32_to_bf16(f);
      }
    }
    return out;
  }
  // fp32 values of a BF16 or F32 tensor.
  std::vector<float> values(const std::string& name) const {
    const TensorRef t = ck.get(name);
    std::vector<float> v(static_cast<size_t>(t.info->numel()));
    for (size_t i = 0; i < v.size(); ++i) {
      if (t.info->dtype == DType::BF16) {
        uint16_t b;
        std::memcpy(&b, t.data + 2 * i, 2);
        v[i] = bf16_to_f32(b);
      } else {
        std::memcpy(&v[i], t.data + 4 * i, 4);
      }
    }
    return v;
  }
  // A plain matrix: bf16 in place, or fp32 (a router kept in fp32) as it is.
  LinearWeight plain(const std::string& name) {
    const TensorRef t = ck.get(name);
    if (t.info->dtype == DType::F32 && reinterpret_cast<uintptr_t>(t.data) % 4 == 0)
      return {kernels::WeightFormat::f32, t.data, nullptr, t.info->shape[0], t.info->shape[1]};
    return {kernels::WeightFormat::bf16, bf16(name), nullptr, t.info->shape[0], t.info->shape[1]};
  }
  // The linear `stem`: FP8 codes + e8m0 block scales, or bf16.
  LinearWeight linear(const std::string& stem) {
    if (!c.fp8) return plain(stem + ".weight");
    const TensorRef t = ck.get(stem + ".weight");
    const TensorRef s = ck.get(stem + ".weight_scale_inv");
    const uint8_t* scale = s.data;
    if (s.info->dtype == DType::F32) {  // powers of two (check_checkpoint): the exponent byte
      uint8_t* e = own(static_cast<size_t>(s.info->numel()));
      for (int64_t i = 0; i < s.info->numel(); ++i) {
        float f;
        std::memcpy(&f, s.data + 4 * i, 4);
        e[i] = e8m0_ceil_from_f32(f);
      }
      scale = e;
    }
    return {kernels::WeightFormat::fp8, t.data, scale, t.info->shape[0], t.info->shape[1]};
  }
  SwigluWeights swiglu(const std::string& p) {
    return {linear(p + "gate_proj"), linear(p + "up_proj"), linear(p + "down_proj")};
  }

  // W_UKᵀ and W_UV per head from kv_b_proj [H·(nope+v), kv_lora] (bf16 of the dequantized values).
  void absorb(const LinearWeight& kv_b, MlaWeights& a) {
    const int64_t H = c.num_attention_heads, nope = c.qk_nope_head_dim, v = c.v_head_dim, L = c.kv_lora_rank;
    std::vector<float> row(static_cast<size_t>(L));
    for (int64_t h = 0; h < H; ++h) {
      auto* uk = reinterpret_cast<uint16_t*>(own(static_cast<size_t>(L * nope) * 2));
      auto* uv = reinterpret_cast<uint16_t*>(own(static_cast<size_t>(v * L) * 2));
      for (int64_t r = 0; r < nope + v; ++r) {
        kernels::dequant_row(kv_b, h * (nope + v) + r, row.data());
        for (int64_t k = 0; k < L; ++k) {
          const uint16_t b = f32_to_bf16(row[size_t(k)]);
          if (r < nope) uk[k * nope + r] = b;
          else uv[(r - nope) * L + k] = b;
        }
      }
      a.uk_t.push_back({kernels::WeightFormat::bf16, uk, nullptr, L, nope});
      a.uv.push_back({kernels::WeightFormat::bf16, uv, nullptr, v, L});
    }
  }

  DecoderWeights decoder(int64_t layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    DecoderWeights d;
    d.input_norm = values(p + "input_layernorm.weight");
    d.post_norm = values(p + "post_attention_layernorm.weight");
    const std::string s = p + "self_attn.";
    MlaWeights& a = d.attn;
    a.q_a = linear(s + "q_a_proj");
    a.q_a_norm = values(s + "q_a_layernorm.weight");
    a.q_b = linear(s + "q_b_proj");
    a.kv_a = linear(s + "kv_a_proj_with_mqa");
    a.kv_a_norm = values(s + "kv_a_layernorm.weight");
    a.o = linear(s + "o_proj");
    absorb(linear(s + "kv_b_proj"), a);
    a.has_indexer = c.full_indexer(layer);
    if (a.has_indexer) {
      const std::string x = s + "indexer.";
      a.indexer.wq_b = linear(x + "wq_b");
      a.indexer.wk = linear(x + "wk");
      a.indexer.weights_proj = plain(x + "weights_proj.weight");
      a.indexer.k_norm_weight = values(x + "k_norm.weight");
      a.indexer.k_norm_bias = values(x + "k_norm.bias");
    }
    const std::string m = p + "mlp.";
    d.dense = c.dense(layer);
    if (d.dense) {
      d.mlp = swiglu(m);
      return d;
    }
    d.moe.gate = plain(m + "gate.weight");
    d.moe.bias = values(m + "gate.e_score_correction_bias");
    for (int64_t e = 0; e < c.n_routed_experts; ++e) d.moe.experts.push_back(swiglu(m + "experts." + std::to_string(e) + "."));
    d.moe.has_shared = c.n_shared_experts > 0;
    if (d.moe.has_shared) d.moe.shared = swiglu(m + "shared_experts.");
    return d;
  }
};

}  // namespace

void bind_weights(const Config& c, const SafetensorsCheckpoint& ckpt, bool with_mtp, ModelWeights& w) {
  Binder b{c, ckpt, w};
  w.embed = b.bf16("model.embed_tokens.weight");
  w.norm = b.values("model.norm.weight");
  w.head = b.plain("lm_head.weight");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) w.layers.push_back(b.decoder(l));
  w.has_mtp = with_mtp && c.num_nextn_predict_layers > 0;
  if (!w.has_mtp) return;
  const int64_t L = c.num_hidden_layers;
  const std::string p = "model.layers." + std::to_string(L) + ".";
  MtpWeights& m = w.mtp;
  m.layer = b.decoder(L);
  m.enorm = b.values(p + "enorm.weight");
  m.hnorm = b.values(p + "hnorm.weight");
  m.final_norm = b.values(p + "shared_head.norm.weight");
  m.eh_proj = b.plain(p + "eh_proj.weight");
  m.embed = ckpt.find(p + "embed_tokens.weight") ? b.bf16(p + "embed_tokens.weight") : w.embed;
  m.head = ckpt.find(p + "shared_head.head.weight") ? b.plain(p + "shared_head.head.weight") : w.head;
}

}  // namespace strata::dsa
