// The DeepSeek-V4 forward pass on CPU: embedding → hc_mult streams → per layer
// (hc_pre, attn_norm, attention, hc_post; hc_pre, ffn_norm, MoE, hc_post) → hc_head →
// final norm → fp32 logits. Numerics follow DeepSeek's reference inference code (bf16
// activations, FP8/FP4 linears with FP8 activations, fp32 router/compressor/head); every
// reduction has a fixed order, so logits are bitwise independent of thread count and of how
// a sequence is split into chunks. The MTP blocks (mtp.j) run on request (mtp_forward).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/rope.h"
#include "models/deepseek_v4/arch_config.h"
#include "models/deepseek_v4/attention.h"
#include "models/deepseek_v4/config.h"
#include "models/deepseek_v4/mhc.h"
#include "models/deepseek_v4/moe.h"
#include "models/deepseek_v4/state.h"
#include "models/deepseek_v4/weights.h"
#include "models/model.h"

namespace strata::dsv4 {

class Model final : public models::Model {
 public:
  // Opens DIR (config.json + safetensors), checks the checkpoint against the config, binds
  // the weights.
  static std::unique_ptr<Model> load(const std::string& dir);
  Model(Config c, SafetensorsCheckpoint ckpt);
  // Specs point at the model's RoPE tables: not copyable or movable (hold it by unique_ptr).
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const Config& config() const { return arch_.config(); }

  // --- models::Model ---
  const models::ModelConfig& model_config() const override { return arch_; }
  const SafetensorsCheckpoint& checkpoint() const override { return ckpt_; }
  // Under expert parallelism: every tensor but the routed experts other ranks run.
  bool holds_tensor(const std::string& name) const override;
  bool expert_parallel() const override { return true; }
  // Replaces main layer `layer`'s expert placement (models/expert_balance.h) before the first
  // forward pass; Error for a placement of another expert count or rank count.
  void place_experts(int64_t layer, const models::ExpertPlacement& p);
  std::unique_ptr<models::Sequence> new_sequence(const models::CacheOptions& o = {}) const override;
  std::unique_ptr<models::Workspace> workspace(void* memory, int64_t bytes, int64_t max_context,
                                               int64_t parts) const override;
  // The linear layers (attention projections, MoE, ...) see all items' rows at once; the head
  // runs over every wanted row at once. Each item's hidden rows are its final hc streams
  // [n][hc][d] (bf16 values).
  void forward_batch(std::vector<BatchItem>& items) const override;
  // MTP block j (reference MTPBlock) over stacked sequences: the head (the largest matrix) read
  // once for every item's last row, a routed expert chosen by several items run once for all
  // their rows. Hidden rows in and streams out are [n][hc][d].
  int64_t n_mtp() const override { return int64_t(w_.mtp.size()); }
  void mtp_forward_batch(std::vector<MtpItem>& items, int64_t j = 0) const override;
  void restart_mtp(models::Sequence& st, int64_t pos, int64_t j = 0) const override;
  std::unique_ptr<models::Sequence> synthetic_sequence(int64_t pos, uint64_t seed,
                                                       const models::CacheOptions& o) const override;
  std::string describe_state(const models::Sequence& st) const override;

  // An empty state, by value (tests and tools); index_keys: the storage of the indexer keys
  // (same values either way).
  SequenceState new_state(IndexKeyFormat index_keys = IndexKeyFormat::fp8) const;

  // Pieces for tests and tools.
  const ModelWeights& weights() const { return w_; }
  const AttentionSpec& attention_spec(int64_t layer) const { return attn_[size_t(layer)]; }
  const MoeSpec& moe_spec(int64_t layer) const { return moe_[size_t(layer)]; }
  const HcSpec& hc_spec() const { return hc_; }
  // Final stage: hc_head, norm, head on one [hc, d] state.
  std::vector<float> logits_from_state(const float* state) const;
  std::vector<float> logits_from_state(const float* state, const HcWeights& hc_head, const uint16_t* norm) const;

 private:
  ArchConfig arch_;
  SafetensorsCheckpoint ckpt_;
  const Config& cfg_;  // arch_'s
  ModelWeights w_;
  kernels::RopeTable rope_window_, rope_compressed_;
  // One Block over stacked sequences (segs: each one's layer state, position and rows) on the
  // streams h [n][hc][d] in place.
  void run_block(const LayerWeights& lw, const AttentionSpec& as, const MoeSpec& ms,
                 const std::vector<AttentionSegment>& segs, float* h, const int64_t* ids, int64_t n) const;

  std::vector<AttentionSpec> attn_;  // main layers, then MTP blocks
  std::vector<MoeSpec> moe_;
  HcSpec hc_;
};

// The V4 state behind a generic sequence (strata::Error for another model's).
SequenceState& state_of(models::Sequence& s);
const SequenceState& state_of(const models::Sequence& s);

}  // namespace strata::dsv4
