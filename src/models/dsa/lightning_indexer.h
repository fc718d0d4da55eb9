// The lightning indexer of DSA layers (DeepSeek-V3.2 Indexer, GLM-5 GlmMoeDsaIndexer): which
// past tokens a query's MLA attends to. Per token: query heads qI = wq_b(qr) [H_I, 128], one key
// kI = LayerNorm(wk(x)) [128], RoPE on the first qk_rope_head_dim dims of each (half-split for
// DeepSeek-V3.2, interleaved for GLM-5), a Hadamard rotation, FP8 (the key is what the cache
// keeps); head weights w_j = bf16(weights_proj(x)_j · H_I^-1/2) · q_scale_j · 128^-1/2. The score of
// key s is
//   I[s] = fp32( fp32(Σ_j fp32(relu(q_j · k_s) · w_j)) · k_scale_s ),
// the dot of e4m3 values exact (the fast profile: fp32 steps, index_scan.h), the head sum in fp64
// rounded once; the selection is the top
// min(index_topk, keys) scores, ties to the lower position, returned in ascending position.
#pragma once
#include <cstdint>
#include <vector>

#include "cache/entry_array.h"
#include "kernels/rope.h"
#include "models/dsa/config.h"
#include "models/dsa/index_scan.h"
#include "models/dsa/weights.h"

namespace strata::dsa {

// One token's indexer query for the scans (index_scan.h): the e4m3 values of every head,
// transposed, qT[i * heads + j] (doubles, the exact scan's), the same as bf16 column pairs
// (the fast scan's, ScanQuery::pairs), and the head weights w[heads]; heads padded to a multiple
// of 8 with zero queries and weights (their terms are +0).
struct IndexerQuery {
  std::vector<double> qT;
  std::vector<uint32_t> pairs;
  std::vector<float> w;
  int64_t heads = 0;  // padded

  ScanQuery scan_query() const { return {qT.data(), pairs.data(), w.data(), heads}; }
};

// RoPE on the first `rope` dims of a [rope | rest] vector at pos: pairs (i, i + rope/2) when
// half-split, (2i, 2i+1) when interleaved; fp32 arithmetic, bf16 result.
void indexer_rope(float* x, int64_t rope, bool interleaved, const kernels::RopeTable& table, int64_t pos);

// Keys [rows][128] (bf16 values, before the Hadamard) from x [rows][d]: wk, LayerNorm, RoPE.
void indexer_keys(const Config& c, const IndexerWeights& w, const kernels::RopeTable& rope, const float* x,
                  int64_t rows, const int64_t* pos, float* keys);
// One token's query from its heads q [heads][dim] (wq_b's bf16 output; rotated in place) and
// weights_proj's bf16 output wp [heads].
IndexerQuery indexer_query(float* q, const float* wp, int64_t heads, int64_t dim, int64_t rope_dim, bool interleaved,
                           const kernels::RopeTable& rope, int64_t pos);
// Queries of rows: qr [rows][q_lora], x [rows][d].
std::vector<IndexerQuery> indexer_queries(const Config& c, const IndexerWeights& w, const kernels::RopeTable& rope,
                                          const float* qr, const float* x, int64_t rows, const int64_t* pos);
// The cache entry of one key (Hadamard, FP8).
void index_key_entry(const float* key, int64_t dim, uint8_t* entry);
// Scores of keys [first, n) for one query ([n - first]).
std::vector<float> indexer_scores(const IndexerQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n);
// The selected positions among keys [first, n), ascending.
std::vector<int32_t> indexer_select(const IndexerQuery& q, const cache::EntryArray& keys, int64_t first, int64_t n,
                                    int64_t topk);

// LayerNorm with weight and bias: mean and variance as exact fp64 sums rounded once, divided in
// fp32; y = bf16((x - mean) · rsqrt(var + eps) · w + b) in fp32.
void layer_norm(const float* x, const float* w, const float* b, int64_t n, float eps, float* y);

}  // namespace strata::dsa
