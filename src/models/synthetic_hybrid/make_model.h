// `strata make-model --preset hybrid-tiny`: a random strata_hybrid checkpoint (config.json,
// model.safetensors, tokenizer files). Every value comes from (seed, tensor name, index), so
// the same seed gives byte-identical files; scales keep activations O(1) through the layers.
#pragma once
#include <string>
#include <vector>

#include "models/registry.h"
#include "models/synthetic_hybrid/config.h"

namespace strata::hybrid {

Config preset_config(const std::string& name);
const std::vector<std::string>& preset_names();
void make_model(const models::MakeModelRequest& q);

}  // namespace strata::hybrid
