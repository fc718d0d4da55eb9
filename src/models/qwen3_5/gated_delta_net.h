// Qwen3.5's Gated DeltaNet layer (`linear_attn`) over stacked sequences: in_proj_qkv → causal
// conv + SiLU (its tail the last K−1 pre-conv rows) → q | k | v (contiguous, head-major);
// z, b, a projections; gates; q/k L2-normalized (q scaled) and repeated to the value heads
// (value head h reads key head h / (Hv/Hk)); the recurrent gated delta rule (models/layers,
// the canonical form for prefill and decode alike); the gated RMSNorm with z; out_proj.
// A speculative pass (a segment with an undo log) keeps each drafted token's state and conv
// tail in draft slots (cache/draft_slots.h).
#pragma once
#include <vector>

#include "models/qwen3_5/config.h"
#include "models/qwen3_5/state.h"
#include "models/qwen3_5/weights.h"

namespace strata::qwen35 {

// x [n][d]: the input_layernorm output of every segment's rows, stacked; out [n][d].
void gated_delta_net(const Config& c, const DeltaNetWeights& w, const std::vector<Segment>& segs, const float* x,
                     int64_t n, float* out);

}  // namespace strata::qwen35
