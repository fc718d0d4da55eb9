#include "models/layers/logit_softcap.h"

#include <cmath>

#include "core/numfmt.h"

namespace strata::models {

float LogitSoftcap::of(float x, float cap) {
  const float t = round_bf16(float(std::tanh(double(round_bf16(x / cap)))));
  return round_bf16(t * cap);
}

LogitSoftcap::LogitSoftcap(float cap) : table_(65536) {
  for (uint32_t b = 0; b < 65536; ++b) table_[b] = of(bf16_to_f32(uint16_t(b)), cap);
}

void LogitSoftcap::apply(float* x, int64_t n) const {
  for (int64_t i = 0; i < n; ++i) x[i] = table_[f32_to_bf16(x[i])];
}

}  // namespace strata::models
