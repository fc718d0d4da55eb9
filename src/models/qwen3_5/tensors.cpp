#include "models/qwen3_5/tensors.h"

#include <algorithm>
#include <unordered_set>

#include "io/safetensors.h"

namespace strata::qwen35 {

namespace {

bool is_vision(const std::string& n) { return n.rfind("model.visual.", 0) == 0; }

void decoder_layer(std::vector<ExpectedTensor>& out, const Config& c, const std::string& p, bool linear, bool mtp,
                   bool fused) {
  const int64_t d = c.hidden_size;
  auto add = [&](const std::string& n, std::vector<int64_t> s, std::vector<DType> t = {DType::BF16},
                 bool expert = false) { out.push_back({p + n, std::move(t), std::move(s), mtp, expert}); };
  add("input_layernorm.weight", {d});
  add("post_attention_layernorm.weight", {d});
  if (linear) {
    const int64_t hv = c.linear_num_value_heads, dv = c.linear_value_head_dim;
    add("linear_attn.in_proj_qkv.weight", {c.conv_dim(), d});
    add("linear_attn.in_proj_z.weight", {hv * dv, d});
    add("linear_attn.in_proj_b.weight", {hv, d});
    add("linear_attn.in_proj_a.weight", {hv, d});
    add("linear_attn.conv1d.weight", {c.conv_dim(), 1, c.linear_conv_kernel_dim});
    add("linear_attn.A_log", {hv}, {DType::F32, DType::BF16});
    add("linear_attn.dt_bias", {hv}, {DType::F32, DType::BF16});
    add("linear_attn.norm.weight", {dv}, {DType::BF16, DType::F32});
    add("linear_attn.out_proj.weight", {d, hv * dv});
  } else {
    const int64_t H = c.num_attention_heads, kv = c.num_key_value_heads, D = c.head_dim;
    add("self_attn.q_proj.weight", {2 * H * D, d});
    add("self_attn.k_proj.weight", {kv * D, d});
    add("self_attn.v_proj.weight", {kv * D, d});
    add("self_attn.o_proj.weight", {d, H * D});
    add("self_attn.q_norm.weight", {D});
    add("self_attn.k_norm.weight", {D});
  }
  if (!c.moe()) {
    add("mlp.gate_proj.weight", {c.intermediate_size, d});
    add("mlp.up_proj.weight", {c.intermediate_size, d});
    add("mlp.down_proj.weight", {d, c.intermediate_size});
    return;
  }
  const int64_t E = c.num_experts, I = c.moe_intermediate_size, S = c.shared_expert_intermediate_size;
  add("mlp.gate.weight", {E, d});
  if (fused) {
    add("mlp.experts.gate_up_proj", {E, 2 * I, d}, {DType::BF16}, true);
    add("mlp.experts.down_proj", {E, d, I}, {DType::BF16}, true);
  } else {
    for (int64_t e = 0; e < E; ++e) {
      const std::string x = "mlp.experts." + std::to_string(e) + ".";
      add(x + "gate_proj.weight", {I, d}, {DType::BF16}, true);
      add(x + "up_proj.weight", {I, d}, {DType::BF16}, true);
      add(x + "down_proj.weight", {d, I}, {DType::BF16}, true);
    }
  }
  add("mlp.shared_expert.gate_proj.weight", {S, d});
  add("mlp.shared_expert.up_proj.weight", {S, d});
  add("mlp.shared_expert.down_proj.weight", {d, S});
  add("mlp.shared_expert_gate.weight", {1, d});
}

}  // namespace

TensorLayout layout_of(const SafetensorsCheckpoint& ckpt) {
  TensorLayout t;
  if (!ckpt.find("model.language_model.embed_tokens.weight") && ckpt.find("model.embed_tokens.weight"))
    t.prefix = "model.";
  bool fused_main = false, per_expert_main = false;
  for (const TensorInfo* ti : ckpt.all()) {
    const std::string& n = ti->name;
    if (n.rfind(t.prefix + "layers.", 0) != 0) continue;
    if (n.find(".mlp.experts.gate_up_proj") != std::string::npos) fused_main = true;
    if (n.find(".mlp.experts.0.gate_proj.weight") != std::string::npos) per_expert_main = true;
  }
  t.fused_experts = fused_main || !per_expert_main;
  t.fused_mtp_experts = ckpt.find("mtp.layers.0.mlp.experts.gate_up_proj") != nullptr;
  return t;
}

std::vector<ExpectedTensor> expected_tensors(const Config& c, const TensorLayout& t) {
  std::vector<ExpectedTensor> out;
  const int64_t d = c.hidden_size;
  const std::string& p = t.prefix;
  out.push_back({p + "embed_tokens.weight", {DType::BF16}, {c.vocab_size, d}});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    decoder_layer(out, c, p + "layers." + std::to_string(l) + ".", c.is_linear(l), false, t.fused_experts);
  out.push_back({p + "norm.weight", {DType::BF16}, {d}});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {DType::BF16}, {c.vocab_size, d}});
  for (int64_t j = 0; j < c.mtp_num_hidden_layers; ++j) {
    out.push_back({"mtp.fc.weight", {DType::BF16}, {d, 2 * d}, true});
    out.push_back({"mtp.pre_fc_norm_embedding.weight", {DType::BF16}, {d}, true});
    out.push_back({"mtp.pre_fc_norm_hidden.weight", {DType::BF16}, {d}, true});
    decoder_layer(out, c, "mtp.layers." + std::to_string(j) + ".", false, true, t.fused_mtp_experts);
    out.push_back({"mtp.norm.weight", {DType::BF16}, {d}, true});
  }
  return out;
}

models::CheckReport check_checkpoint(const Config& config, const SafetensorsCheckpoint& ckpt) {
  models::CheckReport r;
  std::unordered_set<std::string> used;
  Config c = config;
  if (!has_mtp_tensors(ckpt)) c.mtp_num_hidden_layers = 0;  // no MTP block at all is allowed; half of one is not
  for (const auto& e : expected_tensors(c, layout_of(ckpt))) {
    used.insert(e.name);
    const TensorInfo* t = ckpt.find(e.name);
    std::string shape = "[";
    for (size_t i = 0; i < e.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(e.shape[i]);
    const std::string want = std::string(dtype_name(e.dtypes[0])) + " " + shape + "]";
    if (!t) r.missing.push_back(e.name + " (" + want + ")");
    else if (std::find(e.dtypes.begin(), e.dtypes.end(), t->dtype) == e.dtypes.end() || t->shape != e.shape)
      r.mismatched.push_back(e.name + ": found " + std::string(dtype_name(t->dtype)) + " " + t->shape_str() +
                             ", expected " + want);
  }
  for (const TensorInfo* t : ckpt.all())
    if (!used.count(t->name) && !is_vision(t->name)) r.unexpected.push_back(t->name);
  return r;
}

bool has_mtp_tensors(const SafetensorsCheckpoint& ckpt) {
  for (const TensorInfo* t : ckpt.all())
    if (t->name.rfind("mtp.", 0) == 0) return true;
  return false;
}

int64_t vision_tensors(const SafetensorsCheckpoint& ckpt) {
  int64_t n = 0;
  for (const TensorInfo* t : ckpt.all()) n += is_vision(t->name);
  return n;
}

}  // namespace strata::qwen35
