// dpbf16_accumulate (kernels/dpbf16.h) on the instruction itself: what the emulations are
// tested against. Blocks of 64 lanes (4 independent accumulators), then of 16, then a masked
// block for the rest.
#include <immintrin.h>

#include "kernels/dpbf16.h"

namespace strata::kernels::avx512 {

void dpbf16_accumulate(float* acc, const uint16_t* a, const uint16_t* b, int64_t lanes, int64_t steps) {
  const auto pairs = [&](const uint16_t* p, int64_t s, int64_t i) {
    return (__m512bh)_mm512_loadu_si512(p + 2 * (s * lanes + i));
  };
  int64_t i = 0;
  for (; i + 64 <= lanes; i += 64) {
    __m512 c0 = _mm512_loadu_ps(acc + i), c1 = _mm512_loadu_ps(acc + i + 16);
    __m512 c2 = _mm512_loadu_ps(acc + i + 32), c3 = _mm512_loadu_ps(acc + i + 48);
    for (int64_t s = 0; s < steps; ++s) {
      c0 = _mm512_dpbf16_ps(c0, pairs(a, s, i), pairs(b, s, i));
      c1 = _mm512_dpbf16_ps(c1, pairs(a, s, i + 16), pairs(b, s, i + 16));
      c2 = _mm512_dpbf16_ps(c2, pairs(a, s, i + 32), pairs(b, s, i + 32));
      c3 = _mm512_dpbf16_ps(c3, pairs(a, s, i + 48), pairs(b, s, i + 48));
    }
    _mm512_storeu_ps(acc + i, c0);
    _mm512_storeu_ps(acc + i + 16, c1);
    _mm512_storeu_ps(acc + i + 32, c2);
    _mm512_storeu_ps(acc + i + 48, c3);
  }
  for (; i + 16 <= lanes; i += 16) {
    __m512 c = _mm512_loadu_ps(acc + i);
    for (int64_t s = 0; s < steps; ++s) c = _mm512_dpbf16_ps(c, pairs(a, s, i), pairs(b, s, i));
    _mm512_storeu_ps(acc + i, c);
  }
  if (i < lanes) {
    const __mmask16 m = __mmask16((1u << (lanes - i)) - 1u);
    __m512 c = _mm512_maskz_loadu_ps(m, acc + i);
    for (int64_t s = 0; s < steps; ++s)
      c = _mm512_dpbf16_ps(c, (__m512bh)_mm512_maskz_loadu_epi32(m, a + 2 * (s * lanes + i)),
                           (__m512bh)_mm512_maskz_loadu_epi32(m, b + 2 * (s * lanes + i)));
    _mm512_mask_storeu_ps(acc + i, m, c);
  }
}

}  // namespace strata::kernels::avx512
