// Qwen3.5 (dense and MoE) in the model registry.
#pragma once
#include "models/registry.h"

namespace strata::qwen35 {

const models::Architecture& architecture();

}  // namespace strata::qwen35
