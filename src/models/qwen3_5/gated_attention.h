// Qwen3.5's gated full attention over stacked sequences: q_proj viewed [H, 2D] and split per
// head into [q | gate]; (1+w) RMSNorms on q and k per head; rotate-half RoPE on the first
// rotary_dim dims; K and V appended to the layer's cache (bf16); each query row attends to
// exactly its visible keys (GQA: query head h reads KV head h / (H/Hkv)) with
//   z = bf16(bf16(q·k) · scale),  p = bf16(softmax(z)),  o = bf16(Σ p v)
// (dots and the softmax in fp64, rounded once); then o · bf16(sigmoid(gate)) and o_proj.
#pragma once
#include <vector>

#include "models/layers/rotate_half_rope.h"
#include "models/qwen3_5/config.h"
#include "models/qwen3_5/state.h"
#include "models/qwen3_5/weights.h"

namespace strata::qwen35 {

void gated_attention(const Config& c, const AttentionWeights& w, const models::RotateHalfRope& rope,
                     const std::vector<Segment>& segs, const float* x, int64_t n, float* out);

}  // namespace strata::qwen35
