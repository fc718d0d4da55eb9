#include <algorithm>
#include <cmath>

#include "core/numfmt.h"
#include "kernels/swiglu.h"

namespace strata::kernels {

void swiglu(const float* gate, const float* up, int64_t n, float limit, float weight, bool apply_weight, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i], u = up[i];
    if (limit > 0) {
      u = std::clamp(u, -limit, limit);
      g = std::min(g, limit);
    }
    float silu = float(double(g) / (1.0 + std::exp(-double(g))));  // fp64, one rounding
    float v = silu * u;
    if (apply_weight) v = weight * v;
    out[i] = round_bf16(v);
  }
}

}  // namespace strata::kernels
