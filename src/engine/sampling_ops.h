// The steps of sampling one token from a logits vector, each usable and testable on its own.
//
// Order (vLLM's, V0 sampler; V1 moved min-p before top-k/top-p, which changes results only
// when both are set):
//   penalties (penalties.h) -> temperature -> top-k -> top-p -> min-p -> sample
// Greedy (temperature 0) skips everything after the penalties and takes the argmax.
//
// Cost on a vocabulary of V (129,280 for DeepSeek-V4): no step sorts the vocabulary. Top-k
// finds its threshold with a k-element heap (small k) or nth_element (large k) and gathers
// only the survivors; top-p buckets the mass by logit to find the boundary in two passes and
// runs an exact quickselect on mass only inside the boundary bucket; min-p and the draw are
// single passes over the survivors.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace strata {

struct SamplingParams;

// A token still in the running. `logit` is the processed logit: penalized, shifted so that the
// largest is 0, then divided by the temperature; `weight` = exp(logit), an unnormalized
// probability (the top candidate has weight 1).
struct Candidate {
  float logit;
  float weight;
  int32_t id;
};

// The one order used wherever ties must be broken: higher logit first, then lower id.
inline bool precedes(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Largest logit, checking the whole vector: throws strata::Error on NaN or +inf, or when
// every entry is -inf (-inf alone is allowed: it is how a token is masked out).
float checked_max(std::span<const float> logits);

// Greedy choice: the largest logit, lowest id among equal ones.
int32_t argmax(std::span<const float> logits);

// The same choice without the checks, for drafts (a draft only costs speed when it is wrong):
// NaNs are passed over, and an all-NaN vector gives 0. Equal to std::max_element's position
// where no NaN is present, at ~10x its speed on a 129280-token vocabulary (0.04 against 0.47 ms
// here: a vectorized max, then a search for it, against a branch per element).
int64_t first_max_index(std::span<const float> logits);

// The k-th largest value (k >= 1, k <= size), counting equal values separately.
float kth_largest(std::span<const float> logits, size_t k);

// Candidates for every token with logit >= threshold (and > -inf), processed as described at
// Candidate with the given maximum (from checked_max) and temperature (> 0).
void gather_candidates(std::span<const float> logits, float max_logit, float threshold,
                       float temperature, std::vector<Candidate>& out);

// Top-p (nucleus), HF/vLLM semantics: keep the smallest prefix, in `precedes` order, whose
// probability mass reaches p. A token is kept iff the mass of the tokens before it is < p, so
// a token that lands exactly on p ends the nucleus and ties at the boundary are broken by id.
// Mass is relative to the current candidates (renormalized after top-k). Leaves the survivors
// in unspecified order. Always keeps at least one candidate.
void apply_top_p(std::vector<Candidate>& cands, double p);

// Min-p: keep tokens whose probability is at least min_p times the largest probability.
void apply_min_p(std::vector<Candidate>& cands, double min_p);

// Runs temperature -> top-k -> top-p -> min-p of `p` on (already penalized) logits and leaves
// the distribution to sample from in `out`. Requires p.temperature > 0.
void process_logits(std::span<const float> logits, const SamplingParams& p,
                    std::vector<Candidate>& out);

// Inverse-CDF draw: walks the candidates in their current order and returns the index of the
// one where the cumulative weight first exceeds u * total (u in [0, 1)).
size_t sample_index(std::span<const Candidate> cands, double u);

}  // namespace strata
