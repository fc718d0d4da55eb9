#include "models/dsa/moe.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/huge_buffer.h"
#include "core/numfmt.h"
#include "kernels/linear.h"
#include "kernels/parallel.h"
#include "kernels/swiglu.h"
#include "kernels/topk.h"

namespace strata::dsa {

using std::vector;

Routing route(const Config& c, const MoeWeights& w, const float* logits) {
  const int64_t E = c.n_routed_experts, G = c.n_group, per = E / G;
  vector<float> s(static_cast<size_t>(E)), biased(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    s[size_t(e)] = float(1.0 / (1.0 + std::exp(-double(logits[e]))));
    biased[size_t(e)] = s[size_t(e)] + w.bias[size_t(e)];
  }
  if (G > 1) {
    vector<float> group(static_cast<size_t>(G));
    for (int64_t g = 0; g < G; ++g) {
      const auto best = kernels::topk(biased.data() + g * per, per, 2);
      group[size_t(g)] = biased[size_t(g * per + best[0])] + biased[size_t(g * per + best[1])];
    }
    vector<bool> keep(static_cast<size_t>(G), false);
    for (int64_t g : kernels::topk(group.data(), G, c.topk_group)) keep[size_t(g)] = true;
    for (int64_t e = 0; e < E; ++e)
      if (!keep[size_t(e / per)]) biased[size_t(e)] = -std::numeric_limits<float>::infinity();
  }
  Routing r;
  r.experts = kernels::topk(biased.data(), E, c.num_experts_per_tok);
  std::sort(r.experts.begin(), r.experts.end());
  double sum = 0;
  for (int64_t e : r.experts) sum += double(s[size_t(e)]);
  const float total = float(sum), scale = float(c.routed_scaling_factor);
  for (int64_t e : r.experts) {
    float v = s[size_t(e)];
    if (c.norm_topk_prob) v = v / total;
    r.weights.push_back(v * scale);
  }
  return r;
}

void swiglu_mlp(const SwigluWeights& w, const float* x, int64_t rows, float* y) {
  const int64_t I = w.gate.out;
  CallBuffer<float> g(static_cast<size_t>(rows * I)), u(static_cast<size_t>(rows * I)), a(static_cast<size_t>(rows * I));
  kernels::linear(w.gate, x, rows, g.data(), true);
  kernels::linear(w.up, x, rows, u.data(), true);
  kernels::swiglu(g.data(), u.data(), rows * I, 0.0f, 1.0f, false, a.data());
  kernels::linear(w.down, a.data(), rows, y, true);
}

void moe_forward(const Config& c, const MoeWeights& w, const float* x, int64_t rows, float* out) {
  const int64_t d = c.hidden_size, E = c.n_routed_experts;
  vector<float> logits(static_cast<size_t>(rows * E));
  kernels::linear(w.gate, x, rows, logits.data(), false);
  vector<Routing> routes(static_cast<size_t>(rows));
  vector<vector<int64_t>> rows_of(static_cast<size_t>(E));
  for (int64_t r = 0; r < rows; ++r) {
    routes[size_t(r)] = route(c, w, logits.data() + r * E);
    for (int64_t e : routes[size_t(r)].experts) rows_of[size_t(e)].push_back(r);
  }
  // Each expert over its rows at once; y_e kept per (row, rank) until the ordered sum. Experts
  // of a few rows (all of them in decode) run whole, one per thread from a shared counter, each
  // streaming its own weights; experts of more rows one at a time, their products split over
  // the threads. An expert's outputs do not depend on the thread that computes them.
  const int64_t K = c.num_experts_per_tok;
  CallBuffer<float> expert_out(static_cast<size_t>(rows * K * d));  // every (row, rank) slot is written
  auto run = [&](int64_t e) {
    const auto& rs = rows_of[size_t(e)];
    const int64_t m = int64_t(rs.size());
    vector<float> xs(static_cast<size_t>(m * d)), ys(static_cast<size_t>(m * d));
    for (int64_t i = 0; i < m; ++i) std::copy_n(x + rs[size_t(i)] * d, d, xs.data() + i * d);
    swiglu_mlp(w.experts[size_t(e)], xs.data(), m, ys.data());
    for (int64_t i = 0; i < m; ++i) {
      const int64_t r = rs[size_t(i)];
      const auto& ex = routes[size_t(r)].experts;
      const int64_t k = int64_t(std::find(ex.begin(), ex.end(), e) - ex.begin());
      std::copy_n(ys.data() + i * d, d, expert_out.data() + (r * K + k) * d);
    }
  };
  constexpr size_t kFewRows = 16;
  vector<int64_t> few;
  for (int64_t e = 0; e < E; ++e) {
    if (rows_of[size_t(e)].empty()) continue;
    if (rows_of[size_t(e)].size() <= kFewRows) few.push_back(e);
    else run(e);
  }
  kernels::parallel_for_dynamic(int64_t(few.size()), 1, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i) run(few[size_t(i)]);
  });
  vector<float> shared;
  if (w.has_shared) {
    shared.resize(static_cast<size_t>(rows * d));
    swiglu_mlp(w.shared, x, rows, shared.data());
  }
  for (int64_t r = 0; r < rows; ++r) {
    const Routing& rt = routes[size_t(r)];
    for (int64_t i = 0; i < d; ++i) {
      float y = 0;
      for (int64_t k = 0; k < K; ++k) y = y + expert_out[size_t((r * K + k) * d + i)] * rt.weights[size_t(k)];
      if (w.has_shared) y = y + shared[size_t(r * d + i)];
      out[r * d + i] = round_bf16(y);
    }
  }
}

}  // namespace strata::dsa
