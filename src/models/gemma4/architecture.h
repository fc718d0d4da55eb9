// Gemma 4's registry entry (models/registry.h).
#pragma once
#include "models/registry.h"

namespace strata::gemma4 {

const models::Architecture& architecture();

}  // namespace strata::gemma4
