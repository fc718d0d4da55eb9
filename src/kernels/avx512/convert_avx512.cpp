// AVX-512 conversions; tails fall back to the scalar reference.
#include <immintrin.h>

#include "core/numfmt.h"
#include "kernels/convert.h"

namespace strata::kernels::avx512 {
namespace {

const float* e4m3_table() {
  static const auto* t = [] {
    auto* v = new float[256];
    for (int i = 0; i < 256; ++i) v[i] = strata::e4m3_to_f32(uint8_t(i));
    return v;
  }();
  return t;
}

void bf16_to_f32(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    __m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(w));
  }
  scalar::kConvert.bf16_to_f32(src + i, dst + i, n - i);
}

void f16_to_f32(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  scalar::kConvert.f16_to_f32(src + i, dst + i, n - i);
}

// e4m3 → f16 by moving its fields into place (exponent 4 → 5 bits, same bias offset up to a
// factor 2^8, subnormals included), then the exact conversion and ×256: the table's value
// without a gather. The NaN codes (0x7F, 0xFF) would come out as ±480: blended with the
// table's NaNs. The caller multiplies by the scale, rounding once as the reference does.
struct E4m3x16 {
  __m512 k256 = _mm512_set1_ps(256.0f), nan_pos, nan_neg;
  E4m3x16() {
    const float* t = e4m3_table();
    nan_pos = _mm512_set1_ps(t[0x7F]);
    nan_neg = _mm512_set1_ps(t[0xFF]);
  }
  __m512 operator()(const uint8_t* p) const {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m256i w = _mm256_cvtepu8_epi16(b);
    const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x80)), 8),
                                      _mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x7F)), 7));
    const __m512 v = _mm512_mul_ps(_mm512_cvtph_ps(h), k256);
    const __mmask16 is_nan = _mm_cmpeq_epi8_mask(_mm_and_si128(b, _mm_set1_epi8(0x7F)), _mm_set1_epi8(0x7F));
    const __mmask16 neg = _mm_movepi8_mask(b);
    return _mm512_mask_blend_ps(is_nan & neg, _mm512_mask_blend_ps(is_nan, v, nan_pos), nan_neg);
  }
};

// 16 e2m1 elements (8 packed bytes): a 16-entry table indexed by the whole nibble (sign included).
inline __m512 e2m1x16(const uint8_t* packed) {
  const __m512 tab = _mm512_setr_ps(0.f, .5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f, -0.f, -.5f, -1.f, -1.5f, -2.f, -3.f, -4.f, -6.f);
  const __m512i b = _mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed)));
  const __m512i lo = _mm512_and_si512(b, _mm512_set1_epi32(0xF));
  const __m512i hi = _mm512_srli_epi32(b, 4);
  // interleave: element 2j = lo[j], 2j+1 = hi[j]
  const __m512i idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  return _mm512_permutexvar_ps(_mm512_permutex2var_epi32(lo, idx, hi), tab);
}

void e4m3_to_f32(const uint8_t* src, float scale, float* dst, size_t n) {
  const E4m3x16 dec;
  const __m512 s = _mm512_set1_ps(scale);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_mul_ps(dec(src + i), s));
  scalar::kConvert.e4m3_to_f32(src + i, scale, dst + i, n - i);
}

void e2m1_to_f32(const uint8_t* packed, float scale, float* dst, size_t n) {
  const __m512 s = _mm512_set1_ps(scale);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_mul_ps(e2m1x16(packed + i / 2), s));
  scalar::kConvert.e2m1_to_f32(packed + i / 2, scale, dst + i, n - i);
}

void e4m3_blocks_to_f32(const uint8_t* src, const uint8_t* scales, size_t block, float* dst, size_t n) {
  if (block % 16) return detail::e4m3_blocks<e4m3_to_f32>(src, scales, block, dst, n);
  const E4m3x16 dec;
  for (size_t b = 0; b * block < n; ++b) {
    const __m512 s = _mm512_set1_ps(e8m0_to_f32(scales[b]));
    for (size_t i = b * block; i < (b + 1) * block; i += 16) _mm512_storeu_ps(dst + i, _mm512_mul_ps(dec(src + i), s));
  }
}

void e2m1_blocks_to_f32(const uint8_t* packed, const uint8_t* scales, size_t block, float* dst, size_t n) {
  if (block % 16) return detail::e2m1_blocks<e2m1_to_f32>(packed, scales, block, dst, n);
  for (size_t b = 0; b * block < n; ++b) {
    const __m512 s = _mm512_set1_ps(e8m0_to_f32(scales[b]));
    for (size_t i = b * block; i < (b + 1) * block; i += 16)
      _mm512_storeu_ps(dst + i, _mm512_mul_ps(e2m1x16(packed + i / 2), s));
  }
}

}  // namespace

const ConvertOps kConvert = {bf16_to_f32, f16_to_f32, e4m3_to_f32, e2m1_to_f32, e4m3_blocks_to_f32, e2m1_blocks_to_f32};

}  // namespace strata::kernels::avx512
