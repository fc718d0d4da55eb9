#include "models/gemma4/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/numfmt.h"
#include "kernels/linear.h"
#include "kernels/rmsnorm.h"
#include "models/gemma4/feed_forward.h"

namespace strata::gemma4 {

void moe_route(const Config& c, const MoeWeights& w, const float* r, int64_t n, std::vector<int64_t>& experts,
               std::vector<float>& weights) {
  const int64_t d = c.hidden_size, E = c.num_experts, k = c.top_k_experts;
  const float eps = float(c.rms_norm_eps), root = float(std::pow(double(d), -0.5));
  std::vector<float> x(size_t(n * d)), logits(size_t(n * E));
  for (int64_t t = 0; t < n; ++t) {
    float* xt = x.data() + t * d;
    kernels::rms_norm(r + t * d, nullptr, d, eps, xt);
    for (int64_t i = 0; i < d; ++i) xt[i] = round_bf16(round_bf16(xt[i] * bf16_to_f32(w.router_scale[i])) * root);
  }
  kernels::linear(w.router, x.data(), n, logits.data(), true);
  experts.assign(size_t(n * k), 0);
  weights.assign(size_t(n * k), 0.0f);
  std::vector<float> p(static_cast<size_t>(E));
  std::vector<double> ex(static_cast<size_t>(E));
  std::vector<int64_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < n; ++t) {
    const float* lt = logits.data() + t * E;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t e = 0; e < E; ++e) mx = std::max(mx, double(lt[e]));
    for (int64_t e = 0; e < E; ++e) sum += (ex[size_t(e)] = std::exp(double(lt[e]) - mx));
    for (int64_t e = 0; e < E; ++e) p[size_t(e)] = round_bf16(float(ex[size_t(e)] / sum));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[size_t(a)] > p[size_t(b)]; });
    double top = 0.0;
    for (int64_t j = 0; j < k; ++j) top += double(p[size_t(order[size_t(j)])]);
    const float total = round_bf16(float(top));
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = order[size_t(j)];
      experts[size_t(t * k + j)] = e;
      weights[size_t(t * k + j)] = round_bf16(round_bf16(p[size_t(e)] / total) * bf16_to_f32(w.expert_scale[e]));
    }
  }
}

void moe_experts(const Config& c, const MoeWeights& w, const float* r, int64_t n, float* out) {
  const int64_t d = c.hidden_size, k = c.top_k_experts;
  std::vector<int64_t> experts;
  std::vector<float> weights;
  moe_route(c, w, r, n, experts, weights);
  std::vector<float> x(size_t(n * d));
  for (int64_t t = 0; t < n; ++t) kernels::rms_norm(r + t * d, w.pre_norm, d, float(c.rms_norm_eps), x.data() + t * d);
  std::fill(out, out + n * d, 0.0f);
  std::vector<int64_t> ids(experts);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int64_t e : ids) {  // each expert once over all its rows, ascending id
    std::vector<int64_t> rows;
    std::vector<float> wt;
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < k; ++j)
        if (experts[size_t(t * k + j)] == e) rows.push_back(t), wt.push_back(weights[size_t(t * k + j)]);
    const int64_t m = int64_t(rows.size());
    std::vector<float> xe(size_t(m * d)), he(size_t(m * d));
    for (int64_t i = 0; i < m; ++i) std::copy_n(x.data() + rows[size_t(i)] * d, d, xe.begin() + i * d);
    geglu_mlp(w.experts[size_t(e)], xe.data(), m, he.data());
    for (int64_t i = 0; i < m; ++i) {
      float* o = out + rows[size_t(i)] * d;
      for (int64_t j = 0; j < d; ++j) o[j] = round_bf16(o[j] + round_bf16(he[size_t(i * d + j)] * wt[size_t(i)]));
    }
  }
}

}  // namespace strata::gemma4
