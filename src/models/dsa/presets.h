// Named DSA configs. `deepseek-v3.2` is the published config.json; `glm5` is GLM-5 as
// transformers' GlmMoeDsaConfig defines it (no verbatim config.json of GLM-5 was available: each
// value is the class default, cited beside it). Both are configs only (`ledger`, `inspect`); the
// others are random checkpoints `make-model` writes: `-tiny` for tests, `-2l` the true per-layer
// shapes with two layers (one dense, one MoE) for benchmarks.
#pragma once
#include <string>
#include <vector>

#include "models/dsa/config.h"

namespace strata::dsa {

const std::vector<std::string>& preset_names();
// Presets too large to write here: their configs serve ledger and inspect.
bool config_only_preset(const std::string& name);
Config preset_config(const std::string& name);

}  // namespace strata::dsa
