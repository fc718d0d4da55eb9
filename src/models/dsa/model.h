// The DSA forward pass (DeepSeek-V3.2, GLM-5), exactly the project's reference
// (reference/dsa.py, reference/README.md §DSA). Per layer:
// h = bf16(h + mla(rms_norm(h))), the MLA attending to the indexer's selection (mla.h);
// h = bf16(h + ffn(rms_norm(h))), a SwiGLU MLP or the MoE (moe.h); the head on the final norm's
// output gives fp32 logits. The MTP layer drafts from the final norm's output and the next
// token's embedding: eh_proj([enorm(embed(next)), hnorm(hidden)]), a decoder layer with its own
// indexer and caches, shared_head.norm, the head.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/rope.h"
#include "models/dsa/arch_config.h"
#include "models/dsa/state.h"
#include "models/dsa/weights.h"
#include "models/model.h"

namespace strata::dsa {

class Model final : public models::Model {
 public:
  static std::unique_ptr<Model> load(const std::string& dir);
  Model(Config c, SafetensorsCheckpoint ckpt, bool with_mtp);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  const Config& config() const { return arch_.config(); }

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

 private:
  void embed(const uint16_t* table, const int64_t* ids, int64_t n, float* h) const;
  void decoder(const DecoderWeights& w, const std::vector<Segment>& segs, float* h, int64_t n,
               std::vector<std::vector<int32_t>>& selection) const;
  std::vector<float> head(const LinearWeight& w, const float* rows, int64_t n) const;

  ArchConfig arch_;
  SafetensorsCheckpoint ckpt_;
  ModelWeights w_;
  kernels::RopeTable rope_;
};

}  // namespace strata::dsa
