// dpbf16_accumulate (kernels/dpbf16.h) with the 8-lane AVX2 emulation: blocks of 32 lanes
// (4 independent accumulators), then of 8, the rest by the scalar emulation.
#pragma GCC optimize("fp-contract=off")
#include "kernels/avx2/dpbf16.h"

namespace strata::kernels::avx2 {

void dpbf16_accumulate(float* acc, const uint16_t* a, const uint16_t* b, int64_t lanes, int64_t steps) {
  const auto pairs = [&](const uint16_t* p, int64_t s, int64_t i) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * (s * lanes + i)));
  };
  int64_t i = 0;
  for (; i + 32 <= lanes; i += 32) {
    __m256 c0 = _mm256_loadu_ps(acc + i), c1 = _mm256_loadu_ps(acc + i + 8);
    __m256 c2 = _mm256_loadu_ps(acc + i + 16), c3 = _mm256_loadu_ps(acc + i + 24);
    for (int64_t s = 0; s < steps; ++s) {
      c0 = dpbf16_ps(c0, pairs(a, s, i), pairs(b, s, i));
      c1 = dpbf16_ps(c1, pairs(a, s, i + 8), pairs(b, s, i + 8));
      c2 = dpbf16_ps(c2, pairs(a, s, i + 16), pairs(b, s, i + 16));
      c3 = dpbf16_ps(c3, pairs(a, s, i + 24), pairs(b, s, i + 24));
    }
    _mm256_storeu_ps(acc + i, c0);
    _mm256_storeu_ps(acc + i + 8, c1);
    _mm256_storeu_ps(acc + i + 16, c2);
    _mm256_storeu_ps(acc + i + 24, c3);
  }
  for (; i + 8 <= lanes; i += 8) {
    __m256 c = _mm256_loadu_ps(acc + i);
    for (int64_t s = 0; s < steps; ++s) c = dpbf16_ps(c, pairs(a, s, i), pairs(b, s, i));
    _mm256_storeu_ps(acc + i, c);
  }
  for (; i < lanes; ++i)
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t k = 2 * (s * lanes + i);
      acc[i] = dpbf16_lane(acc[i], a[k], a[k + 1], b[k], b[k + 1]);
    }
}

}  // namespace strata::kernels::avx2
