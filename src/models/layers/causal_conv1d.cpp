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
    double acc = 0.0;  // bf16 × bf16 products are exact in fp64, and so is this short sum
    for (int64_t j = 0; j < k1; ++j) acc += double(wc[j]) * double(bf16_to_f32(tail_in[j * channels + c]));
    acc += double(wc[k1]) * double(x[c]);
    const double v = double(round_bf16(float(acc)));
    y[c] = round_bf16(float(v / (1.0 + std::exp(-v))));
  }
  if (k1 == 0) return;
  // The window moves by one row: rows only move towards the front, so in and out may alias.
  std::memmove(tail_out, tail_in + channels, size_t((k1 - 1) * channels) * sizeof(uint16_t));
  for (int64_t c = 0; c < channels; ++c) tail_out[(k1 - 1) * channels + c] = f32_to_bf16(x[c]);
}

}  // namespace strata::models
