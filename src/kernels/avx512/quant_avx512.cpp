// AVX-512 FP8 activation quantization, bit for bit the scalar reference
// (scalar/quant_scalar.cpp: strata::f32_to_e4m3 then e4m3_to_f32, times the block scale), 16
// values per vector. The rounding to the e4m3 grid is done on the f32 value itself: in the
// normal range (|q| ≥ 2^-6) round to nearest even at the third mantissa bit, below it to the
// nearest multiple of 2^-9 (the subnormal quantum); NaN becomes the reference's quiet NaN with
// its sign. The clamp to ±448 comes first, so nothing rounds past the largest finite code.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include <algorithm>

#include "core/numfmt.h"
#include "kernels/quant.h"

namespace strata::kernels::avx512 {

void quant_fp8(const float* x, int64_t n, int64_t block, float* y) {
  const __m512 qmax = _mm512_set1_ps(kE4M3Max), qmin = _mm512_set1_ps(-kE4M3Max);
  const __m512 subnormal_below = _mm512_set1_ps(0.015625f);
  const __m512i sign_bit = _mm512_set1_epi32(int32_t(0x80000000u)), magnitude = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i inf_bits = _mm512_set1_epi32(0x7F800000), quiet_nan = _mm512_set1_epi32(0x7FC00000);
  const __m512i half_ulp = _mm512_set1_epi32(0x7FFFF), keep = _mm512_set1_epi32(int32_t(0xFFF00000u));
  const __m512i one = _mm512_set1_epi32(1);
  for (int64_t b = 0; b < n; b += block) {
    // amax ignores NaNs as std::max(m, |x|) does: vmaxps returns its second operand on a NaN
    __m512 m = _mm512_setzero_ps();
    for (int64_t i = b; i < b + block; i += 16) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + i)), m);
    const float s = fp8_block_scale(std::max(_mm512_reduce_max_ps(m), kFp8AmaxFloor));
    const __m512 vs = _mm512_set1_ps(s);
    for (int64_t i = b; i < b + block; i += 16) {
      // std::clamp(x / s, -448, 448): vminps/vmaxps return their second operand (q) on a NaN
      const __m512 q = _mm512_max_ps(qmin, _mm512_min_ps(qmax, _mm512_div_ps(_mm512_loadu_ps(x + i), vs)));
      const __m512i bits = _mm512_castps_si512(q);
      const __m512i sign = _mm512_and_si512(bits, sign_bit), a = _mm512_and_si512(bits, magnitude);
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, 20), one);
      const __m512i normal = _mm512_or_si512(_mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(a, half_ulp), lsb), keep), sign);
      const __m512 sub = _mm512_roundscale_ps(q, (9 << 4) | _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512 r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(q), subnormal_below, _CMP_LT_OQ),
                                      _mm512_castsi512_ps(normal), sub);
      r = _mm512_mask_blend_ps(_mm512_cmpgt_epu32_mask(a, inf_bits), r, _mm512_castsi512_ps(_mm512_or_si512(sign, quiet_nan)));
      _mm512_storeu_ps(y + i, _mm512_mul_ps(r, vs));
    }
  }
}

}  // namespace strata::kernels::avx512
