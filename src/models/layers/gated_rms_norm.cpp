#include "models/layers/gated_rms_norm.h"

#include <cmath>
#include <vector>

#include "core/numfmt.h"
#include "kernels/rmsnorm.h"

namespace strata::models {

void gated_rms_norm(const float* o, const float* z, const uint16_t* w, int64_t n, float eps, float* y) {
  std::vector<float> ob(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ob[size_t(i)] = round_bf16(o[i]);
  const float r = kernels::rms_scale(ob.data(), n, eps);
  for (int64_t i = 0; i < n; ++i) {
    const float v = round_bf16(bf16_to_f32(w[i]) * round_bf16(ob[size_t(i)] * r));
    const double zd = z[i];
    const float silu = float(zd / (1.0 + std::exp(-zd)));
    y[i] = round_bf16(v * silu);
  }
}

}  // namespace strata::models
