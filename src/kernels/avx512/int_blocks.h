// Pieces the exact integer routes share (avx512/fp4_int_avx512.cpp, index_dot_avx512.cpp):
// FP4 codes as unsigned bytes, and integer block sums scaled into fp64 accumulators.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "core/numfmt.h"

namespace strata::kernels::avx512 {

// The 16 e2m1 codes as 2·value + 12 (0 .. 24: 2·e2m1 is an integer in [-12, 12]), repeated
// four times so that a 64-byte permute (vpermb) or a 16-byte shuffle (vpshufb) reads it.
inline __m512i e2m1_offset_table() {
  struct Table {
    alignas(64) int8_t t[64];
    Table() {
      for (int i = 0; i < 64; ++i) t[i] = int8_t(int(2 * e2m1_to_f32(uint8_t(i % 16))) + 12);
    }
  };
  static const Table table;
  return _mm512_load_si512(table.t);
}

// lo += sum[0..8) · 2^e[0..8), hi += sum[8..16) · 2^e[8..16): 16 integer block sums (below
// 2^31) times powers of two well inside fp64's normal range, so every product is exact.
inline void add_scaled(__m512i sum, __m512i e, __m512d& lo, __m512d& hi) {
  const __m512i bits = _mm512_add_epi32(e, _mm512_set1_epi32(1023));
  const __m512d p_lo = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(bits)), 52));
  const __m512d p_hi = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(bits, 1)), 52));
  lo = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(sum)), p_lo, lo);
  hi = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(sum, 1)), p_hi, hi);
}

// acc += sum[0..16) · 2^e[0..16): both halves into one accumulator (the two references above
// the same vector, added in turn). Where the sums and their additions are exact (the integer
// routes' condition) the order of the additions is free.
inline void add_scaled(__m512i sum, __m512i e, __m512d& acc) { add_scaled(sum, e, acc, acc); }

}  // namespace strata::kernels::avx512
