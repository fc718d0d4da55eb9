#include <immintrin.h>

#include "kernels/probe_impl.h"

namespace strata::kernels::avx512 {

uint64_t sum_bytes(const uint8_t* p, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 192));
  }
  return uint64_t(_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3))));
}

void bf16_dot_loop(uint64_t iters) {
  __m512 acc[12];
  for (auto& a : acc) a = _mm512_setzero_ps();
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3F80), y = (__m512bh)_mm512_set1_epi16(0x3F80);
  for (uint64_t k = 0; k < iters; ++k)
    for (auto& a : acc) a = _mm512_dpbf16_ps(a, x, y);
  __m512 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, acc[j]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
}

void int8_dot_loop(uint64_t iters) {
  __m512i acc[12];
  for (auto& a : acc) a = _mm512_setzero_si512();
  const __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(1);
  for (uint64_t k = 0; k < iters; ++k)
    for (auto& a : acc) a = _mm512_dpbusd_epi32(a, x, y);
  __m512i s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_epi32(s, acc[j]);
  volatile int sink = _mm512_reduce_add_epi32(s);
  (void)sink;
}

void fp64_fma_loop(uint64_t iters) {
  __m512d acc[12];
  for (auto& a : acc) a = _mm512_setzero_pd();
  const __m512d x = _mm512_set1_pd(1.0000001), y = _mm512_set1_pd(0.9999999);
  for (uint64_t k = 0; k < iters; ++k)
    for (auto& a : acc) a = _mm512_fmadd_pd(x, y, a);
  __m512d s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_pd(s, acc[j]);
  volatile double sink = _mm512_reduce_add_pd(s);
  (void)sink;
}

}  // namespace strata::kernels::avx512
