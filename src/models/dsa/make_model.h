// `strata make-model` for the DSA family: random checkpoints in the published layout
// (models/dsa/tensors.h; FP8 weights as e4m3 codes with fp32 power-of-two weight_scale_inv, as
// DeepSeek publishes them). Presets: models/dsa/presets.h. Every value comes from (seed, tensor
// name, index): the same seed, the same bytes.
#pragma once
#include "models/registry.h"

namespace strata::dsa {

void make_model(const models::MakeModelRequest& q);

}  // namespace strata::dsa
