// The Gemma 4 forward pass (dense, K=V, PLE + KV-shared, MoE), exactly the project's reference
// (reference/gemma4.py: every bf16 rounding of transformers' bf16 execution). Per layer:
//   h = bf16(h + post_attn_norm(attn(input_norm(h))))
//   h = bf16(h + post_ff_norm(mlp(pre_ff_norm(h))))     (MoE: + the experts' branch, moe.h)
//   h += PLE block (per_layer_input.h);  h = bf16(h · layer_scalar)
// on h = bf16(embed · bf16(√d)); the head is the embedding, its bf16 logits soft-capped.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "models/gemma4/arch_config.h"
#include "models/gemma4/state.h"
#include "models/gemma4/weights.h"
#include "models/layers/logit_softcap.h"
#include "models/layers/rope_table.h"
#include "models/layers/rotate_half_rope.h"
#include "models/model.h"

namespace strata::gemma4 {

class Model final : public models::Model {
 public:
  static std::unique_ptr<Model> load(const std::string& dir);
  Model(Config c, SafetensorsCheckpoint ckpt);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  const Config& config() const { return arch_.config(); }
  const ModelWeights& weights() const { return w_; }

  const models::ModelConfig& model_config() const override { return arch_; }
  const SafetensorsCheckpoint& checkpoint() const override { return ckpt_; }
  std::unique_ptr<models::Sequence> new_sequence(const models::CacheOptions& o = {}) const override;
  void forward_batch(std::vector<BatchItem>& items) const override;
  std::unique_ptr<models::Sequence> synthetic_sequence(int64_t pos, uint64_t seed,
                                                       const models::CacheOptions& o) const override;
  std::string describe_state(const models::Sequence& st) const override;

 private:
  std::vector<float> head(const float* rows, int64_t n) const;

  ArchConfig arch_;
  SafetensorsCheckpoint ckpt_;
  ModelWeights w_;
  models::RotateHalfRope sliding_rope_, full_rope_;
  models::RopeTable full_table_;  // full_rope_'s rows: K=V layers re-rotate their cached keys
  models::LogitSoftcap softcap_;
};

}  // namespace strata::gemma4
