// The DSA family (DeepSeek-V3.2 and GLM-5) in the model registry.
#pragma once
#include "models/registry.h"

namespace strata::dsa {

const models::Architecture& architecture();

}  // namespace strata::dsa
