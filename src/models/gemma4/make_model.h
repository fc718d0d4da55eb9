// `strata make-model` for Gemma 4: random checkpoints of the presets (presets.h) in the
// published layout (the multimodal config wrapper around text_config, `model.language_model.*`,
// the head tied to the embedding, one ignored vision-tower tensor). Every value comes from
// (seed, tensor name, index): the same seed, the same bytes.
#pragma once
#include "models/registry.h"

namespace strata::gemma4 {

void make_model(const models::MakeModelRequest& q);

}  // namespace strata::gemma4
