// The recurrent gated delta step (gated_delta_rule.h) with AVX-512: the same bits as the scalar
// step. Each output column j keeps its own fp64 sum over i in ascending order, as there; the
// products are exact in fp64 (fp32 × fp32), so a fused multiply-add rounds them no differently
// from a multiply then an add. The fp32 operations of the state (decay, then + k·u) stay one
// rounding each: no contraction here.
#pragma GCC optimize("fp-contract=off")
// GCC 12 flags the undefined upper halves its own headers leave in some conversions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace strata::models::avx512 {

namespace {

// Columns [j0, j0 + 16·NV) of every row: both passes over them while they sit in L1
// (128 rows × 32 columns = 16 KB at NV = 2).
template <int NV>
void columns(const float* s_in, float* s_out, const float* q, const float* k, const float* v, __m512 d, __m512 beta,
             int64_t dk, int64_t dv, int64_t j0, float* o) {
  __m512d acc[2 * NV];
  for (auto& a : acc) a = _mm512_setzero_pd();
  for (int64_t i = 0; i < dk; ++i) {
    const __m512d ki = _mm512_set1_pd(double(k[i]));
    for (int c = 0; c < NV; ++c) {
      const int64_t at = i * dv + j0 + 16 * c;
      const __m512 s = _mm512_mul_ps(_mm512_loadu_ps(s_in + at), d);
      _mm512_storeu_ps(s_out + at, s);
      acc[2 * c] = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(s)), ki, acc[2 * c]);
      acc[2 * c + 1] =
          _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1))), ki,
                          acc[2 * c + 1]);
    }
  }
  __m512 u[NV];
  for (int c = 0; c < NV; ++c) {
    const __m512 kv = _mm512_insertf32x8(_mm512_zextps256_ps512(_mm512_cvtpd_ps(acc[2 * c])), _mm512_cvtpd_ps(acc[2 * c + 1]), 1);
    u[c] = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(v + j0 + 16 * c), kv), beta);
    acc[2 * c] = acc[2 * c + 1] = _mm512_setzero_pd();
  }
  for (int64_t i = 0; i < dk; ++i) {
    const __m512 ki = _mm512_set1_ps(k[i]);
    const __m512d qi = _mm512_set1_pd(double(q[i]));
    for (int c = 0; c < NV; ++c) {
      const int64_t at = i * dv + j0 + 16 * c;
      const __m512 s = _mm512_add_ps(_mm512_loadu_ps(s_out + at), _mm512_mul_ps(ki, u[c]));
      _mm512_storeu_ps(s_out + at, s);
      acc[2 * c] = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(s)), qi, acc[2 * c]);
      acc[2 * c + 1] =
          _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1))), qi,
                          acc[2 * c + 1]);
    }
  }
  for (int c = 0; c < NV; ++c) {
    _mm256_storeu_ps(o + j0 + 16 * c, _mm512_cvtpd_ps(acc[2 * c]));
    _mm256_storeu_ps(o + j0 + 16 * c + 8, _mm512_cvtpd_ps(acc[2 * c + 1]));
  }
}

}  // namespace

// dv % 16 == 0 (the caller checks).
void gated_delta_step(const float* s_in, float* s_out, const float* q, const float* k, const float* v, float g,
                      float beta, int64_t dk, int64_t dv, float* o) {
  const __m512 d = _mm512_set1_ps(float(std::exp(double(g)))), b = _mm512_set1_ps(beta);
  int64_t j0 = 0;
  for (; j0 + 32 <= dv; j0 += 32) columns<2>(s_in, s_out, q, k, v, d, b, dk, dv, j0, o);
  for (; j0 < dv; j0 += 16) columns<1>(s_in, s_out, q, k, v, d, b, dk, dv, j0, o);
}

}  // namespace strata::models::avx512
