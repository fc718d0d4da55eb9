// The Qwen3.5 forward pass (dense and MoE), exactly the project's reference
// (reference/qwen3_5.py, reference/README.md: every bf16 rounding of transformers' bf16
// execution, the recurrent gated delta rule for prefill and decode alike). Per layer:
// h = bf16(h + mixer(rms_norm(h))), the mixer a Gated DeltaNet or gated attention;
// h = bf16(h + mlp(rms_norm(h))); the head on the final norm's output gives bf16 logits. The MTP
// layer (mtp.*) drafts from the target's final-norm hidden state, as vLLM's Qwen3.5 MTP.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "models/layers/rotate_half_rope.h"
#include "models/model.h"
#include "models/qwen3_5/arch_config.h"
#include "models/qwen3_5/state.h"
#include "models/qwen3_5/weights.h"

namespace strata::qwen35 {

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
  int64_t n_mtp() const override { return w_.has_mtp ? 1 : 0; }
  void mtp_forward_batch(std::vector<MtpItem>& items, int64_t j = 0) const override;
  void restart_mtp(models::Sequence& st, int64_t pos, int64_t j = 0) const override;
  std::unique_ptr<models::Sequence> synthetic_sequence(int64_t pos, uint64_t seed,
                                                       const models::CacheOptions& o) const override;
  std::string describe_state(const models::Sequence& st) const override;

  // One decoder layer over stacked segments, h [n][d] in place (tests).
  void decoder(const DecoderWeights& w, const std::vector<Segment>& segs, float* h, int64_t n) const;

 private:
  void embed(const int64_t* ids, int64_t n, float* h) const;
  // bf16 logits of `rows` final hidden rows.
  std::vector<float> head(const float* rows, int64_t n) const;

  ArchConfig arch_;
  SafetensorsCheckpoint ckpt_;
  ModelWeights w_;
  models::RotateHalfRope rope_;
};

}  // namespace strata::qwen35
