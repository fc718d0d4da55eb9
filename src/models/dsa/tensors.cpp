#include "models/dsa/tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "io/safetensors.h"

namespace strata::dsa {

const char* part_name(Part p) {
  switch (p) {
    case Part::embedding: return "embedding";
    case Part::head: return "head";
    case Part::attention: return "attention";
    case Part::indexer: return "indexer";
    case Part::dense_mlp: return "dense_mlp";
    case Part::router: return "router";
    case Part::routed_expert: return "routed_experts";
    case Part::shared_expert: return "shared_expert";
    case Part::norm: return "norm";
    case Part::mtp_proj: return "mtp_proj";
  }
  return "?";
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Builder {
  const Config& c;
  std::vector<ExpectedTensor> out;
  int64_t layer = -1;

  void plain(const std::string& name, std::vector<int64_t> shape, Part p, std::vector<DType> t = {DType::BF16}) {
    ExpectedTensor e;
    e.name = name;
    e.dtypes = std::move(t);
    e.shape = std::move(shape);
    e.part = p;
    e.layer = layer;
    out.push_back(std::move(e));
  }
  void norm(const std::string& name, int64_t n) { plain(name, {n}, Part::norm, {DType::BF16, DType::F32}); }
  // A linear [rows, cols]: FP8 codes + block scales, or bf16.
  void linear(const std::string& stem, int64_t rows, int64_t cols, Part p) {
    if (!c.fp8) return plain(stem + ".weight", {rows, cols}, p);
    plain(stem + ".weight", {rows, cols}, p, {DType::F8_E4M3});
    out.back().fp8_weight = true;
    plain(stem + ".weight_scale_inv", {ceil_div(rows, 128), ceil_div(cols, 128)}, p, {DType::F32, DType::F8_E8M0});
    out.back().scale = true;
  }
  void swiglu(const std::string& p, int64_t inter, Part part) {
    const int64_t d = c.hidden_size;
    linear(p + "gate_proj", inter, d, part);
    linear(p + "up_proj", inter, d, part);
    linear(p + "down_proj", d, inter, part);
  }

  void decoder(int64_t L) {
    layer = L;
    const std::string p = "model.layers." + std::to_string(L) + ".";
    const int64_t d = c.hidden_size, H = c.num_attention_heads;
    norm(p + "input_layernorm.weight", d);
    norm(p + "post_attention_layernorm.weight", d);
    const std::string a = p + "self_attn.";
    linear(a + "q_a_proj", c.q_lora_rank, d, Part::attention);
    norm(a + "q_a_layernorm.weight", c.q_lora_rank);
    linear(a + "q_b_proj", H * c.qk_head_dim(), c.q_lora_rank, Part::attention);
    linear(a + "kv_a_proj_with_mqa", c.kv_lora_rank + c.qk_rope_head_dim, d, Part::attention);
    norm(a + "kv_a_layernorm.weight", c.kv_lora_rank);
    linear(a + "kv_b_proj", H * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank, Part::attention);
    linear(a + "o_proj", d, H * c.v_head_dim, Part::attention);
    if (c.full_indexer(L)) {
      const std::string x = a + "indexer.";
      linear(x + "wq_b", c.index_n_heads * c.index_head_dim, c.q_lora_rank, Part::indexer);
      linear(x + "wk", c.index_head_dim, d, Part::indexer);
      plain(x + "k_norm.weight", {c.index_head_dim}, Part::indexer, {DType::BF16, DType::F32});
      plain(x + "k_norm.bias", {c.index_head_dim}, Part::indexer, {DType::BF16, DType::F32});
      plain(x + "weights_proj.weight", {c.index_n_heads, d}, Part::indexer, {DType::BF16, DType::F32});
    }
    const std::string m = p + "mlp.";
    if (c.dense(L)) return swiglu(m, c.intermediate_size, Part::dense_mlp);
    plain(m + "gate.weight", {c.n_routed_experts, d}, Part::router, {DType::BF16, DType::F32});
    plain(m + "gate.e_score_correction_bias", {c.n_routed_experts}, Part::router, {DType::F32, DType::BF16});
    for (int64_t e = 0; e < c.n_routed_experts; ++e)
      swiglu(m + "experts." + std::to_string(e) + ".", c.moe_intermediate_size, Part::routed_expert);
    if (c.n_shared_experts > 0) swiglu(m + "shared_experts.", c.n_shared_experts * c.moe_intermediate_size, Part::shared_expert);
  }
};

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const Config& c) {
  Builder b{c, {}};
  const int64_t d = c.hidden_size;
  b.plain("model.embed_tokens.weight", {c.vocab_size, d}, Part::embedding);
  for (int64_t L = 0; L < c.num_hidden_layers; ++L) b.decoder(L);
  b.layer = -1;
  b.norm("model.norm.weight", d);
  b.plain("lm_head.weight", {c.vocab_size, d}, Part::head);
  for (int64_t L = c.num_hidden_layers; L < c.layers_with_mtp(); ++L) {
    b.decoder(L);
    const std::string p = "model.layers." + std::to_string(L) + ".";
    b.norm(p + "enorm.weight", d);
    b.norm(p + "hnorm.weight", d);
    b.plain(p + "eh_proj.weight", {d, 2 * d}, Part::mtp_proj);
    b.norm(p + "shared_head.norm.weight", d);
    b.plain(p + "embed_tokens.weight", {c.vocab_size, d}, Part::embedding);
    b.out.back().optional = true;
    b.plain(p + "shared_head.head.weight", {c.vocab_size, d}, Part::head);
    b.out.back().optional = true;
  }
  return std::move(b.out);
}

bool has_mtp_tensors(const Config& c, const SafetensorsCheckpoint& ckpt) {
  const std::string p = "model.layers." + std::to_string(c.num_hidden_layers) + ".";
  for (const TensorInfo* t : ckpt.all())
    if (t->name.rfind(p, 0) == 0) return true;
  return false;
}

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// The first block scale that is not a positive power of two, or -1.
int64_t bad_scale(const SafetensorsCheckpoint& ckpt, const TensorInfo& t) {
  if (t.dtype != DType::F32) return -1;  // e8m0 bytes are powers of two by construction
  const uint8_t* raw = ckpt.ref(t).data;
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    float v;
    std::memcpy(&v, raw + 4 * i, 4);
    int e;
    if (!(v > 0) || !std::isfinite(v) || std::frexp(v, &e) != 0.5f) return i;
  }
  return -1;
}

}  // namespace

models::CheckReport check_checkpoint(const Config& config, const SafetensorsCheckpoint& ckpt) {
  models::CheckReport r;
  Config c = config;
  if (!has_mtp_tensors(c, ckpt)) c.num_nextn_predict_layers = 0;  // no MTP layer at all is allowed; half of one is not
  std::unordered_set<std::string> used;
  for (const auto& e : expected_tensors(c)) {
    used.insert(e.name);
    const TensorInfo* t = ckpt.find(e.name);
    const std::string want = std::string(dtype_name(e.dtypes[0])) + " " + shape_str(e.shape);
    if (!t) {
      if (!e.optional) r.missing.push_back(e.name + " (" + want + ")");
      continue;
    }
    if (std::find(e.dtypes.begin(), e.dtypes.end(), t->dtype) == e.dtypes.end() || t->shape != e.shape) {
      r.mismatched.push_back(e.name + ": found " + std::string(dtype_name(t->dtype)) + " " + t->shape_str() +
                             ", expected " + want);
      continue;
    }
    if (e.scale)
      if (const int64_t i = bad_scale(ckpt, *t); i >= 0)
        r.mismatched.push_back(e.name + ": block scale " + std::to_string(i) +
                               " is not a positive power of two (scale_fmt ue8m0)");
  }
  for (const TensorInfo* t : ckpt.all())
    if (!used.count(t->name)) r.unexpected.push_back(t->name);
  return r;
}

}  // namespace strata::dsa
