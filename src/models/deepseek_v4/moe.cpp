#include "models/deepseek_v4/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/linear.h"
#include "kernels/parallel.h"
#include "kernels/swiglu.h"
#include "kernels/topk.h"

namespace strata::dsv4 {

using std::vector;

namespace {
// Most rows an expert may have for the experts to run whole, one per thread (moe_forward).
constexpr int64_t kExpertsPerThreadRows = 4;
}  // namespace

Routing route(const MoeWeights& w, const MoeSpec& s, const float* x, int64_t token) {
  vector<float> sc(static_cast<size_t>(s.experts));
  kernels::linear(w.gate, x, 1, sc.data(), false);  // fp32 gate
  return route_scored(w, s, std::move(sc), token);
}

Routing route_scored(const MoeWeights& w, const MoeSpec& s, vector<float> sc, int64_t token) {
  const int64_t E = s.experts;
  if (s.scoring == "softmax") {
    float m = *std::max_element(sc.begin(), sc.end()), sum = 0.0f;
    for (auto& v : sc) sum += (v = float(std::exp(double(v - m))));
    for (auto& v : sc) v = v / sum;
  } else if (s.scoring == "sigmoid") {
    for (auto& v : sc) v = float(1.0 / (1.0 + std::exp(-double(v))));
  } else {
    // softplus with torch's threshold (x > 20 → x), then sqrt
    for (auto& v : sc) {
      const double x = v;
      v = float(std::sqrt(x > 20.0 ? x : std::log1p(std::exp(x))));  // fp64, one rounding
    }
  }
  Routing r;
  if (s.hash) {
    if (token < 0 || token >= s.vocab) throw Error("moe: token id " + std::to_string(token) + " out of vocabulary");
    for (int64_t k = 0; k < s.topk; ++k) {
      // memcpy: safetensors offsets need not be 8-aligned
      int64_t e;
      if (w.tid2eid_i64) {
        std::memcpy(&e, static_cast<const uint8_t*>(w.tid2eid) + (token * s.topk + k) * 8, 8);
      } else {
        int32_t v;
        std::memcpy(&v, static_cast<const uint8_t*>(w.tid2eid) + (token * s.topk + k) * 4, 4);
        e = v;
      }
      if (e < 0 || e >= E) throw Error("moe: tid2eid names expert " + std::to_string(e));
      r.experts.push_back(e);
    }
  } else {
    vector<float> biased(sc);
    if (w.bias)
      for (int64_t e = 0; e < E; ++e) biased[size_t(e)] = sc[size_t(e)] + w.bias[e];
    r.experts = kernels::topk(biased.data(), E, s.topk);
  }
  float sum = 0.0f;
  for (int64_t e : r.experts) {
    r.weights.push_back(sc[size_t(e)]);
    sum += sc[size_t(e)];
  }
  for (auto& v : r.weights) {
    if (s.scoring != "softmax") v = v / sum;
    v = v * s.route_scale;
  }
  return r;
}

void expert_forward(const ExpertWeights& e, const MoeSpec& s, const float* x, int64_t rows, const float* rw, float* out) {
  const int64_t mi = e.w1.out;
  vector<float> g(size_t(rows * mi)), u(size_t(rows * mi)), h(size_t(rows * mi));
  kernels::linear(e.w1, x, rows, g.data(), true);
  kernels::linear(e.w3, x, rows, u.data(), true);
  for (int64_t r = 0; r < rows; ++r)
    kernels::swiglu(g.data() + r * mi, u.data() + r * mi, mi, s.swiglu_limit, rw ? rw[r] : 1.0f, rw != nullptr,
                    h.data() + r * mi);
  kernels::linear(e.w2, h.data(), rows, out, true);
}

void moe_forward(const MoeWeights& w, const MoeSpec& s, const float* x, const int64_t* ids, int64_t rows, float* out) {
  const int64_t d = s.dim;
  // The gate as one product over all rows: per row, each read the whole fp32 gate (4 MB on
  // V4-Flash) from memory. Each score is the same canonical dot either way.
  const int64_t E = s.experts;
  vector<float> scores(size_t(rows * E));
  kernels::linear(w.gate, x, rows, scores.data(), false);
  vector<Routing> routes;
  for (int64_t r = 0; r < rows; ++r)
    routes.push_back(route_scored(w, s, vector<float>(scores.begin() + r * E, scores.begin() + (r + 1) * E), ids[r]));
  vector<float> y(size_t(rows * d), 0.0f);
  // Each routed expert with its tokens (rows) and their weights, in ascending id.
  struct ExpertJob {
    int64_t e = 0;
    vector<int64_t> members;
    vector<float> wts, out;
  };
  vector<ExpertJob> jobs;
  int64_t most_rows = 0;
  for (int64_t e = 0; e < s.experts; ++e) {
    ExpertJob j;
    j.e = e;
    for (int64_t r = 0; r < rows; ++r) {
      // An expert listed twice in a tid2eid row counts once, with its last slot's weight: the
      // reference's y[rows] += ... is an index_put whose last write wins.
      int64_t slot = -1;
      for (size_t k = 0; k < routes[size_t(r)].experts.size(); ++k)
        if (routes[size_t(r)].experts[k] == e) slot = int64_t(k);
      if (slot >= 0) {
        j.members.push_back(r);
        j.wts.push_back(routes[size_t(r)].weights[size_t(slot)]);
      }
    }
    if (j.members.empty()) continue;
    most_rows = std::max<int64_t>(most_rows, int64_t(j.members.size()));
    jobs.push_back(std::move(j));
  }
  const auto run_job = [&](ExpertJob& j) {
    const int64_t n = int64_t(j.members.size());
    vector<float> xin(size_t(n * d));
    j.out.resize(size_t(n * d));
    for (int64_t i = 0; i < n; ++i) std::copy_n(x + j.members[size_t(i)] * d, d, xin.data() + i * d);
    expert_forward(w.experts[size_t(j.e)], s, xin.data(), n, j.wts.data(), j.out.data());
  };
  // Decode-sized work (every expert a few rows): whole experts per thread, each streaming its
  // own weights with no hand-off between its three products (each product split over the
  // threads cost a wake-up and a wait, ~270 of them a layer at 8 requests). Larger row counts:
  // one expert at a time, its products split over the threads. The same bits either way (an
  // expert's outputs do not depend on the thread that computes them); the sums below run in
  // ascending expert id.
  if (most_rows <= kExpertsPerThreadRows && jobs.size() > 1) {
    // one expert at a time from a shared counter: 6 experts in fixed halves left a thread
    // waiting whenever its three were the slower ones
    kernels::parallel_for_dynamic(int64_t(jobs.size()), 1, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) run_job(jobs[size_t(i)]);
    });
  } else {
    for (auto& j : jobs) run_job(j);
  }
  for (const auto& j : jobs)
    for (size_t i = 0; i < j.members.size(); ++i)
      for (int64_t c = 0; c < d; ++c) y[size_t(j.members[i] * d + c)] += j.out[i * size_t(d) + size_t(c)];
  vector<float> eo(size_t(rows * d));
  expert_forward(w.shared, s, x, rows, nullptr, eo.data());
  for (int64_t i = 0; i < rows * d; ++i) out[i] = round_bf16(y[size_t(i)] + eo[size_t(i)]);
}

}  // namespace strata::dsv4
