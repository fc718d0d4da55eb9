// strata_hybrid (a synthetic test architecture, config.h) in the model registry.
#pragma once
#include "models/registry.h"

namespace strata::hybrid {

const models::Architecture& architecture();

}  // namespace strata::hybrid
