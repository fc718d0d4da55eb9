// The canonical dot (kernels/dot.h) with four 4-wide fp64 accumulators for lanes 0-15 (exact
// products, fma = one rounding like the scalar mul-then-add), scalar tail, the same fold.
// Bit-identical to the scalar reference.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include "kernels/dot.h"

namespace strata::kernels::avx2 {

float dot(const float* a, const float* b, int64_t n) {
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int q = 0; q < 4; ++q)
      acc[q] = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + k + 4 * q)), _mm256_cvtps_pd(_mm_loadu_ps(b + k + 4 * q)),
                               acc[q]);
  alignas(32) double l[16];
  for (int q = 0; q < 4; ++q) _mm256_store_pd(l + 4 * q, acc[q]);
  for (int j = 0; k + j < n; ++j) l[j] = l[j] + double(a[k + j]) * double(b[k + j]);
  return float(fold16(l));
}

}  // namespace strata::kernels::avx2
