// AVX2 + F16C conversions; tails fall back to the scalar reference.
#include <immintrin.h>

#include "core/numfmt.h"
#include "kernels/convert.h"

namespace strata::kernels::avx2 {
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
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
  }
  scalar::kConvert.bf16_to_f32(src + i, dst + i, n - i);
}

void f16_to_f32(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  scalar::kConvert.f16_to_f32(src + i, dst + i, n - i);
}

void e4m3_to_f32(const uint8_t* src, float scale, float* dst, size_t n) {
  const float* t = e4m3_table();
  __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_i32gather_ps(t, idx, 4), s));
  }
  scalar::kConvert.e4m3_to_f32(src + i, scale, dst + i, n - i);
}

void e2m1_to_f32(const uint8_t* packed, float scale, float* dst, size_t n) {
  const __m256 lo_tab = _mm256_setr_ps(0.f, .5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f);
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i seven = _mm256_set1_epi32(7);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // 4 bytes -> 8 nibbles in element order (low nibble first)
    uint32_t w;
    __builtin_memcpy(&w, packed + i / 2, 4);
    __m256i b = _mm256_set1_epi32(int(w));
    __m256i sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    __m256i nib = _mm256_and_si256(_mm256_srlv_epi32(b, sh), _mm256_set1_epi32(0xF));
    __m256 mag = _mm256_permutevar8x32_ps(lo_tab, _mm256_and_si256(nib, seven));
    __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(nib, 3), 31);
    __m256 v = _mm256_or_ps(mag, _mm256_castsi256_ps(sign));
    _mm256_storeu_ps(dst + i, _mm256_mul_ps(v, s));
  }
  // i is a multiple of 8, so the packed offset for the tail is i/2
  scalar::kConvert.e2m1_to_f32(packed + i / 2, scale, dst + i, n - i);
}

}  // namespace

const ConvertOps kConvert = {bf16_to_f32, f16_to_f32, e4m3_to_f32, e2m1_to_f32, detail::e4m3_blocks<e4m3_to_f32>,
                             detail::e2m1_blocks<e2m1_to_f32>};

}  // namespace strata::kernels::avx2
