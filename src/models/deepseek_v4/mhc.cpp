#include "models/deepseek_v4/mhc.h"

#include <vector>

#include "core/numerics.h"
#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/linear.h"
#include "kernels/parallel.h"
#include "kernels/rmsnorm.h"
#include "kernels/sinkhorn.h"

namespace strata::dsv4 {

namespace {
// mixes[i] = (fn_i · x) · rsqrt(mean(x²) + eps) over the flattened hc·dim state. The mixes are
// split over the threads (each whole on one: the same bits): a decode step ran its 24 dots of
// 16 384 on the calling thread while the others waited.
void mixes_of(const HcWeights& w, const HcSpec& s, const float* x, int64_t n_mix, float* mixes) {
  const int64_t n = s.hc * s.dim;
  const float r = kernels::rms_scale(x, n, s.norm_eps);
  kernels::parallel_for(n_mix, 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) mixes[i] = kernels::dot(w.fn + i * n, x, n) * r;
  });
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
  hc_pre_rows(w, s, x, 1, y, post, comb);
}

void hc_pre_rows(const HcWeights& w, const HcSpec& s, const float* x, int64_t rows, float* y, float* post,
                 float* comb) {
  const int64_t hc = s.hc, n = hc * s.dim, n_mix = (2 + hc) * hc;
  // mixes[t][i] = (fn_i · x_t) · rsqrt(mean(x_t²) + eps): the dots of every row as one product
  // (each the canonical dot mixes_of takes; per row, each row read the whole fn again)
  // (a decode row keeps the plain dots: the product's set-up cost more than it saved there)
  std::vector<float> mixes(static_cast<size_t>(rows * n_mix));
  // The dots equal the product's bits in the exact profile only: the fast one sums the product
  // in its own order, so there every row takes the product.
  const bool product = rows >= 4 || active_numerics() != Numerics::exact;
  if (product)
    kernels::linear(kernels::LinearWeight{kernels::WeightFormat::f32, w.fn, nullptr, n_mix, n}, x, rows, mixes.data(), false);
  kernels::parallel_for(rows, 4, [&](int64_t b, int64_t e) {
    std::vector<float> pre(static_cast<size_t>(hc));
    for (int64_t t = b; t < e; ++t) {
      const float* xt = x + t * n;
      float* mt = mixes.data() + t * n_mix;
      if (product) {
        const float r = kernels::rms_scale(xt, n, s.norm_eps);
        for (int64_t i = 0; i < n_mix; ++i) mt[i] = mt[i] * r;
      } else {
        mixes_of(w, s, xt, n_mix, mt);
      }
      kernels::hc_split_sinkhorn(mt, w.scale, w.base, hc, s.sinkhorn_iters, s.hc_eps, pre.data(), post + t * hc,
                                 comb + t * hc * hc);
      weighted_streams(s, pre.data(), xt, y + t * s.dim);
    }
  });
}

void hc_post_rows(const HcSpec& s, const float* f, const float* post, const float* comb, int64_t rows, float* x) {
  const int64_t hc = s.hc, d = s.dim;
  kernels::parallel_for(rows, 4, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) hc_post(s, f + t * d, post + t * hc, comb + t * hc * hc, x + t * hc * d);
  });
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
