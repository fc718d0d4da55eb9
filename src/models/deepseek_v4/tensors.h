// The tensors a DeepSeek-V4 checkpoint must hold, derived from the config: official names,
// dtypes and shapes (docs/deepseek-v4-checkpoint.md), grouped by component so that parameter
// counts, the checkpoint check and make-model all read one list.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "models/deepseek_v4/config.h"
#include "models/model_config.h"

namespace strata {
class SafetensorsCheckpoint;
}

namespace strata::dsv4 {

// Which part of the model a tensor belongs to (parameter accounting in `strata inspect`).
enum class Component {
  embedding, head, attention, compressor, indexer, routed_expert, shared_expert, router, mhc, norm, mtp_proj,
};
const char* component_name(Component c);

// How a weight is stored; the scale tensor of a quantized linear is listed separately with
// kind == scale and the same `linear` stem.
enum class Storage { plain, fp8_weight, fp4_weight, scale };

struct ExpectedTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  Component component;
  Storage storage = Storage::plain;
  int64_t layer = -1;      // -1 for global tensors; MTP layers are num_hidden_layers + i
  int64_t expert = -1;     // routed expert index, or -1
  bool mtp = false;
  int64_t logical_params = 0;  // parameters this tensor stands for (fp4 bytes hold two; scales hold none)
};

// Every tensor of the model, main layers then MTP layers.
std::vector<ExpectedTensor> expected_tensors(const Config& c);

using models::CheckReport;

// Compares the checkpoint against expected_tensors(c): every problem is collected, nothing is
// computed. Values are checked where a bad value would corrupt results silently: tid2eid
// entries must be valid expert ids.
CheckReport check_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt);
// Throws Error with the full summary when the report is not ok.
void require_valid_checkpoint(const Config& c, const SafetensorsCheckpoint& ckpt, const std::string& dir);

}  // namespace strata::dsv4
