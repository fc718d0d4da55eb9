// One DeepSeek-V4 attention sublayer (reference class Attention): shared key=value MQA over
// the sliding window (raw entries, current token included) plus compressed entries — all of
// them (HCA, ratio 128) or the indexer's top-k (CSA, ratio 4) — in one softmax with a
// per-head sink. Query: wq_a → q_norm (= qr) → wq_b → per-head RMS rescale → RoPE on the last
// rope_dim dims. Window entry: wkv → kv_norm → RoPE → FP8 fake-quant of the NoPE dims.
// Output: inverse RoPE at the query position, grouped wo_a (bf16), wo_b.
//
// Entry order inside the softmax is fixed: window oldest → newest, then compressed entries in
// selection order. Tokens of a chunk are attended one after another against the state as it
// stood at that token, so a chunk gives the same bits as feeding its tokens one by one.
#pragma once
#include <vector>
#include <cstdint>

#include "cache/undo_log.h"
#include "kernels/rope.h"
#include "models/deepseek_v4/compressor.h"
#include "models/deepseek_v4/indexer.h"
#include "models/deepseek_v4/state.h"
#include "models/deepseek_v4/weights.h"

namespace strata::dsv4 {

struct AttentionSpec {
  int64_t dim = 0, heads = 0, head_dim = 0, rope_dim = 0, q_lora_rank = 0, groups = 0, o_lora_rank = 0;
  int64_t window = 128, ratio = 0;
  float norm_eps = 1e-6f;
  const kernels::RopeTable* rope = nullptr;
  CompressorSpec compressor;
  IndexerSpec indexer;
};

// An empty state for the layer; index_keys: how its indexer keys are stored (both hold the same
// values: the keys are FP4-valued).
void init_layer_state(const AttentionSpec& s, LayerState& st, IndexKeyFormat index_keys = IndexKeyFormat::fp8);

// x: [rows, dim] (attn_norm output, bf16 values) for positions pos0.. ; out: [rows, dim].
void attention_forward(const AttentionWeights& w, const AttentionSpec& s, LayerState& st, const float* x, int64_t rows,
                       int64_t pos0, float* out);

// Several sequences' rows stacked (a batch): segment i is rows [sum of earlier rows, +rows) of
// x, at positions pos0.. of its own state. The projections run once over all rows (each
// output element is one canonical dot, so stacking changes no bit); attention runs per
// sequence against its own state.
// undo, when set, records every state write of the segment's tokens (speculative decoding).
struct AttentionSegment {
  LayerState* state = nullptr;
  int64_t pos0 = 0, rows = 0;
  cache::UndoLog* undo = nullptr;
  const IndexerScratch* indexer_scratch = nullptr;  // the sequence's (state.h); null: the thread's own
};
void attention_forward(const AttentionWeights& w, const AttentionSpec& s, const std::vector<AttentionSegment>& segs,
                       const float* x, float* out);

// Pieces, exposed for tests: the per-head RMS rescale of q (bf16 arithmetic) and the window
// entry of one token (after wkv).
void rescale_heads(float* q, int64_t heads, int64_t head_dim, float eps);
void finish_window_entry(const AttentionWeights& w, const AttentionSpec& s, float* kv, int64_t pos);

}  // namespace strata::dsv4
