// AVX-512 weight-row dequantization for the linear layers, bit-identical to the scalar
// reference (kernels/linear.h) for every code except the e4m3 NaN codes, which checkpoints do
// not contain. FP8: an e4m3 byte shifted into f16 bits ((b & 0x80) << 8 | (b & 0x7F) << 7) is
// the same number times 2^-8, subnormals included, so one vcvtph2ps and a multiply by
// scale · 2^8 (exact: powers of two) give e4m3(b) · scale. FP4: the 16 e2m1 values are a
// 16-entry permute table; nibbles are split and interleaved (low nibble = even column).
// BF16: the bits shifted into the high half of an f32 (exact).
#include <immintrin.h>

#include "core/numfmt.h"
#include "kernels/linear.h"

namespace strata::kernels::avx512 {

void dequant_row(const LinearWeight& w, int64_t r, float* dst) {
  const int64_t in = w.in;
  if (w.format == WeightFormat::fp8) {
    const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * in;
    const uint8_t* s = w.scale + (r / 128) * ((in + 127) / 128);
    int64_t k = 0;
    __m512 sc = _mm512_setzero_ps();
    for (; k + 16 <= in; k += 16) {
      if (k % 128 == 0) sc = _mm512_set1_ps(e8m0_to_f32(s[k / 128]) * 256.0f);  // one scale per 128 columns
      const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k)));
      const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8),
                                        _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7));
      _mm512_storeu_ps(dst + k, _mm512_mul_ps(_mm512_cvtph_ps(h), sc));
    }
    for (; k < in; ++k) dst[k] = e4m3_to_f32(p[k]) * e8m0_to_f32(s[k / 128]);
    return;
  }
  if (w.format == WeightFormat::fp4 && in % 32 == 0) {
    const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * (in / 2);
    const uint8_t* s = w.scale + r * (in / 32);
    alignas(64) float table[16];
    for (int i = 0; i < 16; ++i) table[i] = e2m1_to_f32(uint8_t(i));
    const __m512 lut = _mm512_load_ps(table);
    for (int64_t k = 0; k < in; k += 32) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k / 2));
      const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
      const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
      const __m512 sc = _mm512_set1_ps(e8m0_to_f32(s[k / 32]));
      const __m512i i0 = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi));
      const __m512i i1 = _mm512_cvtepu8_epi32(_mm_unpackhi_epi8(lo, hi));
      _mm512_storeu_ps(dst + k, _mm512_mul_ps(_mm512_permutexvar_ps(i0, lut), sc));
      _mm512_storeu_ps(dst + k + 16, _mm512_mul_ps(_mm512_permutexvar_ps(i1, lut), sc));
    }
    return;
  }
  if (w.format == WeightFormat::bf16) {
    const uint16_t* p = static_cast<const uint16_t*>(w.data) + r * in;
    int64_t k = 0;
    for (; k + 16 <= in; k += 16) {
      const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k)));
      _mm512_storeu_ps(dst + k, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
    }
    for (; k < in; ++k) dst[k] = bf16_to_f32(p[k]);
    return;
  }
  kernels::dequant_row(w, r, dst);
}

}  // namespace strata::kernels::avx512
