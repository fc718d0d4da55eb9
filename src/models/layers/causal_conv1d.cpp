#include "models/layers/causal_conv1d.h"

#include <cmath>
#include <cstring>

#include "core/numfmt.h"

namespace strata::models {

void causal_conv1d_step(const uint16_t* tail_in, uint16_t* tail_out, const float* x, const float* w,
                        int64_t channels, int64_t kernel, float* y) {
  const int64_t k1 = kernel - 1;
  for (int64_t c = 0; c < channels; ++c) {
    const float* wc = w + c * kernel;
    float acc = 0.0f;
    for (int64_t j = 0; j < k1; ++j) acc += wc[j] * bf16_to_f32(tail_in[j * channels + c]);
    acc += wc[k1] * x[c];
    y[c] = acc / (1.0f + std::exp(-acc));
  }
  if (k1 == 0) return;
  // The window moves by one row: rows only move towards the front, so in and out may alias.
  std::memmove(tail_out, tail_in + channels, size_t((k1 - 1) * channels) * sizeof(uint16_t));
  for (int64_t c = 0; c < channels; ++c) tail_out[(k1 - 1) * channels + c] = f32_to_bf16(x[c]);
}

}  // namespace strata::models
