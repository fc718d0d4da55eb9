#include "models/gemma4/make_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/numfmt.h"
#include "io/safetensors.h"
#include "models/checkpoint_files.h"
#include "models/gemma4/presets.h"
#include "models/gemma4/tensors.h"
#include "models/gemma4/tiny_tokenizer.h"
#include "models/random_values.h"

namespace strata::gemma4 {
namespace fs = std::filesystem;

namespace {

bool ends(const std::string& n, const char* s) {
  const size_t k = std::strlen(s);
  return n.size() >= k && n.compare(n.size() - k, k, s) == 0;
}

// Values that keep activations O(1): linears ~ 1/sqrt(in), plain norm weights near 1, layer
// scalars in [0.5, 1], per-expert scales in [0.5, 1.5].
float value(const ExpectedTensor& t, uint64_t key, uint64_t i) {
  const std::string& n = t.name;
  const float u = models::unit_value(key, i);
  if (ends(n, "layer_scalar")) return 0.75f + 0.25f * u;
  if (ends(n, "per_expert_scale")) return 1.0f + 0.5f * u;
  if (ends(n, "norm.weight") || ends(n, "layernorm.weight") || ends(n, "router.scale") || ends(n, "_1.weight") ||
      ends(n, "_2.weight"))
    return 1.0f + 0.1f * u;
  // Embeddings are scaled by sqrt(width): ~2 per element after it, so the residual stream does
  // not drown the layers' normed outputs and the logits stay below the soft cap.
  if (ends(n, "embed_tokens.weight") || ends(n, "embed_tokens_per_layer.weight"))
    return 3.4f * u / std::sqrt(float(t.shape.back()));
  return 1.7f * u / std::sqrt(float(t.shape.back()));  // a linear [.., in]
}

}  // namespace

void make_model(const models::MakeModelRequest& q) {
  const Config c = preset_config(q.preset);
  const fs::path out(q.out_dir);
  auto all = expected_tensors(c);
  // One vision-tower tensor, as the published multimodal checkpoints carry a tower to skip.
  all.push_back({"model.vision_tower.patch_embedder.input_proj.weight", {DType::BF16}, {8, 8}});
  const int threads = q.threads > 0 ? q.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<models::TensorToWrite> writes;
  for (const auto& e : all) {
    const ExpectedTensor* t = &e;
    writes.push_back({t->name, t->dtypes[0], t->shape, [&q, t, threads](uint8_t* dst, uint64_t) {
                        const uint64_t key = models::name_key(q.seed, t->name);
                        const int64_t n = t->numel();
                        // Rows in parallel: every value depends only on (key, index), so any split writes the same bytes.
                        std::vector<std::thread> pool;
                        const int64_t per = (n + threads - 1) / threads;
                        for (int th = 0; th < threads; ++th)
                          pool.emplace_back([&, th] {
                            for (int64_t i = th * per; i < std::min(n, (th + 1) * per); ++i) {
                              const uint16_t b = f32_to_bf16(value(*t, key, uint64_t(i)));
                              std::memcpy(dst + 2 * i, &b, 2);
                            }
                          });
                        for (auto& p : pool) p.join();
                      }});
  }
  models::write_sharded_checkpoint(q.out_dir, writes, q.shard_bytes, q.progress);
  models::write_text_file((out / "config.json").string(), to_json(c).dump(2) + "\n");
  nlohmann::ordered_json gen = {{"bos_token_id", 2}, {"eos_token_id", c.eos_token_ids}, {"pad_token_id", 0},
                                {"do_sample", true}, {"temperature", 1.0}, {"top_p", 0.95}, {"top_k", 64}};
  models::write_text_file((out / "generation_config.json").string(), gen.dump(2) + "\n");
  if (!q.tokenizer_dir.empty()) models::copy_tokenizer_files(q.tokenizer_dir, q.out_dir);
  else if (c.vocab_size == 512) write_tiny_tokenizer(q.out_dir, c.vocab_size);
  const auto r = check_checkpoint(c, SafetensorsCheckpoint::open_dir(q.out_dir));
  if (!r.ok()) throw Error(q.out_dir + ": the written checkpoint does not match its config: " + r.summary());
}

}  // namespace strata::gemma4
