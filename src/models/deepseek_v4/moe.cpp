#include "models/deepseek_v4/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "dist/world.h"
#include "models/expert_parallel.h"
#include "core/numfmt.h"
#include "kernels/linear.h"
#include "kernels/parallel.h"
#include "kernels/swiglu.h"
#include "kernels/topk.h"

namespace strata::dsv4 {

using std::vector;

namespace {
// Most rows an expert may have for the experts to run whole, one per thread (moe_forward): the
// products' few-rows kernels keep a thread busy to 16 rows (a 256-token prefill's experts have
// ~6); 4 and 16 measured the same in the exact profile.
constexpr int64_t kExpertsPerThreadRows = 16;

// sigmoid or sqrt(softplus) of one gate score (softmax is over all of them: route_scored)
float activate(const MoeSpec& s, float v) {
  const double x = v;
  if (s.scoring == "sigmoid") return float(1.0 / (1.0 + std::exp(-x)));
  return float(std::sqrt(x > 20.0 ? x : std::log1p(std::exp(x))));  // torch's softplus threshold; fp64, one rounding
}

// Gate scores [rows, experts] (fp32 x · gateᵀ). A hash layer's experts come from the token ids,
// so where the scoring is elementwise only the chosen experts' gate rows are needed (6 of 256
// on V4): those rows, gathered, as one product — each score the same canonical dot as in the
// whole gate — and the other scores left 0, never read. The whole gate where the rows chosen
// are most of it, or the gate is stored block-scaled.
vector<float> gate_scores(const MoeWeights& w, const MoeSpec& s, const float* x, const int64_t* ids, int64_t rows) {
  const int64_t E = s.experts;
  vector<float> sc(size_t(rows * E), 0.0f);
  const auto f = w.gate.format;
  const bool plain = f == kernels::WeightFormat::bf16 || f == kernels::WeightFormat::f32;
  vector<int64_t> chosen;
  if (s.hash && s.scoring != "softmax" && plain) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t e : hash_experts(w, s, ids[r])) chosen.push_back(e);
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  }
  if (chosen.empty() || int64_t(chosen.size()) * 2 > E) {
    kernels::linear(w.gate, x, rows, sc.data(), false);
    return sc;
  }
  const int64_t n = int64_t(chosen.size()), row_bytes = w.gate.in * (f == kernels::WeightFormat::f32 ? 4 : 2);
  vector<uint8_t> gathered(size_t(n * row_bytes));
  for (int64_t j = 0; j < n; ++j)
    std::memcpy(gathered.data() + j * row_bytes, static_cast<const uint8_t*>(w.gate.data) + chosen[size_t(j)] * row_bytes,
                size_t(row_bytes));
  kernels::LinearWeight g = w.gate;
  g.data = gathered.data();
  g.out = n;
  vector<float> part(size_t(rows * n));
  kernels::linear(g, x, rows, part.data(), false);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) sc[size_t(r * E + chosen[size_t(j)])] = part[size_t(r * n + j)];
  return sc;
}

}  // namespace

vector<int64_t> hash_experts(const MoeWeights& w, const MoeSpec& s, int64_t token) {
  if (token < 0 || token >= s.vocab) throw Error("moe: token id " + std::to_string(token) + " out of vocabulary");
  vector<int64_t> experts;
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
    if (e < 0 || e >= s.experts) throw Error("moe: tid2eid names expert " + std::to_string(e));
    experts.push_back(e);
  }
  return experts;
}

Routing route(const MoeWeights& w, const MoeSpec& s, const float* x, int64_t token) {
  return route_scored(w, s, gate_scores(w, s, x, &token, 1), token);
}

Routing route_scored(const MoeWeights& w, const MoeSpec& s, vector<float> sc, int64_t token) {
  const int64_t E = s.experts;
  const bool softmax = s.scoring == "softmax";
  if (softmax) {
    float m = *std::max_element(sc.begin(), sc.end()), sum = 0.0f;
    for (auto& v : sc) sum += (v = float(std::exp(double(v - m))));
    for (auto& v : sc) v = v / sum;
  }
  Routing r;
  vector<float> chosen_scores;
  if (s.hash) {
    r.experts = hash_experts(w, s, token);
    for (int64_t e : r.experts) chosen_scores.push_back(softmax ? sc[size_t(e)] : activate(s, sc[size_t(e)]));
  } else {
    if (!softmax)
      for (auto& v : sc) v = activate(s, v);
    vector<float> biased(sc);
    if (w.bias)
      for (int64_t e = 0; e < E; ++e) biased[size_t(e)] = sc[size_t(e)] + w.bias[e];
    r.experts = kernels::topk(biased.data(), E, s.topk);
    for (int64_t e : r.experts) chosen_scores.push_back(sc[size_t(e)]);
  }
  float sum = 0.0f;
  for (float v : chosen_scores) {
    r.weights.push_back(v);
    sum += v;
  }
  for (auto& v : r.weights) {
    if (!softmax) v = v / sum;
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
  // The gate as one product over all rows (per row, each read the whole gate from memory);
  // in hash layers only the rows of the experts the ids choose. Each score is the same
  // canonical dot either way.
  const int64_t E = s.experts;
  const vector<float> scores = gate_scores(w, s, x, ids, rows);
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
    jobs.push_back(std::move(j));
  }
  // Under expert parallelism this rank runs its share of each expert's rows (all of them in
  // one process); the others' outputs arrive in gather_expert_outputs below.
  const int rank = dist::rank();
  const auto mine = [&](const ExpertJob& j, size_t i) {
    return models::all_local(w.placement) || models::computing_rank(w.placement, j.e, int64_t(i)) == rank;
  };
  const auto run_job = [&](ExpertJob& j) {
    j.out.resize(j.members.size() * size_t(d));
    vector<size_t> local;
    for (size_t i = 0; i < j.members.size(); ++i)
      if (mine(j, i)) local.push_back(i);
    const int64_t n = int64_t(local.size());
    if (n == 0) return;
    vector<float> xin(size_t(n * d)), wts(static_cast<size_t>(n)), part;
    for (int64_t i = 0; i < n; ++i) {
      std::copy_n(x + j.members[local[size_t(i)]] * d, d, xin.data() + i * d);
      wts[size_t(i)] = j.wts[local[size_t(i)]];
    }
    const bool whole = n == int64_t(j.members.size());
    if (!whole) part.resize(size_t(n * d));
    float* o = whole ? j.out.data() : part.data();
    expert_forward(w.experts[size_t(j.e)], s, xin.data(), n, wts.data(), o);
    if (!whole)
      for (int64_t i = 0; i < n; ++i) std::copy_n(o + i * d, d, j.out.data() + local[size_t(i)] * size_t(d));
  };
  // Experts of a few rows (every expert in decode, most in a short prefill): whole experts, one
  // per thread, each streaming its own weights with no hand-off between its three products (each
  // product split over the threads cost a wake-up and a wait, ~270 of them a layer at 8
  // requests). Experts of more rows: one at a time, their products split over the threads (a
  // 32-token prefill ran all its ~135 experts a layer this way whenever one had more than 4
  // rows). The same bits either way (an expert's outputs do not depend on the thread that
  // computes them); the sums below run in ascending expert id.
  vector<ExpertJob*> few_rows;
  for (auto& j : jobs) {
    if (int64_t(j.members.size()) <= kExpertsPerThreadRows) few_rows.push_back(&j);
    else run_job(j);
  }
  // one expert at a time from a shared counter (6 experts in fixed halves left a thread waiting
  // whenever its three were the slower ones); a single expert runs inline
  kernels::parallel_for_dynamic(int64_t(few_rows.size()), 1, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) run_job(*few_rows[size_t(i)]);
  });
  if (!models::all_local(w.placement)) {
    vector<models::ExpertJob> shares;
    for (auto& j : jobs) shares.push_back({j.e, int64_t(j.members.size()), j.out.data()});
    models::gather_expert_outputs(w.placement, rank, shares, d);
  }
  for (const auto& j : jobs)
    for (size_t i = 0; i < j.members.size(); ++i)
      for (int64_t c = 0; c < d; ++c) y[size_t(j.members[i] * d + c)] += j.out[i * size_t(d) + size_t(c)];
  vector<float> eo(size_t(rows * d));
  expert_forward(w.shared, s, x, rows, nullptr, eo.data());
  for (int64_t i = 0; i < rows * d; ++i) out[i] = round_bf16(y[size_t(i)] + eo[size_t(i)]);
}

}  // namespace strata::dsv4
