// The lightning indexer of CSA layers (reference class Indexer): it picks which compressed
// entries a query reads. Queries come from the attention's q latent (qr) through wq_b, with
// RoPE on each head's last rope_dim dims, a Hadamard rotation and FP4 fake-quant; keys come
// from its own ratio-4 compressor (compressor.h with rotate). Head weights are
// weights_proj(x) · (id^-1/2 · ih^-1/2). The score of entry t is
//   Σ_h relu(q_h · k_t) · w_h    (bf16 arithmetic as in the reference's einsum),
// and the top min(index_topk, visible) entries are kept, best first, ties to the lower index.
#pragma once
#include <cstdint>
#include <vector>

#include "models/deepseek_v4/compressor.h"
#include "models/deepseek_v4/indexer_scratch.h"
#include "models/deepseek_v4/weights.h"

namespace strata::dsv4 {

struct IndexerSpec {
  int64_t heads = 0, head_dim = 0, rope_dim = 0, topk = 0;
  const kernels::RopeTable* rope = nullptr;
  CompressorSpec compressor;
};

// Rotated FP4 queries [rows, heads·head_dim] from qr [rows, q_lora_rank], row r at position pos[r]
// (rows of several sequences share one wq_b product).
void indexer_queries(const IndexerWeights& w, const IndexerSpec& s, const float* qr, int64_t rows, const int64_t* pos,
                     float* q);
// Head weights [rows, heads] from x [rows, d].
void indexer_weights(const IndexerWeights& w, const IndexerSpec& s, const float* x, int64_t rows, float* out);
// Scores of the first n_visible keys for one query, into scratch.scores() (returned); Error
// if n_visible is past the scratch's max_visible or its heads differ.
const float* indexer_scores(const IndexerSpec& s, const float* q, const float* weights, const CompressorState& keys,
                            int64_t n_visible, const IndexerScratch& scratch);
// The same into a vector, with a scratch of the calling thread's own (tests, benchmarks).
std::vector<float> indexer_scores(const IndexerSpec& s, const float* q, const float* weights,
                                  const CompressorState& keys, int64_t n_visible);
// Selected entry indices for one query (best first); scratch null: the thread's own.
std::vector<int64_t> indexer_select(const IndexerSpec& s, const float* q, const float* weights,
                                    const CompressorState& keys, int64_t n_visible,
                                    const IndexerScratch* scratch = nullptr);
}  // namespace strata::dsv4
