// DeepSeek-V4 (Flash and Pro) in the model registry (models/registry.h).
#pragma once
#include "models/registry.h"

namespace strata::dsv4 {

const models::Architecture& architecture();

}  // namespace strata::dsv4
