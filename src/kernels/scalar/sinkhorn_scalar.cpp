#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/sinkhorn.h"

namespace strata::kernels {

void hc_split_sinkhorn(const float* mixes, const float* s, const float* base, int64_t hc, int64_t iters,
                       float eps, float* pre, float* post, float* comb) {
  for (int64_t i = 0; i < hc; ++i) {
    pre[i] = sigmoid(mixes[i] * s[0] + base[i]) + eps;
    post[i] = 2.0f * sigmoid(mixes[hc + i] * s[1] + base[hc + i]);
  }
  const int64_t n = hc * hc;
  for (int64_t i = 0; i < n; ++i) comb[i] = mixes[2 * hc + i] * s[2] + base[2 * hc + i];
  auto normalize_rows = [&] {
    for (int64_t r = 0; r < hc; ++r) {
      float sum = 0.0f;
      for (int64_t c = 0; c < hc; ++c) sum += comb[r * hc + c];
      for (int64_t c = 0; c < hc; ++c) comb[r * hc + c] = comb[r * hc + c] / (sum + eps);
    }
  };
  auto normalize_cols = [&] {
    for (int64_t c = 0; c < hc; ++c) {
      float sum = 0.0f;
      for (int64_t r = 0; r < hc; ++r) sum += comb[r * hc + c];
      for (int64_t r = 0; r < hc; ++r) comb[r * hc + c] = comb[r * hc + c] / (sum + eps);
    }
  };
  // row softmax + eps
  for (int64_t r = 0; r < hc; ++r) {
    float* row = comb + r * hc;
    float m = *std::max_element(row, row + hc);
    float sum = 0.0f;
    for (int64_t c = 0; c < hc; ++c) {
      row[c] = float(std::exp(double(row[c] - m)));  // fp64 exp, one rounding
      sum += row[c];
    }
    for (int64_t c = 0; c < hc; ++c) row[c] = row[c] / sum + eps;
  }
  normalize_cols();
  for (int64_t it = 1; it < iters; ++it) {
    normalize_rows();
    normalize_cols();
  }
}

}  // namespace strata::kernels
