// fold16 (kernels/dot.h) in AVX-512 registers: of one canonical dot, and of 8 at once.
#pragma once
#include <immintrin.h>

namespace strata::kernels::avx512 {

// kernels::fold16 on lanes lo (0-7) and hi (8-15) in registers: the same additions, operand for
// operand (l[i] + l[i+8], then + l[i+4], + l[i+2], + l[i+1]).
inline double fold16_pd(__m512d lo, __m512d hi) {
  const __m512d a = _mm512_add_pd(lo, hi);
  const __m256d b = _mm256_add_pd(_mm512_castpd512_pd256(a), _mm512_extractf64x4_pd(a, 1));
  const __m128d c = _mm_add_pd(_mm256_castpd256_pd128(b), _mm256_extractf128_pd(b, 1));
  return _mm_cvtsd_f64(_mm_add_sd(c, _mm_unpackhi_pd(c, c)));
}

// fold16 of 8 outputs at once (acc: 8 × 16 lane sums, output j at acc + 16·j), the same fp64
// additions in the same tree as the scalar fold, so each result is the same bits: lanes i and
// i + 8, then i and i + 4, i + 2, i + 1, with the outputs packed side by side at every level.
// For a short dot (the indexer's 128 columns) the scalar fold costs as much as the products.
inline void fold8(const double* acc, float* out) {
  __m512d s[8];
  for (int j = 0; j < 8; ++j) s[j] = _mm512_add_pd(_mm512_load_pd(acc + 16 * j), _mm512_load_pd(acc + 16 * j + 8));
  __m512d t[4];  // t[p] = [a0+a4 .. a3+a7, b0+b4 .. b3+b7] for outputs a = 2p, b = 2p + 1
  for (int p = 0; p < 4; ++p)
    t[p] = _mm512_add_pd(_mm512_maskz_shuffle_f64x2(0xFF, s[2 * p], s[2 * p + 1], 0x44),
                         _mm512_maskz_shuffle_f64x2(0xFF, s[2 * p], s[2 * p + 1], 0xEE));
  const __m512i lo2 = _mm512_set_epi64(13, 12, 9, 8, 5, 4, 1, 0), hi2 = _mm512_set_epi64(15, 14, 11, 10, 7, 6, 3, 2);
  __m512d u[2];  // u[q] = [t0+t2, t1+t3] of outputs 4q .. 4q + 3
  for (int q = 0; q < 2; ++q)
    u[q] = _mm512_add_pd(_mm512_permutex2var_pd(t[2 * q], lo2, t[2 * q + 1]),
                         _mm512_permutex2var_pd(t[2 * q], hi2, t[2 * q + 1]));
  const __m512i ev = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), od = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
  const __m512d r = _mm512_add_pd(_mm512_permutex2var_pd(u[0], ev, u[1]), _mm512_permutex2var_pd(u[0], od, u[1]));
  // (the maskz forms: GCC 12 warns on the plain ones' undefined pass-through operand)
  _mm256_storeu_ps(out, _mm512_maskz_cvtpd_ps(0xFF, r));
}

}  // namespace strata::kernels::avx512
