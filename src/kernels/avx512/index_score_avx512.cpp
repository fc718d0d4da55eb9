// AVX-512 index scores, bit for bit the scalar reference (scalar/index_score_scalar.cpp): 16 keys
// per vector (z's rows are contiguous over keys), each lane doing exactly the reference's fp32
// operations in head order, so no lane's result depends on its neighbours.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include "kernels/index_score.h"

namespace strata::kernels::avx512 {
namespace {

// round_bf16 on 16 lanes: round to nearest even on the top 16 bits (strata::f32_to_bf16), NaNs
// quieted with their sign and top payload bits kept, as the scalar version does.
inline __m512 round_bf16_ps(__m512 v) {
  const __m512i b = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  const __m512i hi = _mm512_set1_epi32(int32_t(0xFFFF0000u));
  const __m512i rounded = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7FFF)), lsb), hi);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
  const __m512i quiet = _mm512_and_si512(_mm512_or_si512(b, _mm512_set1_epi32(0x00400000)), hi);
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(nan, rounded, quiet));
}

}  // namespace

void index_score(const float* z, int64_t heads, int64_t n, int64_t stride, const float* w, float* score) {
  const __m512 zero = _mm512_setzero_ps();
  int64_t t = 0;
  for (; t + 16 <= n; t += 16) {
    __m512 acc = zero;
    for (int64_t h = 0; h < heads; ++h) {
      const __m512 zh = round_bf16_ps(_mm512_loadu_ps(z + h * stride + t));
      // max(0, zh) = (0 > zh) ? 0 : zh: std::max(zh, 0.0f) for NaN and -0 as well
      const __m512 r = _mm512_max_ps(zero, zh);
      acc = _mm512_add_ps(acc, round_bf16_ps(_mm512_mul_ps(r, _mm512_set1_ps(w[h]))));
    }
    _mm512_storeu_ps(score + t, round_bf16_ps(acc));
  }
  if (t < n) index_score_reference(z + t, heads, n - t, stride, w, score + t);
}

}  // namespace strata::kernels::avx512
