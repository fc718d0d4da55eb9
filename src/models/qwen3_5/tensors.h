// The tensors a Qwen3.5 checkpoint holds, from its config: official names (the text model under
// `model.language_model.` in the published VLM layout, `model.` in a bare text checkpoint;
// `lm_head.weight` unless tied; `mtp.*`), dtypes and shapes. The vision tower (`model.visual.*`)
// is not the text model's and is skipped. An MoE layer's experts come fused
// (`experts.gate_up_proj` [E, 2I, d], `experts.down_proj` [E, d, I]) or one tensor set per expert
// (`experts.{e}.{gate,up,down}_proj.weight`); both are read.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "models/model_config.h"
#include "models/qwen3_5/config.h"

namespace strata {
class SafetensorsCheckpoint;
}

namespace strata::qwen35 {

struct ExpectedTensor {
  std::string name;
  std::vector<DType> dtypes;  // the first is what make-model writes; any is accepted
  std::vector<int64_t> shape;
  bool mtp = false;
  bool routed_expert = false;
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

// How a checkpoint lays the text model out.
struct TensorLayout {
  std::string prefix = "model.language_model.";
  bool fused_experts = true;      // main layers
  bool fused_mtp_experts = false;  // the MTP layer (published MoE checkpoints: per expert)
};
TensorLayout layout_of(const SafetensorsCheckpoint& ckpt);

std::vector<ExpectedTensor> expected_tensors(const Config& c, const TensorLayout& t);
// Every expected tensor present with an accepted dtype and the right shape; tensors of neither
// the text model nor the vision tower are listed as unexpected.
models::CheckReport check_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt);
// Whether the checkpoint holds any mtp.* tensor. Checkpoints published without the MTP block
// (converted or pruned ones) still decode; only speculative decoding needs it.
bool has_mtp_tensors(const SafetensorsCheckpoint& ckpt);
// Tensors of the vision tower the checkpoint holds (skipped).
int64_t vision_tensors(const SafetensorsCheckpoint& ckpt);

}  // namespace strata::qwen35
