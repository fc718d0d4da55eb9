// The canonical dot (kernels/dot.h) with one 16-lane vector accumulator: lane j sums elements
// k ≡ j (mod 16) with separate multiply and add (no FMA), the tail through a masked load
// (adding +0 leaves a lane unchanged), then the same 8+8, 4+4, 2+2, 1+1 fold. Bit-identical
// to the scalar reference.
// The ISA flags allow FMA; GCC would fuse mul + add (one rounding) and break bit-equality.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include "kernels/dot.h"

namespace strata::kernels::avx512 {

float dot(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(b + k)));
  if (k < n) {
    const __mmask16 m = __mmask16((1u << (n - k)) - 1u);
    acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, a + k), _mm512_maskz_loadu_ps(m, b + k)));
  }
  alignas(64) float l[16];
  _mm512_store_ps(l, acc);
  return fold16(l);
}

}  // namespace strata::kernels::avx512
