#include "models/dsa/make_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/numfmt.h"
#include "io/safetensors.h"
#include "models/checkpoint_files.h"
#include "models/dsa/presets.h"
#include "models/dsa/tensors.h"
#include "models/random_values.h"

namespace strata::dsa {
namespace {

bool ends(const std::string& n, const char* s) {
  const size_t k = std::strlen(s);
  return n.size() >= k && n.compare(n.size() - k, k, s) == 0;
}

// The stem of a linear's tensors ("...q_a_proj" of "...q_a_proj.weight_scale_inv").
std::string stem_of(const std::string& n) { return n.substr(0, n.rfind(".weight")); }

// Amplitude of a tensor's uniform values: linears ~ 1/sqrt(in) so activations stay O(1),
// norm weights near 1 (DeepSeek's norms multiply by the weight), small biases.
struct Dist {
  float centre = 0, amp = 1;
};
Dist dist_of(const ExpectedTensor& t) {
  const std::string& n = t.name;
  if (ends(n, "k_norm.bias")) return {0, 0.1f};
  if (ends(n, "e_score_correction_bias")) return {0, 0.05f};
  if (t.part == Part::norm || ends(n, "k_norm.weight")) return {1, 0.1f};
  if (t.part == Part::embedding) return {0, 1};
  return {0, 1.7f / std::sqrt(float(t.shape.back()))};
}

// Gain 2^u, u in [-1, 1), per 128x128 block of an FP8 linear: varied UE8M0 exponents between
// blocks, as trained weights have.
float block_gain(uint64_t key, int64_t bi, int64_t bj) {
  return std::exp2(models::unit_value(key ^ 0x5bd1e995ull, uint64_t(bi) * 1000003ull + uint64_t(bj)));
}
// The block's scale: the smallest power of two that keeps its largest possible value within
// e4m3's 448, so no code saturates.
float block_scale(float amp, float gain) { return std::exp2(std::ceil(std::log2(amp * gain / 448.0f))); }

void parallel_for(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& f) {
  threads = int(std::max<int64_t>(1, std::min<int64_t>(threads, n)));
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back([&, i] { f(n * i / threads, n * (i + 1) / threads); });
  for (auto& p : pool) p.join();
}

void fill(const ExpectedTensor& t, uint64_t seed, int threads, uint8_t* dst) {
  const int64_t cols = t.shape.back(), n = t.numel();
  if (t.scale) {  // the scales of the weight beside it, from the same keys
    const uint64_t wkey = models::name_key(seed, stem_of(t.name) + ".weight");
    const float amp = 1.7f / std::sqrt(float(t.shape[1] * 128));  // the weight's in-features, rounded up to blocks
    for (int64_t i = 0; i < n; ++i) {
      const float s = block_scale(amp, block_gain(wkey, i / cols, i % cols));
      std::memcpy(dst + 4 * i, &s, 4);
    }
    return;
  }
  const uint64_t key = models::name_key(seed, t.name);
  const Dist d = dist_of(t);
  parallel_for(n, threads, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      const float u = models::unit_value(key, uint64_t(i));
      if (t.fp8_weight) {
        const int64_t r = i / cols, c = i % cols;
        const float amp = 1.7f / std::sqrt(float((cols + 127) / 128 * 128));
        const float g = block_gain(key, r / 128, c / 128);
        dst[i] = f32_to_e4m3(u * amp * g / block_scale(amp, g), true);
        continue;
      }
      const float v = d.centre + d.amp * u;
      if (t.dtypes[0] == DType::F32) std::memcpy(dst + 4 * i, &v, 4);
      else {
        const uint16_t h = f32_to_bf16(v);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    }
  });
}

}  // namespace

void make_model(const models::MakeModelRequest& q) {
  if (config_only_preset(q.preset))
    throw Error("preset '" + q.preset + "' is the full model's config (for ledger and inspect); make-model writes " +
                q.preset + "-tiny or " + q.preset + "-2l");
  const Config c = preset_config(q.preset);
  // DeepSeek publishes the MTP layer with its own embedding and head (copies of the main ones;
  // random here, so a test sees that they are the ones used); GLM-5's MTP layer shares them.
  std::vector<ExpectedTensor> all;
  for (auto& t : expected_tensors(c))
    if (!t.optional || !c.glm()) all.push_back(std::move(t));
  // Wider dtypes first, so every tensor starts aligned to its element size.
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return dtype_size(a.dtypes[0]) > dtype_size(b.dtypes[0]); });
  const int threads = q.threads > 0 ? q.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<models::TensorToWrite> writes;
  for (const auto& e : all) {
    const ExpectedTensor* t = &e;
    writes.push_back({t->name, t->dtypes[0], t->shape,
                      [t, seed = q.seed, threads](uint8_t* dst, uint64_t) { fill(*t, seed, threads, dst); }});
  }
  models::write_sharded_checkpoint(q.out_dir, writes, q.shard_bytes, q.progress);
  const std::filesystem::path out(q.out_dir);
  models::write_text_file((out / "config.json").string(), to_json(c).dump(2) + "\n");
  nlohmann::ordered_json gen = {{"bos_token_id", c.bos_token_id}, {"eos_token_id", c.eos_token_ids},
                                {"do_sample", true}, {"temperature", 1.0}, {"top_p", 0.95}};
  models::write_text_file((out / "generation_config.json").string(), gen.dump(2) + "\n");
  if (!q.tokenizer_dir.empty()) models::copy_tokenizer_files(q.tokenizer_dir, q.out_dir);
  const auto r = check_checkpoint(c, SafetensorsCheckpoint::open_dir(q.out_dir));
  if (!r.ok()) throw Error(q.out_dir + ": the written checkpoint does not match its config: " + r.summary());
}

}  // namespace strata::dsa
