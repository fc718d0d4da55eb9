// The tensors a Gemma 4 checkpoint holds, from its config: official names (the text model under
// `model.language_model.` in the published multimodal layout, `model.` in a bare text
// checkpoint; the head tied to the embedding), dtypes and shapes. The vision and audio towers
// (`model.vision_tower.*`, `model.audio_tower.*`, `model.embed_vision.*`, `model.embed_audio.*`)
// are not the text model's and are skipped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "models/gemma4/config.h"
#include "models/model_config.h"

namespace strata {
class SafetensorsCheckpoint;
}

namespace strata::gemma4 {

struct ExpectedTensor {
  std::string name;
  std::vector<DType> dtypes;  // the first is what make-model writes; any is accepted
  std::vector<int64_t> shape;
  bool routed_expert = false;
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

// "model.language_model." or "model." (a bare text checkpoint).
std::string prefix_of(const SafetensorsCheckpoint& ckpt);
std::vector<ExpectedTensor> expected_tensors(const Config& c, const std::string& prefix = "model.language_model.");
// Every expected tensor present with an accepted dtype and the right shape; a v_proj on a K=V
// layer (or its absence on a layer with its own V), and K/V weights on a KV-shared layer, are
// named with their layer.
models::CheckReport check_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt);
// Tensors of the vision and audio towers the checkpoint holds (skipped).
int64_t tower_tensors(const SafetensorsCheckpoint& ckpt);

}  // namespace strata::gemma4
