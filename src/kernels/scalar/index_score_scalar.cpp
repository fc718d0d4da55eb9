#include <algorithm>

#include "core/cpu.h"
#include "core/numfmt.h"
#include "kernels/index_score.h"

namespace strata::kernels {

void index_score(const float* z, int64_t heads, int64_t n, int64_t stride, const float* w, float* score) {
  if (active_isa() == Isa::avx512) return avx512::index_score(z, heads, n, stride, w, score);
  index_score_reference(z, heads, n, stride, w, score);
}

void index_score_reference(const float* z, int64_t heads, int64_t n, int64_t stride, const float* w, float* score) {
  for (int64_t t = 0; t < n; ++t) {
    float acc = 0.0f;
    for (int64_t h = 0; h < heads; ++h) {
      const float zh = round_bf16(z[h * stride + t]);
      acc += round_bf16(std::max(zh, 0.0f) * w[h]);
    }
    score[t] = round_bf16(acc);
  }
}

}  // namespace strata::kernels
