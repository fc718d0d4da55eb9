#include "models/synthetic_hybrid/tensors.h"

#include <unordered_set>

#include "io/safetensors.h"

namespace strata::hybrid {

std::string layer_prefix(int64_t layer) { return "model.layers." + std::to_string(layer) + "."; }

namespace {

void decoder_layer(std::vector<ExpectedTensor>& out, const Config& c, const std::string& p, bool linear, bool mtp) {
  const int64_t d = c.hidden_size;
  auto add = [&](const std::string& n, DType t, std::vector<int64_t> s) { out.push_back({p + n, t, std::move(s), mtp}); };
  add("input_layernorm.weight", DType::BF16, {d});
  add("post_attention_layernorm.weight", DType::BF16, {d});
  if (linear) {
    const int64_t hv = c.linear_num_value_heads, dv = c.linear_value_head_dim;
    add("linear_attn.in_proj_qkv.weight", DType::BF16, {c.conv_dim(), d});
    add("linear_attn.in_proj_z.weight", DType::BF16, {hv * dv, d});
    add("linear_attn.in_proj_b.weight", DType::BF16, {hv, d});
    add("linear_attn.in_proj_a.weight", DType::BF16, {hv, d});
    add("linear_attn.conv1d.weight", DType::BF16, {c.conv_dim(), 1, c.linear_conv_kernel_dim});
    add("linear_attn.A_log", DType::F32, {hv});
    add("linear_attn.dt_bias", DType::F32, {hv});
    add("linear_attn.norm.weight", DType::BF16, {dv});
    add("linear_attn.out_proj.weight", DType::BF16, {d, hv * dv});
  } else {
    const int64_t hd = c.head_dim;
    add("self_attn.q_proj.weight", DType::BF16, {c.num_attention_heads * hd, d});
    add("self_attn.k_proj.weight", DType::BF16, {c.num_key_value_heads * hd, d});
    add("self_attn.v_proj.weight", DType::BF16, {c.num_key_value_heads * hd, d});
    add("self_attn.o_proj.weight", DType::BF16, {d, c.num_attention_heads * hd});
  }
  add("mlp.gate_proj.weight", DType::BF16, {c.intermediate_size, d});
  add("mlp.up_proj.weight", DType::BF16, {c.intermediate_size, d});
  add("mlp.down_proj.weight", DType::BF16, {d, c.intermediate_size});
}

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const Config& c) {
  std::vector<ExpectedTensor> out;
  const int64_t d = c.hidden_size;
  out.push_back({"model.embed_tokens.weight", DType::BF16, {c.vocab_size, d}});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) decoder_layer(out, c, layer_prefix(l), c.is_linear(l), false);
  out.push_back({"model.norm.weight", DType::BF16, {d}});
  out.push_back({"lm_head.weight", DType::BF16, {c.vocab_size, d}});
  if (c.num_nextn_predict_layers > 0) {
    out.push_back({"mtp.fc.weight", DType::BF16, {d, 2 * d}, true});
    out.push_back({"mtp.pre_fc_norm_embedding.weight", DType::BF16, {d}, true});
    out.push_back({"mtp.pre_fc_norm_hidden.weight", DType::BF16, {d}, true});
    decoder_layer(out, c, kMtpLayerPrefix, false, true);
    out.push_back({"mtp.norm.weight", DType::BF16, {d}, true});
  }
  return out;
}

models::CheckReport check_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt) {
  models::CheckReport r;
  std::unordered_set<std::string> used;
  for (const auto& e : expected_tensors(c)) {
    used.insert(e.name);
    const TensorInfo* t = ckpt.find(e.name);
    std::string shape = "[";
    for (size_t i = 0; i < e.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(e.shape[i]);
    const std::string want = std::string(dtype_name(e.dtype)) + " " + shape + "]";
    if (!t) r.missing.push_back(e.name + " (" + want + ")");
    else if (t->dtype != e.dtype || t->shape != e.shape)
      r.mismatched.push_back(e.name + ": found " + std::string(dtype_name(t->dtype)) + " " + t->shape_str() +
                             ", expected " + want);
  }
  for (const TensorInfo* t : ckpt.all())
    if (!used.count(t->name)) r.unexpected.push_back(t->name);
  return r;
}

}  // namespace strata::hybrid
