#include <cmath>

#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/rmsnorm.h"

namespace strata::kernels {

float rms_scale(const float* x, int64_t n, float eps) {
  float mean = sum_squares(x, n) / float(n);
  return float(1.0 / std::sqrt(double(mean + eps)));  // rsqrt in fp64, one rounding
}

void rms_norm(const float* x, const uint16_t* weight, int64_t n, float eps, float* y, bool rb) {
  const float r = rms_scale(x, n, eps);
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] * r;
    if (weight) v = bf16_to_f32(weight[i]) * v;
    y[i] = rb ? round_bf16(v) : v;
  }
}

}  // namespace strata::kernels
