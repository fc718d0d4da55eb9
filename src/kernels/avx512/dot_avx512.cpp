// The canonical dot (kernels/dot.h) with two 8-wide fp64 accumulators standing for lanes 0-7
// and 8-15: floats widened, products exact in fp64, fma = one rounding of exact product + lane
// (the same as the scalar mul-then-add), masked tail loads add +0 (a lane never holds -0), then
// the same fold. Bit-identical to the scalar reference.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include "kernels/dot.h"

namespace strata::kernels::avx512 {

float dot(const float* a, const float* b, int64_t n) {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512 va = _mm512_loadu_ps(a + k), vb = _mm512_loadu_ps(b + k);
    lo = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(va)), _mm512_cvtps_pd(_mm512_castps512_ps256(vb)), lo);
    hi = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(va), 1))),
                         _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(vb), 1))), hi);
  }
  if (k < n) {
    const __mmask16 m = __mmask16((1u << (n - k)) - 1u);
    const __m512 va = _mm512_maskz_loadu_ps(m, a + k), vb = _mm512_maskz_loadu_ps(m, b + k);
    lo = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(va)), _mm512_cvtps_pd(_mm512_castps512_ps256(vb)), lo);
    hi = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(va), 1))),
                         _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(vb), 1))), hi);
  }
  alignas(64) double l[16];
  _mm512_store_pd(l, lo);
  _mm512_store_pd(l + 8, hi);
  return float(fold16(l));
}

}  // namespace strata::kernels::avx512
