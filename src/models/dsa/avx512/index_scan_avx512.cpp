// index_scan.h with AVX-512: heads across the lanes (eight heads a register), two keys a pass
// sharing the query's loads. The head dots are exact, so this order gives the reference's bits;
// the head sum keeps the canonical lanes (heads j and j + 16 in one lane) and fold.
#pragma GCC optimize("fp-contract=off")
// GCC 12 flags _mm512_extractf64x4_pd's undefined pass-through operand once inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "models/dsa/index_scan.h"

namespace strata::dsa::avx512 {

namespace {

// relu(fp32(d)) · w in fp32 for eight heads, widened: max(0, x) keeps a -0 as the scalar
// std::max(0.0f, x) does (MAXPS returns its second operand when both are zero).
inline __m512d head_terms(__m512d d, const float* w) {
  const __m256 x = _mm512_cvtpd_ps(d);
  const __m256 r = _mm256_max_ps(_mm256_setzero_ps(), x);
  return _mm512_cvtps_pd(_mm256_mul_ps(r, _mm256_loadu_ps(w)));
}

inline double fold16(__m512d lo, __m512d hi) {
  const __m512d a = _mm512_add_pd(lo, hi);
  const __m256d b = _mm256_add_pd(_mm512_castpd512_pd256(a), _mm512_extractf64x4_pd(a, 1));
  const __m128d c = _mm_add_pd(_mm256_castpd256_pd128(b), _mm256_extractf128_pd(b, 1));
  return _mm_cvtsd_f64(_mm_add_sd(c, _mm_unpackhi_pd(c, c)));
}

// Scores of keys e0 (and e1 when given) for heads in chunks of 64.
template <bool Two>
void score_keys(const double* qT, const float* w, int64_t heads, const uint8_t* e0, const uint8_t* e1, float* o0,
                float* o1) {
  const double* lut = e4m3_double_table();
  __m512d lo0 = _mm512_setzero_pd(), hi0 = _mm512_setzero_pd(), lo1 = _mm512_setzero_pd(), hi1 = _mm512_setzero_pd();
  for (int64_t h0 = 0; h0 < heads; h0 += 64) {
    const int64_t nc = std::min<int64_t>(8, (heads - h0) / 8);
    __m512d a0[8], a1[8];
    for (int c = 0; c < 8; ++c) a0[c] = a1[c] = _mm512_setzero_pd();
    for (int64_t i = 0; i < kIndexDim; ++i) {
      const double* q = qT + i * heads + h0;
      const __m512d k0 = _mm512_set1_pd(lut[e0[i]]);
      const __m512d k1 = Two ? _mm512_set1_pd(lut[e1[i]]) : k0;
      for (int c = 0; c < 8; ++c) {
        if (c >= nc) break;
        const __m512d qc = _mm512_loadu_pd(q + c * 8);
        a0[c] = _mm512_fmadd_pd(qc, k0, a0[c]);
        if (Two) a1[c] = _mm512_fmadd_pd(qc, k1, a1[c]);
      }
    }
    for (int c = 0; c < nc; ++c) {  // chunk c holds heads h0 + 8c ..: lanes 0-7 when even, 8-15 when odd
      const bool odd = ((h0 / 8 + c) & 1) != 0;
      const __m512d t0 = head_terms(a0[c], w + h0 + c * 8);
      (odd ? hi0 : lo0) = _mm512_add_pd(odd ? hi0 : lo0, t0);
      if (Two) {
        const __m512d t1 = head_terms(a1[c], w + h0 + c * 8);
        (odd ? hi1 : lo1) = _mm512_add_pd(odd ? hi1 : lo1, t1);
      }
    }
  }
  float ks;
  std::memcpy(&ks, e0 + kIndexDim, 4);
  *o0 = float(fold16(lo0, hi0)) * ks;
  if (Two) {
    std::memcpy(&ks, e1 + kIndexDim, 4);
    *o1 = float(fold16(lo1, hi1)) * ks;
  }
}

}  // namespace

void index_scan(const double* qT, const float* w, int64_t heads, const cache::EntryArray& keys, int64_t first,
                int64_t n, float* out) {
  int64_t s = first;
  for (; s + 2 <= n; s += 2)
    score_keys<true>(qT, w, heads, keys.entry(s), keys.entry(s + 1), out + (s - first), out + (s + 1 - first));
  if (s < n) score_keys<false>(qT, w, heads, keys.entry(s), nullptr, out + (s - first), nullptr);
}

}  // namespace strata::dsa::avx512
