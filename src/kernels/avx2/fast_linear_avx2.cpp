// The fast profile's f32 route on AVX2 (fast_linear.h): the 16 lanes as two 8-wide FMAs, each
// lane's fused multiply-add the same IEEE operation as the scalar std::fma.
#include <immintrin.h>

#include <cstdint>

namespace strata::kernels::avx2 {

void fast_fma_lanes(float* acc, const float* x, const float* w, int64_t groups) {
  __m256 a0 = _mm256_loadu_ps(acc), a1 = _mm256_loadu_ps(acc + 8);
  for (int64_t g = 0; g < groups; ++g) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + 16 * g), _mm256_loadu_ps(w + 16 * g), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + 16 * g + 8), _mm256_loadu_ps(w + 16 * g + 8), a1);
  }
  _mm256_storeu_ps(acc, a0);
  _mm256_storeu_ps(acc + 8, a1);
}

}  // namespace strata::kernels::avx2
