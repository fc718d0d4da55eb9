#include "models/layers/offset_rms_norm.h"

#include "core/numfmt.h"
#include "kernels/rmsnorm.h"

namespace strata::models {

void offset_rms_norm(const float* x, const uint16_t* w, int64_t n, float eps, float* y) {
  const float r = kernels::rms_scale(x, n, eps);
  for (int64_t i = 0; i < n; ++i) y[i] = round_bf16((x[i] * r) * (1.0f + bf16_to_f32(w[i])));
}

}  // namespace strata::models
