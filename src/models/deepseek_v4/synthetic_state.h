// A sequence state as if `pos` tokens had been processed, with random cache contents: the
// window ring full, pos/ratio compressed entries and pos/4 index keys per layer, compressor
// slots empty at a block boundary (as at position 0). For benchmarks of decode cost at long
// context (`strata bench --context`): a step's cost depends on how much it reads, not on what
// the entries say, and prefilling 128K tokens to get there would take hours on a CPU. Not for
// generation: the values are noise.
#pragma once
#include <cstdint>

#include "models/deepseek_v4/model.h"

namespace strata::dsv4 {

// pos must be a multiple of 128 (every compressor at a block boundary); index_keys: how the
// indexer keys are stored (Model::new_state).
SequenceState synthetic_state(const Model& model, int64_t pos, uint64_t seed,
                              IndexKeyFormat index_keys = IndexKeyFormat::fp8);

}  // namespace strata::dsv4
