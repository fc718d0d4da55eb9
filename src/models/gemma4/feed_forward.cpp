#include "models/gemma4/feed_forward.h"

#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/linear.h"
#include "models/layers/gelu_tanh.h"

namespace strata::gemma4 {

void geglu_mlp(const GegluWeights& w, const float* x, int64_t n, float* out) {
  const int64_t I = w.gate.out;
  CallBuffer<float> g(size_t(n * I)), u(size_t(n * I));
  kernels::linear(w.gate, x, n, g.data(), true);
  kernels::linear(w.up, x, n, u.data(), true);
  for (int64_t i = 0; i < n * I; ++i)
    g[size_t(i)] = round_bf16(models::gelu_tanh_bf16(g[size_t(i)]) * u[size_t(i)]);
  kernels::linear(w.down, g.data(), n, out, true);
}

}  // namespace strata::gemma4
