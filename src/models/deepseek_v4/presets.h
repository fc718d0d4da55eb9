// Named configurations for `strata make-model`: small models that keep all of Flash's or
// Pro's structure, and flash-2l with V4-Flash's true per-layer shapes for benchmarks.
#pragma once
#include <string>
#include <vector>

#include "models/deepseek_v4/config.h"

namespace strata::dsv4 {

// Throws Error listing the known names for an unknown preset.
Config preset_config(const std::string& name);
const std::vector<std::string>& preset_names();

}  // namespace strata::dsv4
