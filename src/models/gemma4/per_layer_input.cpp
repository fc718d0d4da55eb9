#include "models/gemma4/per_layer_input.h"

#include <cmath>

#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/linear.h"
#include "kernels/rmsnorm.h"
#include "models/layers/gelu_tanh.h"

namespace strata::gemma4 {

std::vector<float> per_layer_inputs(const Config& c, const ModelWeights& w, const int64_t* ids, const float* e,
                                    int64_t n) {
  const int64_t L = c.num_hidden_layers, P = c.hidden_size_per_layer_input, LP = L * P;
  const float eps = float(c.rms_norm_eps);
  const float ple_scale = round_bf16(float(std::sqrt(double(P))));
  const float proj_scale = float(std::pow(double(c.hidden_size), -0.5)), in_scale = float(std::pow(2.0, -0.5));
  std::vector<float> proj(size_t(n * LP));
  kernels::linear(w.ple_projection, e, n, proj.data(), true);
  for (int64_t t = 0; t < n; ++t) {
    const uint16_t* row = w.ple_embed + ids[t] * LP;
    for (int64_t l = 0; l < L; ++l) {
      float* pl = proj.data() + t * LP + l * P;
      for (int64_t i = 0; i < P; ++i) pl[i] = round_bf16(pl[i] * proj_scale);
      kernels::rms_norm(pl, w.ple_norm, P, eps, pl);
      for (int64_t i = 0; i < P; ++i) {
        const float ple = round_bf16(bf16_to_f32(row[l * P + i]) * ple_scale);
        pl[i] = round_bf16(round_bf16(pl[i] + ple) * in_scale);
      }
    }
  }
  return proj;
}

void per_layer_block(const Config& c, const PleWeights& w, const float* in, int64_t l, float* h, int64_t n) {
  const int64_t d = c.hidden_size, P = c.hidden_size_per_layer_input, LP = c.num_hidden_layers * P;
  CallBuffer<float> g(size_t(n * P)), y(size_t(n * d));
  kernels::linear(w.gate, h, n, g.data(), true);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < P; ++i) {
      float& v = g[size_t(t * P + i)];
      v = round_bf16(models::gelu_tanh_bf16(v) * in[t * LP + l * P + i]);
    }
  kernels::linear(w.projection, g.data(), n, y.data(), true);
  for (int64_t t = 0; t < n; ++t) {
    float* yt = y.data() + t * d;
    kernels::rms_norm(yt, w.post_norm, d, float(c.rms_norm_eps), yt);
    for (int64_t i = 0; i < d; ++i) h[t * d + i] = round_bf16(h[t * d + i] + yt[i]);
  }
}

}  // namespace strata::gemma4
