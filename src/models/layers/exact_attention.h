// Exact softmax attention of a group of query heads that share one KV head, over bf16 keys and
// values given position by position (GQA layers: Qwen3.5's gated attention, Gemma 4's sliding
// and full layers):
//   z = bf16(bf16(q·k) · scale),  p = bf16(softmax(z)),  o = bf16(Σ p v)
// dots and the softmax in fp64, rounded once; each key and value read once for the group.
#pragma once
#include <cstdint>

#include "models/layers/kv_dots.h"

namespace strata::models {

// The query heads q[0..G) (stride qs, fp32 holding bf16 values) over n visible positions: key j
// is keys[j] + offset, value j is values[j] + offset (D bf16 each). o[g] (stride os) gets bf16
// values. zb: [G][n] scratch (scores as bf16 bits), acc: [G][D] scratch.
void attend_group(const float* q, int64_t qs, int64_t G, const uint16_t* const* keys, const uint16_t* const* values,
                  int64_t offset, int64_t n, int64_t D, float scale, const KvDots& kd, uint16_t* zb, double* acc,
                  float* o, int64_t os);

}  // namespace strata::models
