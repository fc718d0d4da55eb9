// Start-up check of an expert-parallel job: every rank must load the same checkpoint with the
// same build and numerics, or their replicated computations would drift apart silently.
#pragma once
#include <string>

#include "models/model.h"

namespace strata::models {

// What must agree across ranks: the strata version and wire format, the numerics profile,
// config.json's bytes, and every tensor's name, dtype, shape and place (the safetensors
// headers; the weight bytes themselves are not read, which would cost a full read per rank).
std::string checkpoint_identity(const std::string& config_json_path, const Model& m);

// Throws Error on every rank naming the first rank whose identity differs from rank 0's;
// nothing in a one-process run.
void require_same_model_on_all_ranks(const std::string& config_json_path, const Model& m);

}  // namespace strata::models
