#include "engine/sampling_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "engine/sampling_params.h"

namespace strata {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Above this k a heap costs more than selecting on a copy of the vector.
constexpr size_t kHeapTopK = 1024;

}  // namespace

namespace {

// The largest logit (NaN passed over, -inf for none) and whether any is NaN or +inf, in one pass.
// Independent lanes so that the compiler can vectorize: `x > m ? x : m` is exactly maxps, and a
// lane's result does not depend on the order of the others.
struct MaxScan {
  float best;
  bool bad;
};
MaxScan scan_max(std::span<const float> logits) {
  constexpr size_t kLanes = 16;
  float m[kLanes];
  uint32_t bad[kLanes] = {};
  std::fill(m, m + kLanes, -kInf);
  const size_t n = logits.size(), body = n - n % kLanes;
  const float* v = logits.data();
  for (size_t i = 0; i < body; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      float x = v[i + j];
      m[j] = x > m[j] ? x : m[j];
      bad[j] |= !(x < kInf);  // NaN or +inf
    }
  for (size_t i = body; i < n; ++i) {
    m[0] = v[i] > m[0] ? v[i] : m[0];
    bad[0] |= !(v[i] < kInf);
  }
  MaxScan r{-kInf, false};
  for (size_t j = 0; j < kLanes; ++j) {
    r.best = std::max(r.best, m[j]);
    r.bad = r.bad || bad[j];
  }
  return r;
}

}  // namespace

float checked_max(std::span<const float> logits) {
  const MaxScan s = scan_max(logits);
  if (s.bad) throw Error("logits contain NaN or +inf");
  if (s.best == -kInf) throw Error("every token is masked (all logits are -inf)");
  return s.best;
}

int32_t argmax(std::span<const float> logits) {
  const float m = checked_max(logits);
  // The first (lowest id) position holding the maximum.
  return int32_t(std::find(logits.begin(), logits.end(), m) - logits.begin());
}

int64_t first_max_index(std::span<const float> logits) {
  const float best = scan_max(logits).best;
  const auto it = std::find(logits.begin(), logits.end(), best);
  return it == logits.end() ? 0 : int64_t(it - logits.begin());
}

float kth_largest(std::span<const float> logits, size_t k) {
  if (k == 0 || k > logits.size()) throw Error("kth_largest: k out of range");
  if (k <= kHeapTopK) {
    // Min-heap of the k largest so far; most tokens fail the first comparison and cost one
    // compare each.
    std::vector<float> heap(logits.begin(), logits.begin() + k);
    std::make_heap(heap.begin(), heap.end(), std::greater<float>());
    for (size_t i = k; i < logits.size(); ++i) {
      if (logits[i] > heap.front()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<float>());
        heap.back() = logits[i];
        std::push_heap(heap.begin(), heap.end(), std::greater<float>());
      }
    }
    return heap.front();
  }
  std::vector<float> copy(logits.begin(), logits.end());
  std::nth_element(copy.begin(), copy.begin() + (k - 1), copy.end(), std::greater<float>());
  return copy[k - 1];
}

void gather_candidates(std::span<const float> logits, float max_logit, float threshold,
                       float temperature, std::vector<Candidate>& out) {
  out.clear();
  // Shift before dividing: (l - max) / T <= 0, so a tiny temperature cannot overflow.
  for (size_t i = 0; i < logits.size(); ++i) {
    float l = logits[i];
    if (l >= threshold && l > -kInf) {
      float s = (l - max_logit) / temperature;
      out.push_back({s, std::exp(s), int32_t(i)});
    }
  }
}

namespace {

// Exact top-p on c[lo, hi), given that c[0, lo) precede all of it, are kept and weigh
// `before`. Quickselect on mass. Invariant: c[0, lo) kept, c[hi, ...) dropped, `before` the
// mass of c[0, lo). Returns the number of candidates kept.
size_t top_p_select(std::vector<Candidate>& c, size_t lo, size_t hi, double before, double target) {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    std::nth_element(c.begin() + lo, c.begin() + mid, c.begin() + hi, precedes);
    double m = before;
    for (size_t i = lo; i < mid; ++i) m += c[i].weight;
    if (m < target) {  // mass before c[mid] is short of p: c[mid] (and all before it) stay
      before = m + c[mid].weight;
      lo = mid + 1;
    } else {  // c[mid] and everything after it are past the nucleus
      hi = mid;
    }
  }
  return lo;
}

// Below this many candidates the quickselect alone is cheap enough.
constexpr size_t kTopPBucketMin = 4096;
constexpr int kTopPBuckets = 2048;

}  // namespace

void apply_top_p(std::vector<Candidate>& c, double p) {
  if (p >= 1.0 || c.size() <= 1) return;
  double total = 0;
  float lowest = 0;
  for (const auto& x : c) {
    total += x.weight;
    lowest = std::min(lowest, x.logit);
  }
  const double target = p * total;
  const float scale = float(kTopPBuckets) / -lowest;
  // (A tiny temperature can push logits to -inf; such a spread cannot be bucketed.)
  if (c.size() < kTopPBucketMin || !(lowest < 0) || !std::isfinite(lowest) || !std::isfinite(scale)) {
    c.resize(top_p_select(c, 0, c.size(), 0.0, target));
    return;
  }
  // Large vocabularies: first a histogram of mass by logit. The bucket index is a
  // non-increasing function of the logit, so whole buckets before the one where the mass
  // reaches p are inside the nucleus and whole buckets after it are outside; only the
  // boundary bucket needs the exact selection. Two linear passes instead of a quickselect
  // over the whole vocabulary.
  auto bucket = [scale](float logit) { return std::min(kTopPBuckets - 1, int(-logit * scale)); };
  std::vector<double> mass(kTopPBuckets, 0.0);
  for (const auto& x : c) mass[size_t(bucket(x.logit))] += x.weight;
  int boundary = 0;
  double before = 0;
  while (boundary < kTopPBuckets - 1 && before + mass[size_t(boundary)] < target) before += mass[size_t(boundary++)];
  auto mid = std::partition(c.begin(), c.end(), [&](const Candidate& x) { return bucket(x.logit) < boundary; });
  auto end = std::partition(mid, c.end(), [&](const Candidate& x) { return bucket(x.logit) == boundary; });
  c.resize(top_p_select(c, size_t(mid - c.begin()), size_t(end - c.begin()), before, target));
}

void apply_min_p(std::vector<Candidate>& c, double min_p) {
  if (min_p <= 0.0 || c.empty()) return;
  float top = 0;
  for (const auto& x : c) top = std::max(top, x.weight);
  // Normalization cancels: p_i >= min_p * p_max  <=>  w_i >= min_p * w_max.
  const float cut = float(min_p) * top;
  std::erase_if(c, [cut](const Candidate& x) { return x.weight < cut; });
}

void process_logits(std::span<const float> logits, const SamplingParams& p,
                    std::vector<Candidate>& out) {
  const float max_logit = checked_max(logits);
  float threshold = -kInf;
  // Top-k commutes with a positive temperature, so it is found on the unscaled logits and
  // only its survivors are gathered. Ties with the k-th logit are kept, as in vLLM and HF.
  if (p.top_k > 0 && size_t(p.top_k) < logits.size()) threshold = kth_largest(logits, size_t(p.top_k));
  gather_candidates(logits, max_logit, threshold, float(p.temperature), out);
  apply_top_p(out, p.top_p);
  apply_min_p(out, p.min_p);
}

size_t sample_index(std::span<const Candidate> c, double u) {
  if (c.empty()) throw Error("sample_index: no candidates");
  double total = 0;
  for (const auto& x : c) total += x.weight;
  const double target = u * total;
  double acc = 0;
  size_t last_positive = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].weight <= 0) continue;
    acc += c[i].weight;
    last_positive = i;
    if (target < acc) return i;
  }
  return last_positive;  // u * total rounded up to the total
}

}  // namespace strata
