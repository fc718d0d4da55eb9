#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace strata {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Keeps the n best (precedes order) of a stream in a small sorted buffer; n <= 20, and most
// items fail the comparison with the current last entry.
class TopN {
 public:
  explicit TopN(size_t n) : n_(n) { best_.reserve(n + 1); }
  void offer(const Candidate& c) {
    if (n_ == 0) return;
    if (best_.size() == n_ && !precedes(c, best_.back())) return;
    best_.insert(std::upper_bound(best_.begin(), best_.end(), c, precedes), c);
    if (best_.size() > n_) best_.pop_back();
  }
  const std::vector<Candidate>& items() const { return best_; }

 private:
  size_t n_;
  std::vector<Candidate> best_;
};

}  // namespace

SampledLogprobs logprobs_from_logits(std::span<const float> logits, int32_t token, int top_n) {
  if (token < 0 || size_t(token) >= logits.size()) throw Error("logprobs: token out of range");
  float m = -kInf;
  for (float x : logits) m = std::max(m, x);
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - m);
  const double lse = double(m) + std::log(sum);
  const float lt = logits[size_t(token)];
  SampledLogprobs r{float(double(lt) - lse), 1, {}};
  TopN top(size_t(std::max(top_n, 0)));
  for (size_t i = 0; i < logits.size(); ++i) {
    r.rank += logits[i] > lt;
    top.offer({logits[i], 0, int32_t(i)});
  }
  for (const auto& c : top.items()) r.top.push_back({c.id, float(double(c.logit) - lse)});
  return r;
}

SampledLogprobs logprobs_from_candidates(std::span<const Candidate> cands, int32_t vocab_size,
                                         int32_t token, int top_n) {
  double total = 0;
  for (const auto& c : cands) total += c.weight;
  // weight = exp(logit), so log(weight / total) = logit - log(total) without a log per token.
  const double log_total = std::log(total);
  const Candidate* tok = nullptr;
  for (const auto& c : cands)
    if (c.id == token) tok = &c;
  if (!tok) throw Error("logprobs: sampled token is not a candidate");
  SampledLogprobs r{float(double(tok->logit) - log_total), 1, {}};
  TopN top(size_t(std::max(top_n, 0)));
  for (const auto& c : cands) {
    r.rank += c.logit > tok->logit;
    top.offer(c);
  }
  for (const auto& c : top.items()) r.top.push_back({c.id, float(double(c.logit) - log_total)});
  if (r.top.size() < size_t(std::max(top_n, 0))) {
    std::vector<int32_t> ids;
    for (const auto& c : cands) ids.push_back(c.id);
    std::sort(ids.begin(), ids.end());
    for (int32_t id = 0; id < vocab_size && r.top.size() < size_t(top_n); ++id)
      if (!std::binary_search(ids.begin(), ids.end(), id)) r.top.push_back({id, -kInf});
  }
  return r;
}

}  // namespace strata
