// The lightning indexer's head reduction (reference Indexer.forward: the bf16 scores q·k of each
// head, relu, times the head's weight, summed over heads in bf16 arithmetic):
//   score[t] = bf16( Σ_h bf16( max(bf16(z[h][t]), 0) · w[h] ) ),
// the sum in fp32, heads in order, each partial sum an fp32 add. One score per compressed key:
// at 128K tokens of context a CSA layer reduces 64 heads over 32K keys per decoded token.
#pragma once
#include <cstdint>

namespace strata::kernels {

// z: heads rows of n scores, row h at z + h * stride; w: [heads]; score: [n].
void index_score(const float* z, int64_t heads, int64_t n, int64_t stride, const float* w, float* score);
// The scalar reference, and the AVX-512 version (bit-identical, NaN included) that index_score
// dispatches to when AVX-512 is active.
void index_score_reference(const float* z, int64_t heads, int64_t n, int64_t stride, const float* w, float* score);
namespace avx512 {
void index_score(const float* z, int64_t heads, int64_t n, int64_t stride, const float* w, float* score);
}

}  // namespace strata::kernels
