// The strata_hybrid forward pass (config.h says what the architecture is for). Per layer:
// h += mixer(rms_norm(h)) with the mixer a Gated DeltaNet (conv1d + SiLU, L2-normed q/k, the
// gated delta rule, a gated RMSNorm) or GQA attention with interleaved RoPE over the K/V
// cache; then h += SwiGLU(rms_norm(h)). Activations are bf16 values between products, states
// fp32; every sum has a fixed order, so a sequence's logits are bitwise the same alone, in any
// batch, in any chunking and on any thread count.
#pragma once
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "kernels/linear.h"
#include "kernels/rope.h"
#include "models/model.h"
#include "models/synthetic_hybrid/arch_config.h"
#include "models/synthetic_hybrid/state.h"

namespace strata::hybrid {

struct DecoderWeights {
  const uint16_t* input_norm = nullptr;
  const uint16_t* post_norm = nullptr;
  // Gated DeltaNet
  kernels::LinearWeight in_qkv, in_z, in_b, in_a, out_proj;
  std::vector<float> conv;  // [conv_dim][K]
  const float* a_log = nullptr;
  const float* dt_bias = nullptr;
  const uint16_t* gated_norm = nullptr;
  // Full attention
  kernels::LinearWeight q, k, v, o;
  // MLP
  kernels::LinearWeight gate, up, down;
};

class Model final : public models::Model {
 public:
  static std::unique_ptr<Model> load(const std::string& dir);
  Model(Config c, SafetensorsCheckpoint ckpt);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  const Config& config() const { return arch_.config(); }

  const models::ModelConfig& model_config() const override { return arch_; }
  const SafetensorsCheckpoint& checkpoint() const override { return ckpt_; }
  std::unique_ptr<models::Sequence> new_sequence(const models::CacheOptions& o = {}) const override;
  void forward_batch(std::vector<BatchItem>& items) const override;
  int64_t n_mtp() const override { return has_mtp_ ? 1 : 0; }
  void mtp_forward_batch(std::vector<MtpItem>& items, int64_t j = 0) const override;
  void restart_mtp(models::Sequence& st, int64_t pos, int64_t j = 0) const override;
  std::string describe_state(const models::Sequence& st) const override;
  // Random K/V entries for pos tokens and random recurrent states (decode cost at long context).
  std::unique_ptr<models::Sequence> synthetic_sequence(int64_t pos, uint64_t seed,
                                                       const models::CacheOptions& o) const override;

 private:
  struct Segment {  // one sequence's rows of a stacked pass through one layer
    LayerState* layer;
    int64_t pos0, rows;
    cache::UndoLog* undo;
  };
  // One decoder layer on h [n][d] in place.
  void decoder(const DecoderWeights& w, const std::vector<Segment>& segs, float* h, int64_t n) const;
  void delta_net(const DecoderWeights& w, const std::vector<Segment>& segs, const float* x, int64_t n, float* out) const;
  void attention(const DecoderWeights& w, const std::vector<Segment>& segs, const float* x, int64_t n, float* out) const;
  void check_ids(const int64_t* ids, int64_t n, int64_t pos0) const;
  void embed(const int64_t* ids, int64_t n, float* h) const;

  ArchConfig arch_;
  SafetensorsCheckpoint ckpt_;
  std::list<std::vector<uint8_t>> realigned_;  // tensors whose file offset was not aligned
  const uint16_t* embed_ = nullptr;
  const uint16_t* final_norm_ = nullptr;
  kernels::LinearWeight head_;
  std::vector<DecoderWeights> layers_;
  bool has_mtp_ = false;
  kernels::LinearWeight mtp_fc_;
  const uint16_t* mtp_norm_embed_ = nullptr;
  const uint16_t* mtp_norm_hidden_ = nullptr;
  const uint16_t* mtp_norm_ = nullptr;
  DecoderWeights mtp_layer_;
  kernels::RopeTable rope_;
};

}  // namespace strata::hybrid
