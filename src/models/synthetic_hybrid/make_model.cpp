#include "models/synthetic_hybrid/make_model.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/numfmt.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "models/checkpoint_files.h"
#include "models/synthetic_hybrid/tensors.h"

namespace strata::hybrid {
namespace fs = std::filesystem;

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> n = {"hybrid-tiny"};
  return n;
}

Config preset_config(const std::string& name) {
  if (name != "hybrid-tiny") throw Error("unknown strata_hybrid preset '" + name + "'");
  Config c;
  c.vocab_size = 151936;  // Qwen3's tokenizer (151,669 tokens) fits
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 4;
  c.layer_types = {"linear_attention", "full_attention", "linear_attention", "full_attention"};
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.linear_num_key_heads = 2;
  c.linear_num_value_heads = 4;
  c.linear_key_head_dim = 16;
  c.linear_value_head_dim = 16;
  c.max_position_embeddings = 4096;
  c.eos_token_id = 151645;  // <|im_end|>
  c.num_nextn_predict_layers = 1;
  c.strata_random_weights = true;
  return c;
}

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A uniform value in (-1, 1) from (tensor key, index).
float unit(uint64_t key, uint64_t i) { return float(double(splitmix(key ^ splitmix(i)) >> 11) * 0x1.0p-52 - 1.0); }

uint64_t name_key(uint64_t seed, const std::string& name) {
  uint64_t h = splitmix(seed);
  for (unsigned char ch : name) h = splitmix(h ^ ch);
  return h;
}

// Values of one tensor: uniform with the variance of N(0, s²), s chosen per kind so that
// products keep their inputs' scale.
float value(const ExpectedTensor& t, uint64_t key, uint64_t i) {
  const std::string& n = t.name;
  const float u = unit(key, i);
  auto ends = [&](const char* s) { return n.size() >= std::strlen(s) && n.compare(n.size() - std::strlen(s), std::string::npos, s) == 0; };
  if (ends("A_log")) return std::log(1.0f + 15.0f * (u + 1.0f) / 2.0f);  // decays exp(A) in [1, 16]
  if (ends("dt_bias")) return 0.5f * u;
  if (ends("norm.weight") || ends("layernorm.weight") || ends("norm_embedding.weight") || ends("norm_hidden.weight"))
    return 1.0f + 0.1f * u;
  if (ends("embed_tokens.weight")) return 1.7f * u;
  if (ends("conv1d.weight")) return 1.7f * u / std::sqrt(float(t.shape.back()));
  return 1.7f * u / std::sqrt(float(t.shape.back()));  // a linear [out, in]
}

}  // namespace

void make_model(const models::MakeModelRequest& q) {
  const Config c = preset_config(q.preset);
  const fs::path out(q.out_dir);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw Error(q.out_dir + ": cannot create: " + ec.message());
  auto all = expected_tensors(c);
  // Wider dtypes first, so every tensor starts aligned to its element size.
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return dtype_size(a.dtype) > dtype_size(b.dtype); });
  uint64_t total = 0, done = 0;
  for (const auto& t : all) total += uint64_t(t.numel()) * uint64_t(dtype_size(t.dtype));
  SafetensorsWriter w((out / "model.safetensors").string());
  w.set_metadata("format", "pt");
  for (const auto& t : all) {
    w.add(t.name, t.dtype, t.shape, [&, t](uint8_t* dst, uint64_t nbytes) {
      const uint64_t key = name_key(q.seed, t.name);
      const int64_t n = t.numel();
      if (t.dtype == DType::F32) {
        auto* p = reinterpret_cast<float*>(dst);
        for (int64_t i = 0; i < n; ++i) p[i] = value(t, key, uint64_t(i));
      } else {
        auto* p = reinterpret_cast<uint16_t*>(dst);
        for (int64_t i = 0; i < n; ++i) p[i] = f32_to_bf16(value(t, key, uint64_t(i)));
      }
      done += nbytes;
      if (q.progress) q.progress(done, total);
    });
  }
  w.write();
  models::write_text_file((out / "config.json").string(), to_json(c).dump(2) + "\n");
  nlohmann::ordered_json gen = {{"eos_token_id", c.eos_token_id}, {"do_sample", true}, {"temperature", 1.0}};
  models::write_text_file((out / "generation_config.json").string(), gen.dump(2) + "\n");
  if (!q.tokenizer_dir.empty()) models::copy_tokenizer_files(q.tokenizer_dir, q.out_dir);
  const auto r = check_checkpoint(c, SafetensorsCheckpoint::open_dir(q.out_dir));
  if (!r.ok()) throw Error(q.out_dir + ": the written checkpoint does not match its config: " + r.summary());
}

}  // namespace strata::hybrid
