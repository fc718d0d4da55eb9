#include "models/gemma4/tensors.h"

#include <algorithm>
#include <unordered_set>

#include "io/safetensors.h"

namespace strata::gemma4 {

namespace {

bool is_tower(const std::string& n) {
  for (const char* p : {"model.vision_tower.", "model.audio_tower.", "model.embed_vision.", "model.embed_audio."})
    if (n.rfind(p, 0) == 0) return true;
  return false;
}

void decoder_layer(std::vector<ExpectedTensor>& out, const Config& c, int64_t l, const std::string& p) {
  const int64_t d = c.hidden_size, H = c.num_attention_heads, D = c.layer_head_dim(l), kv = c.layer_kv_heads(l);
  auto add = [&](const std::string& n, std::vector<int64_t> s, bool expert = false) {
    out.push_back({p + n, {DType::BF16}, std::move(s), expert});
  };
  for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                        "post_feedforward_layernorm"})
    add(std::string(n) + ".weight", {d});
  add("layer_scalar", {1});
  add("self_attn.q_proj.weight", {H * D, d});
  add("self_attn.q_norm.weight", {D});
  if (!c.kv_shared(l)) {
    add("self_attn.k_proj.weight", {kv * D, d});
    if (!c.k_eq_v(l)) add("self_attn.v_proj.weight", {kv * D, d});
    add("self_attn.k_norm.weight", {D});
  }
  add("self_attn.o_proj.weight", {d, H * D});
  const int64_t I = c.layer_intermediate(l);
  add("mlp.gate_proj.weight", {I, d});
  add("mlp.up_proj.weight", {I, d});
  add("mlp.down_proj.weight", {d, I});
  if (c.ple()) {
    const int64_t P = c.hidden_size_per_layer_input;
    add("per_layer_input_gate.weight", {P, d});
    add("per_layer_projection.weight", {d, P});
    add("post_per_layer_input_norm.weight", {d});
  }
  if (c.enable_moe_block) {
    const int64_t E = c.num_experts, Im = c.moe_intermediate_size;
    add("router.proj.weight", {E, d});
    add("router.scale", {d});
    add("router.per_expert_scale", {E});
    add("experts.gate_up_proj", {E, 2 * Im, d}, true);
    add("experts.down_proj", {E, d, Im}, true);
    for (const char* n : {"post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"})
      add(std::string(n) + ".weight", {d});
  }
}

}  // namespace

std::string prefix_of(const SafetensorsCheckpoint& ckpt) {
  if (!ckpt.find("model.language_model.embed_tokens.weight") && ckpt.find("model.embed_tokens.weight")) return "model.";
  return "model.language_model.";
}

std::vector<ExpectedTensor> expected_tensors(const Config& c, const std::string& p) {
  std::vector<ExpectedTensor> out;
  const int64_t d = c.hidden_size;
  out.push_back({p + "embed_tokens.weight", {DType::BF16}, {c.vocab_size, d}});
  if (c.ple()) {
    const int64_t LP = c.num_hidden_layers * c.hidden_size_per_layer_input;
    out.push_back({p + "embed_tokens_per_layer.weight", {DType::BF16}, {c.vocab_size_per_layer_input, LP}});
    out.push_back({p + "per_layer_model_projection.weight", {DType::BF16}, {LP, d}});
    out.push_back({p + "per_layer_projection_norm.weight", {DType::BF16}, {c.hidden_size_per_layer_input}});
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) decoder_layer(out, c, l, p + "layers." + std::to_string(l) + ".");
  out.push_back({p + "norm.weight", {DType::BF16}, {d}});
  return out;
}

models::CheckReport check_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt) {
  models::CheckReport r;
  std::unordered_set<std::string> used;
  const std::string p = prefix_of(ckpt);
  for (const auto& e : expected_tensors(c, p)) {
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
  for (const TensorInfo* t : ckpt.all()) {
    if (used.count(t->name) || is_tower(t->name)) continue;
    std::string why;
    for (int64_t l = 0; l < c.num_hidden_layers && why.empty(); ++l) {
      const std::string a = p + "layers." + std::to_string(l) + ".self_attn.";
      if (t->name == a + "v_proj.weight" && c.k_eq_v(l))
        why = " present (layer " + std::to_string(l) + " is a K=V full layer: attention_k_eq_v says it has no v_proj)";
      else if (c.kv_shared(l) && (t->name.rfind(a + "k", 0) == 0 || t->name.rfind(a + "v", 0) == 0))
        why = " present (layer " + std::to_string(l) + " reuses layer " + std::to_string(c.kv_source(l)) +
              "'s K/V: num_kv_shared_layers says it has no K/V weights)";
    }
    // A tensor the config says a layer cannot have contradicts it: an error, not an extra.
    (why.empty() ? r.unexpected : r.mismatched).push_back(t->name + why);
  }
  // A missing v_proj on a layer that needs one: say that attention_k_eq_v would explain it.
  for (auto& m : r.missing)
    if (m.find(".self_attn.v_proj.weight") != std::string::npos && !c.attention_k_eq_v)
      m += " — attention_k_eq_v is false, so every layer needs its own v_proj";
  return r;
}

int64_t tower_tensors(const SafetensorsCheckpoint& ckpt) {
  int64_t n = 0;
  for (const TensorInfo* t : ckpt.all()) n += is_tower(t->name);
  return n;
}

}  // namespace strata::gemma4
