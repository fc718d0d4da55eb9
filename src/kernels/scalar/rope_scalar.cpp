#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/rope.h"

namespace strata::kernels {

namespace {
// find_correction_dim of the reference: the dim whose wavelength spans num_rotations turns.
double correction_dim(double rotations, int64_t dim, double base, double max_pos) {
  return double(dim) * std::log(max_pos / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
}
}  // namespace

RopeTable::RopeTable(int64_t rope_dim, double theta, const YarnParams& y) : dim_(rope_dim) {
  if (rope_dim <= 0 || rope_dim % 2) throw Error("RopeTable: rope dim must be even and positive");
  const int64_t half = rope_dim / 2;
  freqs_.resize(size_t(half));
  for (int64_t k = 0; k < half; ++k) {
    // fp32 steps as torch: arange(0, dim, 2) / dim, base ** e, 1 / that
    float e = float(2 * k) / float(rope_dim);
    float p = std::pow(float(theta), e);
    freqs_[size_t(k)] = 1.0f / p;
  }
  if (y.original_max_position > 0) {
    double lo = std::floor(correction_dim(y.beta_fast, rope_dim, theta, double(y.original_max_position)));
    double hi = std::ceil(correction_dim(y.beta_slow, rope_dim, theta, double(y.original_max_position)));
    lo = std::max(lo, 0.0);
    hi = std::min(hi, double(rope_dim - 1));
    if (lo == hi) hi += 0.001;
    const float flo = float(lo), fden = float(hi - lo);
    const float factor = float(y.factor);
    for (int64_t k = 0; k < half; ++k) {
      float ramp = (float(k) - flo) / fden;
      ramp = std::clamp(ramp, 0.0f, 1.0f);
      float smooth = 1.0f - ramp;
      float f = freqs_[size_t(k)];
      freqs_[size_t(k)] = f / factor * (1.0f - smooth) + f * smooth;
    }
  }
}

void RopeTable::angles(int64_t pos, float* c, float* s) const {
  const float p = float(pos);
  for (size_t k = 0; k < freqs_.size(); ++k) {
    float a = p * freqs_[k];
    c[k] = float(std::cos(double(a)));  // fp64, one rounding
    s[k] = float(std::sin(double(a)));
  }
}

void RopeTable::apply(float* x, int64_t pos, bool inverse) const {
  float c[256], s[256];
  if (dim_ / 2 > 256) throw Error("RopeTable: rope dim above 512 is not supported");
  angles(pos, c, s);
  rope_rotate(x, c, s, dim_ / 2, inverse);
}

void rope_rotate(float* x, const float* c, const float* s, int64_t pairs, bool inverse) {
  for (int64_t k = 0; k < pairs; ++k) {
    const float a = x[2 * k], b = x[2 * k + 1];
    const float sn = inverse ? -s[k] : s[k];
    // complex (a + ib)(c + i sn)
    float re = a * c[k] - b * sn;
    float im = a * sn + b * c[k];
    x[2 * k] = round_bf16(re);
    x[2 * k + 1] = round_bf16(im);
  }
}

}  // namespace strata::kernels
