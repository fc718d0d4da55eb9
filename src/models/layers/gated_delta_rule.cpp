#include "models/layers/gated_delta_rule.h"

#include <cmath>
#include <vector>

namespace strata::models {

void gated_delta_step(const float* s_in, float* s_out, const float* q, const float* k, const float* v, float g,
                      float beta, int64_t dk, int64_t dv, float* o) {
  const float decay = std::exp(g);
  std::vector<float> u(static_cast<size_t>(dv), 0.0f);
  // kv_mem = (decay·S)ᵀ k, row by row in i order.
  for (int64_t i = 0; i < dk; ++i) {
    const float* si = s_in + i * dv;
    float* so = s_out + i * dv;
    const float ki = k[i];
    for (int64_t j = 0; j < dv; ++j) {
      so[j] = si[j] * decay;
      u[size_t(j)] += so[j] * ki;
    }
  }
  for (int64_t j = 0; j < dv; ++j) u[size_t(j)] = beta * (v[j] - u[size_t(j)]);
  for (int64_t j = 0; j < dv; ++j) o[j] = 0.0f;
  for (int64_t i = 0; i < dk; ++i) {
    float* so = s_out + i * dv;
    const float ki = k[i], qi = q[i];
    for (int64_t j = 0; j < dv; ++j) {
      so[j] += ki * u[size_t(j)];
      o[j] += so[j] * qi;
    }
  }
}

void l2_normalize(float* x, int64_t n, float eps, float scale) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float r = scale / std::sqrt(ss + eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= r;
}

}  // namespace strata::models
