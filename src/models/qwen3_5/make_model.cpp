#include "models/qwen3_5/make_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/numfmt.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "models/checkpoint_files.h"
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

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t name_key(uint64_t seed, const std::string& name) {
  uint64_t h = splitmix(seed);
  for (unsigned char ch : name) h = splitmix(h ^ ch);
  return h;
}

// Uniform in (-1, 1) from (tensor key, index).
float unit(uint64_t key, uint64_t i) { return float(double(splitmix(key ^ splitmix(i)) >> 11) * 0x1.0p-52 - 1.0); }

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
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error(q.out_dir + ": cannot create: " + ec.message());
  auto all = expected_tensors(c, TensorLayout{});
  // Wider dtypes first, so every tensor starts aligned to its element size.
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return dtype_size(a.dtypes[0]) > dtype_size(b.dtypes[0]); });
  uint64_t total = 0, done = 0;
  for (const auto& t : all) total += uint64_t(t.numel()) * uint64_t(dtype_size(t.dtypes[0]));
  const uint64_t shard_bytes = q.shard_bytes ? q.shard_bytes : (total < (4ull << 30) ? (256ull << 20) : (2ull << 30));
  std::vector<std::vector<size_t>> shards(1);
  uint64_t cur = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const uint64_t b = uint64_t(all[i].numel()) * uint64_t(dtype_size(all[i].dtypes[0]));
    if (cur > 0 && cur + b > shard_bytes) shards.emplace_back(), cur = 0;
    shards.back().push_back(i);
    cur += b;
  }
  const int threads = q.threads > 0 ? q.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  char fname[64];
  for (size_t s = 0; s < shards.size(); ++s) {
    std::snprintf(fname, sizeof fname, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    SafetensorsWriter w((out / fname).string());
    w.set_metadata("format", "pt");
    for (size_t i : shards[s]) {
      const ExpectedTensor* t = &all[i];
      weight_map[t->name] = fname;
      w.add(t->name, t->dtypes[0], t->shape, [&, t](uint8_t* dst, uint64_t nbytes) {
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
        done += nbytes;
        if (q.progress) q.progress(done, total);
      });
    }
    w.write();
  }
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = weight_map;
  models::write_text_file((out / "model.safetensors.index.json").string(), index.dump(2) + "\n");
  models::write_text_file((out / "config.json").string(), to_json(c).dump(2) + "\n");
  nlohmann::ordered_json gen = {{"eos_token_id", c.eos_token_ids}, {"do_sample", true}, {"temperature", 1.0},
                                {"top_p", 0.95}, {"top_k", 20}};
  models::write_text_file((out / "generation_config.json").string(), gen.dump(2) + "\n");
  if (!q.tokenizer_dir.empty()) models::copy_tokenizer_files(q.tokenizer_dir, q.out_dir);
  const auto r = check_checkpoint(c, SafetensorsCheckpoint::open_dir(q.out_dir));
  if (!r.ok()) throw Error(q.out_dir + ": the written checkpoint does not match its config: " + r.summary());
}

}  // namespace strata::qwen35
