#include "models/deepseek_v4/weights.h"

#include "core/error.h"
#include "core/numfmt.h"

namespace strata::dsv4 {

namespace {

struct Binder {
  const SafetensorsCheckpoint& ck;
  std::list<std::vector<uint8_t>>* realigned;

  // The tensor's data, copied to aligned storage when its offset is not a multiple of `align`.
  const void* aligned(const TensorRef& t, size_t align) const {
    if (reinterpret_cast<uintptr_t>(t.data) % align == 0) return t.data;
    auto& v = realigned->emplace_back(t.data, t.data + t.info->nbytes);
    return v.data();  // operator new storage: aligned for any scalar type
  }

  TensorRef get(const std::string& name, DType dt, const std::vector<int64_t>& shape) const {
    TensorRef t = ck.get(name);
    if (t.info->dtype != dt || t.info->shape != shape)
      throw Error("tensor " + name + " is " + std::string(dtype_name(t.info->dtype)) + " " + t.info->shape_str() +
                  ", expected " + std::string(dtype_name(dt)));
    return t;
  }
  const float* f32(const std::string& n, const std::vector<int64_t>& s) const {
    return static_cast<const float*>(aligned(get(n, DType::F32, s), 4));
  }
  const uint16_t* bf16(const std::string& n, const std::vector<int64_t>& s) const {
    return static_cast<const uint16_t*>(aligned(get(n, DType::BF16, s), 2));
  }
  LinearWeight plain(const std::string& stem, int64_t out, int64_t in) const {
    return {kernels::WeightFormat::bf16, bf16(stem + ".weight", {out, in}), nullptr, out, in};
  }
  LinearWeight fp8(const std::string& stem, int64_t out, int64_t in) const {
    auto w = get(stem + ".weight", DType::F8_E4M3, {out, in});
    auto s = get(stem + ".scale", DType::F8_E8M0, {(out + 127) / 128, (in + 127) / 128});
    return {kernels::WeightFormat::fp8, w.data, s.data, out, in};
  }
  LinearWeight fp4(const std::string& stem, int64_t out, int64_t in) const {
    auto w = get(stem + ".weight", DType::I8, {out, in / 2});
    auto s = get(stem + ".scale", DType::F8_E8M0, {out, in / 32});
    return {kernels::WeightFormat::fp4, w.data, s.data, out, in};
  }
  CompressorWeights compressor(const std::string& p, int64_t ratio, int64_t hd, int64_t d) const {
    const int64_t coff = ratio == 4 ? 2 : 1;
    CompressorWeights w;
    w.wkv = plain(p + "wkv", coff * hd, d);
    w.wgate = plain(p + "wgate", coff * hd, d);
    w.ape = f32(p + "ape", {ratio, coff * hd});
    w.norm = bf16(p + "norm.weight", {hd});
    return w;
  }
};

LayerWeights bind_layer(const Binder& b, const SafetensorsCheckpoint& ck, const Config& c, const std::string& p, int64_t L) {
  const int64_t d = c.hidden_size, V = c.vocab_size, hc = c.hc_mult, H = c.num_attention_heads, hd = c.head_dim;
  const int64_t G = c.o_groups, ol = c.o_lora_rank, ql = c.q_lora_rank, mi = c.moe_intermediate_size;
  const int64_t E = c.n_routed_experts, mix = c.mix_hc();
  LayerWeights lw;
  lw.layer = L;
  lw.hc_attn = {b.f32(p + "hc_attn_fn", {mix, hc * d}), b.f32(p + "hc_attn_base", {mix}), b.f32(p + "hc_attn_scale", {3})};
  lw.hc_ffn = {b.f32(p + "hc_ffn_fn", {mix, hc * d}), b.f32(p + "hc_ffn_base", {mix}), b.f32(p + "hc_ffn_scale", {3})};
  lw.attn_norm = b.bf16(p + "attn_norm.weight", {d});
  lw.ffn_norm = b.bf16(p + "ffn_norm.weight", {d});

  AttentionWeights& a = lw.attn;
  const std::string ap = p + "attn.";
  a.attn_sink = b.f32(ap + "attn_sink", {H});
  a.wq_a = b.fp8(ap + "wq_a", ql, d);
  a.q_norm = b.bf16(ap + "q_norm.weight", {ql});
  a.wq_b = b.fp8(ap + "wq_b", H * hd, ql);
  a.wkv = b.fp8(ap + "wkv", hd, d);
  a.kv_norm = b.bf16(ap + "kv_norm.weight", {hd});
  a.wo_b = b.fp8(ap + "wo_b", d, G * ol);
  a.wo_a = b.fp8(ap + "wo_a", G * ol, H * hd / G);
  a.wo_a.act_quant = false;
  if (!wo_a_fp8_is_exact(a.wo_a, ol)) a.wo_a_bf16 = bf16_copy(a.wo_a);
  const int64_t ratio = c.compress_ratio(L);
  if (ratio > 0) a.compressor = b.compressor(ap + "compressor.", ratio, hd, d);
  if (ratio == 4) {
    const int64_t ih = c.index_n_heads, id = c.index_head_dim;
    a.indexer.wq_b = b.fp8(ap + "indexer.wq_b", ih * id, ql);
    a.indexer.weights_proj = b.plain(ap + "indexer.weights_proj", ih, d);
    a.indexer.compressor = b.compressor(ap + "indexer.compressor.", ratio, id, d);
  }

  MoeWeights& f = lw.ffn;
  const std::string fp = p + "ffn.";
  f.gate = b.plain(fp + "gate", E, d);
  if (c.is_hash_layer(L)) {
    TensorRef t = ck.get(fp + "gate.tid2eid");
    if ((t.info->dtype != DType::I64 && t.info->dtype != DType::I32) ||
        t.info->shape != std::vector<int64_t>{V, c.num_experts_per_tok})
      throw Error("tensor " + fp + "gate.tid2eid must be I64/I32 [vocab, experts_per_tok]");
    f.tid2eid = t.data;
    f.tid2eid_i64 = t.info->dtype == DType::I64;
  } else {
    f.bias = b.f32(fp + "gate.bias", {E});
  }
  f.experts.resize(size_t(E));
  for (int64_t e = 0; e < E; ++e) {
    const std::string ep = fp + "experts." + std::to_string(e) + ".";
    auto lin = [&](const char* n, int64_t o, int64_t i) { return c.experts_fp4() ? b.fp4(ep + n, o, i) : b.fp8(ep + n, o, i); };
    f.experts[size_t(e)] = {lin("w1", mi, d), lin("w2", d, mi), lin("w3", mi, d)};
  }
  f.shared = {b.fp8(fp + "shared_experts.w1", mi, d), b.fp8(fp + "shared_experts.w2", d, mi),
              b.fp8(fp + "shared_experts.w3", mi, d)};
  return lw;
}

}  // namespace

ModelWeights bind_weights(const Config& c, const SafetensorsCheckpoint& ck) {
  ModelWeights m;
  Binder b{ck, &m.realigned};
  const int64_t d = c.hidden_size, V = c.vocab_size, hc = c.hc_mult;
  m.embed = b.bf16("embed.weight", {V, d});
  m.head = b.plain("head", V, d);
  m.norm = b.bf16("norm.weight", {d});
  m.hc_head = {b.f32("hc_head_fn", {hc, hc * d}), b.f32("hc_head_base", {hc}), b.f32("hc_head_scale", {1})};
  m.layers.resize(size_t(c.num_hidden_layers));
  for (int64_t L = 0; L < c.num_hidden_layers; ++L)
    m.layers[size_t(L)] = bind_layer(b, ck, c, "layers." + std::to_string(L) + ".", L);
  for (int64_t j = 0; j < c.num_nextn_predict_layers; ++j) {
    const std::string p = "mtp." + std::to_string(j) + ".";
    if (!ck.find(p + "e_proj.weight")) break;
    MtpWeights t;
    t.block = bind_layer(b, ck, c, p, c.num_hidden_layers + j);
    t.e_proj = b.fp8(p + "e_proj", d, d);
    t.h_proj = b.fp8(p + "h_proj", d, d);
    t.enorm = b.bf16(p + "enorm.weight", {d});
    t.hnorm = b.bf16(p + "hnorm.weight", {d});
    t.norm = b.bf16(p + "norm.weight", {d});
    t.hc_head = {b.f32(p + "hc_head_fn", {hc, hc * d}), b.f32(p + "hc_head_base", {hc}), b.f32(p + "hc_head_scale", {1})};
    m.mtp.push_back(std::move(t));
  }
  return m;
}

HugeBuffer<uint16_t> bf16_copy(const LinearWeight& w) {
  HugeBuffer<uint16_t> out(size_t(w.out * w.in));
  std::vector<float> row(static_cast<size_t>(w.in));
  for (int64_t r = 0; r < w.out; ++r) {
    kernels::dequant_row(w, r, row.data());
    for (int64_t k = 0; k < w.in; ++k) out[size_t(r * w.in + k)] = f32_to_bf16(row[size_t(k)]);
  }
  return out;
}

bool wo_a_fp8_is_exact(const LinearWeight& wo_a, int64_t group_rows) {
  if (wo_a.format != kernels::WeightFormat::fp8 || group_rows % 128 != 0) return false;
  const int64_t scales = ((wo_a.out + 127) / 128) * ((wo_a.in + 127) / 128);
  for (int64_t i = 0; i < scales; ++i)
    if (wo_a.scale[i] < 3 || wo_a.scale[i] == 255) return false;
  const auto* q = static_cast<const uint8_t*>(wo_a.data);
  for (int64_t i = 0; i < wo_a.out * wo_a.in; ++i)
    if ((q[i] & 0x7F) == 0x7F) return false;
  return true;
}

}  // namespace strata::dsv4
