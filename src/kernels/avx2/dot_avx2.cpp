// The canonical dot (kernels/dot.h) with two 8-lane accumulators standing for lanes 0-7 and
// 8-15; separate multiply and add, zero-padded tail, the same fold. Bit-identical to scalar.
// The ISA flags allow FMA; GCC would fuse mul + add (one rounding) and break bit-equality.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include "kernels/dot.h"

namespace strata::kernels::avx2 {

float dot(const float* a, const float* b, int64_t n) {
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    lo = _mm256_add_ps(lo, _mm256_mul_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k)));
    hi = _mm256_add_ps(hi, _mm256_mul_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8)));
  }
  alignas(32) float l[16];
  _mm256_store_ps(l, lo);
  _mm256_store_ps(l + 8, hi);
  for (int j = 0; k + j < n; ++j) {
    float p = a[k + j] * b[k + j];
    l[j] = l[j] + p;
  }
  return fold16(l);
}

}  // namespace strata::kernels::avx2
