// One Gemma 4 attention layer over stacked sequences:
//   q = RoPE(q_norm(W_q x)) per head;  k = RoPE(k_norm(W_k x));  v = v_norm(W_v x)  (K=V: see k_eq_v.h)
// sliding layers see their last `sliding_window` positions (ring, sliding_window.h), full
// layers every position (K and V appended per token); scores at scale 1.0 (q and k are
// normalised), exact attention (models/layers/exact_attention.h), then o_proj. Norms are
// plain-weight RMSNorms; v_norm has no weight. A KV-shared layer computes only its queries and
// reads the views its source layer made in this pass.
#pragma once
#include <vector>

#include "models/gemma4/config.h"
#include "models/gemma4/kv_view.h"
#include "models/gemma4/state.h"
#include "models/gemma4/weights.h"
#include "models/layers/rope_table.h"
#include "models/layers/rotate_half_rope.h"

namespace strata::gemma4 {

// views: one per segment; filled by a layer with its own K/V, read by a KV-shared layer. table:
// rope's rows (a K=V layer re-rotates every cached key each pass).
void attention(const Config& c, int64_t layer, const AttentionWeights& w, const models::RotateHalfRope& rope,
               const models::RopeTable& table, const std::vector<Segment>& segs, const float* x, int64_t n,
               float* out, std::vector<KvView>& views);

}  // namespace strata::gemma4
