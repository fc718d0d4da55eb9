#include "models/deepseek_v4/mhc.h"

#include <vector>

#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/rmsnorm.h"
#include "kernels/sinkhorn.h"

namespace strata::dsv4 {

namespace {
// mixes[i] = (fn_i · x) · rsqrt(mean(x²) + eps) over the flattened hc·dim state
void mixes_of(const HcWeights& w, const HcSpec& s, const float* x, int64_t n_mix, float* mixes) {
  const int64_t n = s.hc * s.dim;
  const float r = kernels::rms_scale(x, n, s.norm_eps);
  for (int64_t i = 0; i < n_mix; ++i) mixes[i] = kernels::dot(w.fn + i * n, x, n) * r;
}
void weighted_streams(const HcSpec& s, const float* pre, const float* x, float* y) {
  for (int64_t c = 0; c < s.dim; ++c) {
    float acc = pre[0] * x[c];
    for (int64_t j = 1; j < s.hc; ++j) acc = acc + pre[j] * x[j * s.dim + c];
    y[c] = round_bf16(acc);
  }
}
}  // namespace

void hc_pre(const HcWeights& w, const HcSpec& s, const float* x, float* y, float* post, float* comb) {
  const int64_t n_mix = (2 + s.hc) * s.hc;
  std::vector<float> mixes(static_cast<size_t>(n_mix)), pre(static_cast<size_t>(s.hc));
  mixes_of(w, s, x, n_mix, mixes.data());
  kernels::hc_split_sinkhorn(mixes.data(), w.scale, w.base, s.hc, s.sinkhorn_iters, s.hc_eps, pre.data(), post, comb);
  weighted_streams(s, pre.data(), x, y);
}

void hc_post(const HcSpec& s, const float* f, const float* post, const float* comb, float* x) {
  const int64_t hc = s.hc, d = s.dim;
  std::vector<float> out(static_cast<size_t>(hc * d));
  for (int64_t k = 0; k < hc; ++k)
    for (int64_t c = 0; c < d; ++c) {
      float acc = comb[0 * hc + k] * x[c];
      for (int64_t j = 1; j < hc; ++j) acc = acc + comb[j * hc + k] * x[j * d + c];
      out[size_t(k * d + c)] = round_bf16(post[k] * f[c] + acc);
    }
  std::copy(out.begin(), out.end(), x);
}

void hc_head(const HcWeights& w, const HcSpec& s, const float* x, float* y) {
  std::vector<float> mixes(static_cast<size_t>(s.hc)), pre(static_cast<size_t>(s.hc));
  mixes_of(w, s, x, s.hc, mixes.data());
  for (int64_t j = 0; j < s.hc; ++j) pre[size_t(j)] = kernels::sigmoid(mixes[size_t(j)] * w.scale[0] + w.base[j]) + s.hc_eps;
  weighted_streams(s, pre.data(), x, y);
}

}  // namespace strata::dsv4
