#include "models/deepseek_v4/tensors.h"

#include <cstring>
#include <unordered_set>

#include "core/error.h"
#include "io/safetensors.h"

namespace strata::dsv4 {

const char* component_name(Component c) {
  switch (c) {
    case Component::embedding: return "embedding";
    case Component::head: return "head";
    case Component::attention: return "attention";
    case Component::compressor: return "compressor";
    case Component::indexer: return "indexer";
    case Component::routed_expert: return "routed_experts";
    case Component::shared_expert: return "shared_expert";
    case Component::router: return "router";
    case Component::mhc: return "mhc";
    case Component::norm: return "norm";
    case Component::mtp_proj: return "mtp_proj";
  }
  return "?";
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Builder {
  const Config& c;
  std::vector<ExpectedTensor> out;
  int64_t layer = -1;
  bool mtp = false;
  int64_t expert = -1;

  void plain(std::string name, DType t, std::vector<int64_t> shape, Component comp) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    out.push_back({std::move(name), t, std::move(shape), comp, Storage::plain, layer, expert, mtp, n});
  }
  // FP8 linear: e4m3 weight [out, in] and e8m0 scales per 128x128 block.
  void fp8(const std::string& stem, int64_t rows, int64_t cols, Component comp) {
    const int64_t br = c.quantization_config.weight_block_rows, bc = c.quantization_config.weight_block_cols;
    out.push_back({stem + ".weight", DType::F8_E4M3, {rows, cols}, comp, Storage::fp8_weight, layer, expert, mtp, rows * cols});
    out.push_back({stem + ".scale", DType::F8_E8M0, {ceil_div(rows, br), ceil_div(cols, bc)}, comp, Storage::scale, layer, expert, mtp, 0});
  }
  // MXFP4 linear: two e2m1 per int8 byte [out, in/2], e8m0 scale per 32 inputs.
  void fp4(const std::string& stem, int64_t rows, int64_t cols, Component comp) {
    out.push_back({stem + ".weight", DType::I8, {rows, cols / 2}, comp, Storage::fp4_weight, layer, expert, mtp, rows * cols});
    out.push_back({stem + ".scale", DType::F8_E8M0, {rows, cols / 32}, comp, Storage::scale, layer, expert, mtp, 0});
  }
  void expert_linear(const std::string& stem, int64_t rows, int64_t cols) {
    if (c.experts_fp4()) fp4(stem, rows, cols, Component::routed_expert);
    else fp8(stem, rows, cols, Component::routed_expert);
  }

  void compressor(const std::string& p, int64_t ratio, int64_t head_dim, Component comp) {
    const int64_t coff = ratio == 4 ? 2 : 1;  // ratio 4 overlaps: two halves of the projection
    plain(p + "ape", DType::F32, {ratio, coff * head_dim}, comp);
    plain(p + "wkv.weight", DType::BF16, {coff * head_dim, c.hidden_size}, comp);
    plain(p + "wgate.weight", DType::BF16, {coff * head_dim, c.hidden_size}, comp);
    plain(p + "norm.weight", DType::BF16, {head_dim}, comp);
  }

  void block(const std::string& p, int64_t L) {
    layer = L;
    const int64_t d = c.hidden_size, hc = c.hc_mult, mix = c.mix_hc();
    const int64_t H = c.num_attention_heads, hd = c.head_dim;
    for (const char* s : {"attn", "ffn"}) {
      plain(p + "hc_" + s + "_fn", DType::F32, {mix, hc * d}, Component::mhc);
      plain(p + "hc_" + s + "_base", DType::F32, {mix}, Component::mhc);
      plain(p + "hc_" + s + "_scale", DType::F32, {3}, Component::mhc);
    }
    plain(p + "attn_norm.weight", DType::BF16, {d}, Component::norm);
    plain(p + "ffn_norm.weight", DType::BF16, {d}, Component::norm);
    const std::string a = p + "attn.";
    plain(a + "attn_sink", DType::F32, {H}, Component::attention);
    fp8(a + "wq_a", c.q_lora_rank, d, Component::attention);
    plain(a + "q_norm.weight", DType::BF16, {c.q_lora_rank}, Component::norm);
    fp8(a + "wq_b", H * hd, c.q_lora_rank, Component::attention);
    fp8(a + "wkv", hd, d, Component::attention);
    plain(a + "kv_norm.weight", DType::BF16, {hd}, Component::norm);
    fp8(a + "wo_a", c.o_groups * c.o_lora_rank, H * hd / c.o_groups, Component::attention);
    fp8(a + "wo_b", d, c.o_groups * c.o_lora_rank, Component::attention);
    const int64_t ratio = c.compress_ratio(L);
    if (ratio > 0) compressor(a + "compressor.", ratio, hd, Component::compressor);
    if (ratio == 4) {
      fp8(a + "indexer.wq_b", c.index_n_heads * c.index_head_dim, c.q_lora_rank, Component::indexer);
      plain(a + "indexer.weights_proj.weight", DType::BF16, {c.index_n_heads, d}, Component::indexer);
      compressor(a + "indexer.compressor.", ratio, c.index_head_dim, Component::indexer);
    }
    const std::string f = p + "ffn.";
    plain(f + "gate.weight", DType::BF16, {c.n_routed_experts, d}, Component::router);
    if (!mtp && c.is_hash_layer(L))
      plain(f + "gate.tid2eid", DType::I64, {c.vocab_size, c.num_experts_per_tok}, Component::router);
    else
      plain(f + "gate.bias", DType::F32, {c.n_routed_experts}, Component::router);
    const int64_t mi = c.moe_intermediate_size;
    for (int64_t e = 0; e < c.n_routed_experts; ++e) {
      expert = e;
      const std::string x = f + "experts." + std::to_string(e) + ".";
      expert_linear(x + "w1", mi, d);
      expert_linear(x + "w2", d, mi);
      expert_linear(x + "w3", mi, d);
    }
    expert = -1;
    fp8(f + "shared_experts.w1", mi, d, Component::shared_expert);
    fp8(f + "shared_experts.w2", d, mi, Component::shared_expert);
    fp8(f + "shared_experts.w3", mi, d, Component::shared_expert);
  }
};

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const Config& c) {
  Builder b{c, {}};
  const int64_t d = c.hidden_size, hc = c.hc_mult;
  b.plain("embed.weight", DType::BF16, {c.vocab_size, d}, Component::embedding);
  b.plain("head.weight", DType::BF16, {c.vocab_size, d}, Component::head);
  b.plain("norm.weight", DType::BF16, {d}, Component::norm);
  b.plain("hc_head_fn", DType::F32, {hc, hc * d}, Component::mhc);
  b.plain("hc_head_base", DType::F32, {hc}, Component::mhc);
  b.plain("hc_head_scale", DType::F32, {1}, Component::mhc);
  for (int64_t L = 0; L < c.num_hidden_layers; ++L) b.block("layers." + std::to_string(L) + ".", L);
  for (int64_t i = 0; i < c.num_nextn_predict_layers; ++i) {
    const std::string p = "mtp." + std::to_string(i) + ".";
    const int64_t L = c.num_hidden_layers + i;
    b.mtp = true;
    b.block(p, L);
    b.fp8(p + "e_proj", d, d, Component::mtp_proj);
    b.fp8(p + "h_proj", d, d, Component::mtp_proj);
    b.plain(p + "enorm.weight", DType::BF16, {d}, Component::norm);
    b.plain(p + "hnorm.weight", DType::BF16, {d}, Component::norm);
    b.plain(p + "norm.weight", DType::BF16, {d}, Component::norm);
    b.plain(p + "hc_head_fn", DType::F32, {hc, hc * d}, Component::mhc);
    b.plain(p + "hc_head_base", DType::F32, {hc}, Component::mhc);
    b.plain(p + "hc_head_scale", DType::F32, {1}, Component::mhc);
  }
  return std::move(b.out);
}

namespace {
std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
}  // namespace

CheckReport check_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt) {
  CheckReport r;
  std::unordered_set<std::string> used;
  for (const auto& e : expected_tensors(c)) {
    used.insert(e.name);
    const TensorInfo* t = ckpt.find(e.name);
    const std::string want = std::string(dtype_name(e.dtype)) + " " + shape_str(e.shape);
    if (!t) {
      r.missing.push_back(e.name + " (" + want + ")");
      continue;
    }
    if (t->dtype != e.dtype || t->shape != e.shape) {
      r.mismatched.push_back(e.name + ": found " + std::string(dtype_name(t->dtype)) + " " + t->shape_str() +
                             ", expected " + want);
      continue;
    }
    if (e.name.size() > 7 && e.name.compare(e.name.size() - 7, 7, "tid2eid") == 0) {
      // safetensors data offsets need not be 8-aligned: read each entry with memcpy
      const uint8_t* raw = ckpt.ref(*t).data;
      for (int64_t i = 0, n = t->numel(); i < n; ++i) {
        int64_t id;
        std::memcpy(&id, raw + 8 * i, 8);
        if (id < 0 || id >= c.n_routed_experts) {
          r.mismatched.push_back(e.name + ": entry " + std::to_string(i) + " = " + std::to_string(id) +
                                 " is not an expert id in [0, " + std::to_string(c.n_routed_experts) + ")");
          break;
        }
      }
    }
  }
  for (const TensorInfo* t : ckpt.all())
    if (!used.count(t->name)) r.unexpected.push_back(t->name);
  return r;
}

void require_valid_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt, const std::string& dir) {
  CheckReport r = check_checkpoint(c, ckpt);
  if (!r.ok()) throw Error(dir + ": checkpoint does not match config.json: " + r.summary());
}

}  // namespace strata::dsv4
