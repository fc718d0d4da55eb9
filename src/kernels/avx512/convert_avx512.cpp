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

void e4m3_to_f32(const uint8_t* src, float scale, float* dst, size_t n) {
  const float* t = e4m3_table();
  __m512 s = _mm512_set1_ps(scale);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm512_storeu_ps(dst + i, _mm512_mul_ps(_mm512_i32gather_ps(idx, t, 4), s));
  }
  scalar::kConvert.e4m3_to_f32(src + i, scale, dst + i, n - i);
}

void e2m1_to_f32(const uint8_t* packed, float scale, float* dst, size_t n) {
  // 16-entry table indexed by the whole nibble (sign included)
  const __m512 tab = _mm512_setr_ps(0.f, .5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f,
                                    -0.f, -.5f, -1.f, -1.5f, -2.f, -3.f, -4.f, -6.f);
  const __m512 s = _mm512_set1_ps(scale);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i b = _mm512_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed + i / 2)));
    __m512i lo = _mm512_and_si512(b, _mm512_set1_epi32(0xF));
    __m512i hi = _mm512_srli_epi32(b, 4);
    // interleave: element 2j = lo[j], 2j+1 = hi[j]
    __m512i idx_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    __m512i nib = _mm512_permutex2var_epi32(lo, idx_lo, hi);
    _mm512_storeu_ps(dst + i, _mm512_mul_ps(_mm512_permutexvar_ps(nib, tab), s));
  }
  scalar::kConvert.e2m1_to_f32(packed + i / 2, scale, dst + i, n - i);
}

}  // namespace

const ConvertOps kConvert = {bf16_to_f32, f16_to_f32, e4m3_to_f32, e2m1_to_f32};

}  // namespace strata::kernels::avx512
