#include "models/qwen3_5/feed_forward.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/linear.h"

namespace strata::qwen35 {

void swiglu_mlp(const SwigluWeights& w, const float* x, int64_t n, float* out) {
  const int64_t I = w.gate.out;
  CallBuffer<float> g(size_t(n * I)), u(size_t(n * I));
  kernels::linear(w.gate, x, n, g.data(), true);
  kernels::linear(w.up, x, n, u.data(), true);
  for (int64_t i = 0; i < n * I; ++i) {
    const double gd = g[size_t(i)];
    const float silu = round_bf16(float(gd / (1.0 + std::exp(-gd))));
    g[size_t(i)] = round_bf16(silu * u[size_t(i)]);
  }
  kernels::linear(w.down, g.data(), n, out, true);
}

void moe_route(const Config& c, const MoeWeights& w, const float* x, int64_t n, std::vector<int64_t>& experts,
               std::vector<float>& weights, std::vector<float>* probs) {
  const int64_t E = c.num_experts, k = c.num_experts_per_tok;
  std::vector<float> logits(size_t(n * E));
  kernels::linear(w.router, x, n, logits.data(), true);
  experts.assign(size_t(n * k), 0);
  weights.assign(size_t(n * k), 0.0f);
  if (probs) probs->assign(size_t(n * E), 0.0f);
  std::vector<float> p(static_cast<size_t>(E));
  std::vector<int64_t> order(static_cast<size_t>(E));
  for (int64_t r = 0; r < n; ++r) {
    const float* lr = logits.data() + r * E;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t e = 0; e < E; ++e) mx = std::max(mx, double(lr[e]));
    std::vector<double> ex(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e) sum += (ex[size_t(e)] = std::exp(double(lr[e]) - mx));
    for (int64_t e = 0; e < E; ++e) p[size_t(e)] = float(ex[size_t(e)] / sum);
    if (probs) std::copy(p.begin(), p.end(), probs->begin() + r * E);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[size_t(a)] > p[size_t(b)]; });
    double top = 0.0;
    for (int64_t j = 0; j < k; ++j) top += double(p[size_t(order[size_t(j)])]);
    const float total = float(top);
    for (int64_t j = 0; j < k; ++j) {
      experts[size_t(r * k + j)] = order[size_t(j)];
      weights[size_t(r * k + j)] = round_bf16(p[size_t(order[size_t(j)])] / total);
    }
  }
}

void moe_mlp(const Config& c, const MoeWeights& w, const float* x, int64_t n, float* out) {
  const int64_t d = c.hidden_size, k = c.num_experts_per_tok;
  std::vector<int64_t> experts;
  std::vector<float> weights;
  moe_route(c, w, x, n, experts, weights);
  // Rows per expert, ascending expert id: each expert runs once over all its rows.
  std::vector<float> y(size_t(n * d), 0.0f);
  std::vector<int64_t> ids(experts);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int64_t e : ids) {
    std::vector<int64_t> rows;
    std::vector<float> wt;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < k; ++j)
        if (experts[size_t(r * k + j)] == e) rows.push_back(r), wt.push_back(weights[size_t(r * k + j)]);
    const int64_t m = int64_t(rows.size());
    std::vector<float> xe(size_t(m * d)), he(size_t(m * d));
    for (int64_t i = 0; i < m; ++i) std::copy_n(x + rows[size_t(i)] * d, d, xe.begin() + i * d);
    swiglu_mlp(w.experts[size_t(e)], xe.data(), m, he.data());
    for (int64_t i = 0; i < m; ++i) {
      float* yr = y.data() + rows[size_t(i)] * d;
      for (int64_t j = 0; j < d; ++j) yr[j] = round_bf16(yr[j] + round_bf16(he[size_t(i * d + j)] * wt[size_t(i)]));
    }
  }
  std::vector<float> shared(size_t(n * d)), sg(static_cast<size_t>(n));
  swiglu_mlp(w.shared, x, n, shared.data());
  kernels::linear(w.shared_gate, x, n, sg.data(), true);
  for (int64_t r = 0; r < n; ++r) {
    const float g = round_bf16(float(1.0 / (1.0 + std::exp(-double(sg[size_t(r)])))));
    for (int64_t j = 0; j < d; ++j)
      out[r * d + j] = round_bf16(y[size_t(r * d + j)] + round_bf16(g * shared[size_t(r * d + j)]));
  }
}

}  // namespace strata::qwen35
