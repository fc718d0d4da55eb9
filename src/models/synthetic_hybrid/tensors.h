// The tensors a strata_hybrid checkpoint holds, derived from its config: names (Qwen3.5's
// text-model names where the mechanism is shared), dtypes and shapes, one list for the
// checkpoint check, parameter counts and make-model.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "models/model_config.h"
#include "models/synthetic_hybrid/config.h"

namespace strata {
class SafetensorsCheckpoint;
}

namespace strata::hybrid {

struct ExpectedTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  bool mtp = false;
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

std::vector<ExpectedTensor> expected_tensors(const Config& c);
models::CheckReport check_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt);

// The names of one decoder layer's tensors (main layer l, or the MTP block's with prefix "mtp.layers.0.").
std::string layer_prefix(int64_t layer);
inline const char* kMtpLayerPrefix = "mtp.layers.0.";

}  // namespace strata::hybrid
