// kv_dots.h with AVX-512: the scalar reference's bits (lanes 0-7 and 8-15 of the canonical dot
// in two accumulators, folded as kernels::fold16 does).
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/fold8.h"
#include "kernels/dot.h"

namespace strata::models::avx512 {

namespace {
inline __m512 bf16x16(const uint16_t* p) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}
inline __m512d lo_pd(__m512 f) { return _mm512_cvtps_pd(_mm512_castps512_ps256(f)); }
inline __m512d hi_pd(__m512 f) { return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))); }
}  // namespace

double kv_dot(const float* q, const uint16_t* k, int64_t n) {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 kf = bf16x16(k + i), qf = _mm512_loadu_ps(q + i);
    lo = _mm512_fmadd_pd(lo_pd(qf), lo_pd(kf), lo);
    hi = _mm512_fmadd_pd(hi_pd(qf), hi_pd(kf), hi);
  }
  alignas(64) double l[16];
  _mm512_store_pd(l, lo);
  _mm512_store_pd(l + 8, hi);
  return kernels::fold16(l);
}

namespace {
using kernels::avx512::fold16_pd;

template <int G>
void dots_fixed(const double* q, int64_t qs, const uint16_t* k, int64_t n, double* out) {
  __m512d lo[G], hi[G];
  for (int g = 0; g < G; ++g) lo[g] = hi[g] = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 kf = bf16x16(k + i);
    const __m512d kl = lo_pd(kf), kh = hi_pd(kf);
    for (int g = 0; g < G; ++g) {
      lo[g] = _mm512_fmadd_pd(_mm512_loadu_pd(q + g * qs + i), kl, lo[g]);
      hi[g] = _mm512_fmadd_pd(_mm512_loadu_pd(q + g * qs + i + 8), kh, hi[g]);
    }
  }
  for (int g = 0; g < G; ++g) out[g] = fold16_pd(lo[g], hi[g]);
}

// 16 columns of G heads' sums in registers across a block of keys.
template <int G>
void accumulate_fixed(double* acc, const double* p, int64_t pg, const uint16_t* const* v, int64_t nk, int64_t n) {
  for (int64_t c = 0; c < n; c += 16) {
    __m512d lo[G], hi[G];
    for (int g = 0; g < G; ++g) lo[g] = _mm512_loadu_pd(acc + g * n + c), hi[g] = _mm512_loadu_pd(acc + g * n + c + 8);
    for (int64_t j = 0; j < nk; ++j) {
      const __m512 vf = bf16x16(v[j] + c);
      const __m512d vl = lo_pd(vf), vh = hi_pd(vf);
      for (int g = 0; g < G; ++g) {
        const __m512d pj = _mm512_set1_pd(p[j * pg + g]);
        lo[g] = _mm512_fmadd_pd(pj, vl, lo[g]);
        hi[g] = _mm512_fmadd_pd(pj, vh, hi[g]);
      }
    }
    for (int g = 0; g < G; ++g) _mm512_storeu_pd(acc + g * n + c, lo[g]), _mm512_storeu_pd(acc + g * n + c + 8, hi[g]);
  }
}
}  // namespace

void kv_dots(const double* q, int64_t qs, int64_t G, const uint16_t* k, int64_t n, double* out) {
  int64_t g = 0;
  for (; g + 4 <= G; g += 4) dots_fixed<4>(q + g * qs, qs, k, n, out + g);
  for (; g + 2 <= G; g += 2) dots_fixed<2>(q + g * qs, qs, k, n, out + g);
  for (; g < G; ++g) dots_fixed<1>(q + g * qs, qs, k, n, out + g);
}

void kv_accumulate(double* acc, int64_t G, const double* p, const uint16_t* const* v, int64_t nk, int64_t n) {
  int64_t g = 0;
  for (; g + 4 <= G; g += 4) accumulate_fixed<4>(acc + g * n, p + g, G, v, nk, n);
  for (; g < G; ++g) accumulate_fixed<1>(acc + g * n, p + g, G, v, nk, n);
}

}  // namespace strata::models::avx512
