#include "models/layers/rotate_half_rope.h"

#include <algorithm>
#include <cmath>

#include "core/numfmt.h"

namespace strata::models {

RotateHalfRope::RotateHalfRope(int64_t rotary_dim, double theta) : dim_(rotary_dim) {
  const double base = double(float(theta));
  for (int64_t i = 0; i < rotary_dim / 2; ++i) {
    const float e = float(2 * i) / float(rotary_dim);
    const float p = float(std::pow(base, double(e)));
    inv_.push_back(1.0f / p);
  }
}

RotateHalfRope::RotateHalfRope(int64_t rotary_dim, double theta, int64_t rotated_angles)
    : RotateHalfRope(rotary_dim, theta) {
  for (size_t i = size_t(std::max<int64_t>(rotated_angles, 0)); i < inv_.size(); ++i) inv_[i] = 0.0f;
}

void RotateHalfRope::cos_sin(int64_t pos, float* c, float* s) const {
  for (size_t i = 0; i < inv_.size(); ++i) {
    const double a = double(float(pos) * inv_[i]);
    c[i] = round_bf16(float(std::cos(a)));
    s[i] = round_bf16(float(std::sin(a)));
  }
}

void RotateHalfRope::apply(float* x, const float* c, const float* s) const {
  const int64_t h = dim_ / 2;
  for (int64_t i = 0; i < h; ++i) {
    const float a = x[i], b = x[i + h];
    x[i] = round_bf16(round_bf16(a * c[i]) + round_bf16(-b * s[i]));
    x[i + h] = round_bf16(round_bf16(b * c[i]) + round_bf16(a * s[i]));
  }
}

void RotateHalfRope::apply(float* x, int64_t pos) const {
  std::vector<float> c(inv_.size()), s(inv_.size());
  cos_sin(pos, c.data(), s.data());
  apply(x, c.data(), s.data());
}

}  // namespace strata::models
