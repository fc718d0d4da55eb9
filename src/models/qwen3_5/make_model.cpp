#include "models/qwen3_5/make_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/numfmt.h"
#include "io/safetensors.h"
#include "models/checkpoint_files.h"
#include "models/random_values.h"
#include "models/qwen3_5/tensors.h"

namespace strata::qwen35 {
namespace fs = std::filesystem;

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> n = {"qwen3.5-tiny", "qwen3.5-moe-tiny", "qwen3.5-0.8b", "qwen3.5-0.8b-4l"};
  return n;
}

Config preset_config(const std::string& name) {
  Config c;
  c.model_type = "qwen3_5_text";
  c.vocab_size = 248320;
  c.max_position_embeddings = 262144;
  c.rope_theta = 1e7;
  c.partial_rotary_factor = 0.25;
  c.mtp_num_hidden_layers = 1;
  c.strata_random_weights = true;
  if (name == "qwen3.5-tiny" || name == "qwen3.5-moe-tiny") {
    c.hidden_size = 128;
    c.num_hidden_layers = 4;
    c.layer_types = {"linear_attention", "linear_attention", "linear_attention", "full_attention"};
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 64;
    c.linear_num_key_heads = 2;
    c.linear_num_value_heads = 4;
    c.linear_key_head_dim = 64;
    c.linear_value_head_dim = 64;
    c.eos_token_ids = {151645};  // the tokenizer the presets ship (Qwen3's): <|im_end|>
    if (name == "qwen3.5-tiny") {
      c.intermediate_size = 256;
      c.tie_word_embeddings = true;
    } else {
      c.model_type = "qwen3_5_moe_text";
      c.num_experts = 8;
      c.num_experts_per_tok = 2;
      c.moe_intermediate_size = 64;
      c.shared_expert_intermediate_size = 128;
    }
    return c;
  }
  if (name == "qwen3.5-0.8b" || name == "qwen3.5-0.8b-4l") {
    c.hidden_size = 1024;
    c.num_hidden_layers = name == "qwen3.5-0.8b" ? 24 : 4;
    for (int64_t l = 0; l < c.num_hidden_layers; ++l)
      c.layer_types.push_back((l + 1) % 4 ? "linear_attention" : "full_attention");
    c.num_attention_heads = 8;
    c.num_key_value_heads = 2;
    c.head_dim = 256;
    c.linear_num_key_heads = 16;
    c.linear_num_value_heads = 16;
    c.linear_key_head_dim = 128;
    c.linear_value_head_dim = 128;
    c.intermediate_size = 3584;
    c.tie_word_embeddings = true;
    c.eos_token_ids = {248044};
    return c;
  }
  std::string list;
  for (const auto& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error("unknown Qwen3.5 preset '" + name + "' (known: " + list + ")");
}

namespace {

using models::name_key;

float unit(uint64_t key, uint64_t i) { return models::unit_value(key, i); }

bool ends(const std::string& n, const char* s) {
  const size_t k = std::strlen(s);
  return n.size() >= k && n.compare(n.size() - k, k, s) == 0;
}

// Values that keep activations O(1): linears ~ 1/sqrt(in) (uniform with that variance),
// zero-centred norm weights near 0 (the model adds 1), the gated norm's plain weight near 1,
// decays exp(A_log) in [1, 16] as the official initialisation.
float value(const ExpectedTensor& t, uint64_t key, uint64_t i) {
  const std::string& n = t.name;
  const float u = unit(key, i);
  if (ends(n, "A_log")) return std::log(1.0f + 15.0f * (u + 1.0f) / 2.0f);
  if (ends(n, "dt_bias")) return 0.5f * u;
  if (ends(n, "linear_attn.norm.weight")) return 1.0f + 0.1f * u;
  if (ends(n, "norm.weight") || ends(n, "layernorm.weight") || ends(n, "norm_embedding.weight") ||
      ends(n, "norm_hidden.weight"))
    return 0.1f * u;
  if (ends(n, "embed_tokens.weight")) return 1.7f * u;
  return 1.7f * u / std::sqrt(float(t.shape.back()));  // a linear [.., in], the conv [.., K]
}

}  // namespace

void make_model(const models::MakeModelRequest& q) {
  const Config c = preset_config(q.preset);
  const fs::path out(q.out_dir);
  auto all = expected_tensors(c, TensorLayout{});
  // Wider dtypes first, so every tensor starts aligned to its element size.
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return dtype_size(a.dtypes[0]) > dtype_size(b.dtypes[0]); });
  const int threads = q.threads > 0 ? q.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<models::TensorToWrite> writes;
  for (const auto& e : all) {
    const ExpectedTensor* t = &e;
    writes.push_back({t->name, t->dtypes[0], t->shape, [&q, t, threads](uint8_t* dst, uint64_t) {
                        const uint64_t key = name_key(q.seed, t->name);
                        const int64_t n = t->numel();
                        const bool f32 = t->dtypes[0] == DType::F32;
                        // Rows in parallel: every value depends only on (key, index), so any split writes the same bytes.
                        std::vector<std::thread> pool;
                        const int64_t per = (n + threads - 1) / threads;
                        for (int th = 0; th < threads; ++th)
                          pool.emplace_back([&, th] {
                            for (int64_t i = th * per; i < std::min(n, (th + 1) * per); ++i) {
                              const float v = value(*t, key, uint64_t(i));
                              if (f32) std::memcpy(dst + 4 * i, &v, 4);
                              else {
                                const uint16_t b = f32_to_bf16(v);
                                std::memcpy(dst + 2 * i, &b, 2);
                              }
                            }
                          });
                        for (auto& p : pool) p.join();
                      }});
  }
  models::write_sharded_checkpoint(q.out_dir, writes, q.shard_bytes, q.progress);
  models::write_text_file((out / "config.json").string(), to_json(c).dump(2) + "\n");
  nlohmann::ordered_json gen = {{"eos_token_id", c.eos_token_ids}, {"do_sample", true}, {"temperature", 1.0},
                                {"top_p", 0.95}, {"top_k", 20}};
  models::write_text_file((out / "generation_config.json").string(), gen.dump(2) + "\n");
  if (!q.tokenizer_dir.empty()) models::copy_tokenizer_files(q.tokenizer_dir, q.out_dir);
  const auto r = check_checkpoint(c, SafetensorsCheckpoint::open_dir(q.out_dir));
  if (!r.ok()) throw Error(q.out_dir + ": the written checkpoint does not match its config: " + r.summary());
}

}  // namespace strata::qwen35
