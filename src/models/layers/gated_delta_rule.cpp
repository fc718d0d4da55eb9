#include "models/layers/gated_delta_rule.h"

#include <cmath>
#include <vector>

#include "core/cpu.h"
#include "core/numfmt.h"
#include "kernels/dot.h"

namespace strata::models {

namespace avx512 {
void gated_delta_step(const float* s_in, float* s_out, const float* q, const float* k, const float* v, float g,
                      float beta, int64_t dk, int64_t dv, float* o);
}

void gated_delta_step(const float* s_in, float* s_out, const float* q, const float* k, const float* v, float g,
                      float beta, int64_t dk, int64_t dv, float* o) {
  if (active_isa() == Isa::avx512 && dv % 16 == 0) return avx512::gated_delta_step(s_in, s_out, q, k, v, g, beta, dk, dv, o);
  gated_delta_step_scalar(s_in, s_out, q, k, v, g, beta, dk, dv, o);
}

void gated_delta_step_scalar(const float* s_in, float* s_out, const float* q, const float* k, const float* v, float g,
                             float beta, int64_t dk, int64_t dv, float* o) {
  const float d = float(std::exp(double(g)));
  std::vector<double> acc(static_cast<size_t>(dv), 0.0);
  for (int64_t i = 0; i < dk; ++i) {
    const float* si = s_in + i * dv;
    float* so = s_out + i * dv;
    const double ki = k[i];
    for (int64_t j = 0; j < dv; ++j) {
      so[j] = si[j] * d;
      acc[size_t(j)] += double(so[j]) * ki;
    }
  }
  std::vector<float> u(static_cast<size_t>(dv));
  for (int64_t j = 0; j < dv; ++j) u[size_t(j)] = (v[j] - float(acc[size_t(j)])) * beta;
  for (int64_t j = 0; j < dv; ++j) acc[size_t(j)] = 0.0;
  for (int64_t i = 0; i < dk; ++i) {
    float* so = s_out + i * dv;
    const float ki = k[i];
    const double qi = q[i];
    for (int64_t j = 0; j < dv; ++j) {
      const float p = ki * u[size_t(j)];
      so[j] = so[j] + p;
      acc[size_t(j)] += double(so[j]) * qi;
    }
  }
  for (int64_t j = 0; j < dv; ++j) o[j] = float(acc[size_t(j)]);
}

void prepare_delta_qk(float* q, float* k, int64_t dk) {
  const float scale = float(std::pow(double(dk), -0.5));
  for (float* x : {k, q}) {
    const float r = float(1.0 / std::sqrt(double(kernels::sum_squares(x, dk) + 1e-6f)));
    for (int64_t i = 0; i < dk; ++i) x[i] = x[i] * r;
  }
  for (int64_t i = 0; i < dk; ++i) q[i] = q[i] * scale;
}

void delta_gates(float a, float b, float a_log, float dt_bias, float* g, float* beta) {
  *beta = round_bf16(float(1.0 / (1.0 + std::exp(-double(b)))));
  const double x = double(a + dt_bias);
  const float sp = float(x > 20.0 ? x : std::log1p(std::exp(x)));
  *g = -float(std::exp(double(a_log))) * sp;
}

}  // namespace strata::models
