// Gemma 4 presets for `strata make-model`, `ledger --preset` and `inspect --preset`. No
// official config.json is at hand: the true shapes follow the documented values
// (docs/gemma4-forward.md lists them and which are unverified).
//   gemma4-tiny      6 layers (2:1 sliding/full, window 32), K and V separate
//   gemma4-kv-tiny   the same with K=V full layers (one 64-dim global KV head)
//   gemma4-e-tiny    PLE (16 per layer), the last 2 layers KV-shared, double-wide MLP there
//   gemma4-moe-tiny  K=V, and a routed MoE (8 experts, top-2) beside every dense MLP
//   gemma4-e2b       E2B's true shapes (35 layers, 7 full, PLE 256, 20 KV-shared)
//   gemma4-e2b-4l    its true widths in 4 layers (2 computing K/V, 2 sharing them): benchmarks
//   gemma4-12b       12B's true shapes (48 layers, 8 full with one 512-dim K=V head)
#pragma once
#include <string>
#include <vector>

#include "models/gemma4/config.h"

namespace strata::gemma4 {

const std::vector<std::string>& preset_names();
Config preset_config(const std::string& name);

}  // namespace strata::gemma4
