// `strata make-model` for Qwen3.5: random checkpoints in the published layout (the VLM config
// wrapper around text_config, `model.language_model.*`, `mtp.*`, `lm_head` unless tied; MoE
// experts fused in the main layers and per expert in the MTP layer, as the published MoE
// checkpoints; A_log and dt_bias stored F32). Presets:
//   qwen3.5-tiny       4 layers (3 Gated DeltaNet + 1 attention), hidden 128, tied, MTP
//   qwen3.5-moe-tiny   the same with 8 experts top-2 and a shared expert, untied head
//   qwen3.5-0.8b       Qwen3.5-0.8B's true shapes (24 layers)
//   qwen3.5-0.8b-4l    its true shapes, 3 Gated DeltaNet layers and 1 attention (benchmarks)
// Every value comes from (seed, tensor name, index): the same seed, the same bytes.
#pragma once
#include <string>
#include <vector>

#include "models/qwen3_5/config.h"
#include "models/registry.h"

namespace strata::qwen35 {

const std::vector<std::string>& preset_names();
Config preset_config(const std::string& name);
void make_model(const models::MakeModelRequest& q);

}  // namespace strata::qwen35
