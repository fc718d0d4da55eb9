// Speculative decoding with the MTP block as the drafter.
//
// A round: the MTP block drafts k tokens after the pending token (each draft step feeds its
// own output streams back in as the next position's hidden state, with every write to the
// MTP's state recorded and undone afterwards); the main model runs [pending, d1..dk] in one
// forward_all, recording its state writes; the request's own Sampler samples row by row, and
// a draft is accepted while it equals the token the target samples there. The first mismatch
// ends the round with the target's token; every cache kind is rolled back to the last kept
// token by its rollback policy (cache/kind_policy.h, cache::UndoLog).
//
// Because the target samples every kept token exactly as plain decoding would (same logits
// bits — chunking never changes them — and the same Philox counter per token), the output is
// bitwise identical to decoding without speculation, for greedy and for random sampling, at
// any draft length. The draft length therefore may adapt freely (to acceptance and load).
// Classic rejection sampling (accept with min(1, p/q)) is provided as speculative_accept for
// draft distributions q; it preserves the target distribution but not the exact stream.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/logit_bias.h"
#include "models/model.h"

namespace strata {

struct SpeculativeOptions {
  int max_draft = 0;        // draft tokens per round at most; 0 = no speculation
  bool adaptive = true;     // adapt the draft length to the measured acceptance (DraftLength)
  double load = 0;          // batch load, raises the modelled cost of each drafted token
  // Benchmark mode (forced acceptance): drafts are the next tokens of this sequence (e.g. the
  // target's own greedy continuation) instead of the MTP's; the MTP still runs, so the
  // round costs what a fully accepted round costs.
  const std::vector<int32_t>* forced = nullptr;
};

struct SpeculativeStats {
  int64_t rounds = 0, drafted = 0, accepted = 0, emitted = 0;
  double acceptance_rate() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
  // Tokens produced per verification pass (accepted drafts + the target's own token).
  double mean_accepted_length() const { return rounds ? double(emitted) / double(rounds) : 0.0; }
  void add(const SpeculativeStats& o) {
    rounds += o.rounds, drafted += o.drafted, accepted += o.accepted, emitted += o.emitted;
  }
};

// Chooses each round's draft length from the acceptance rate seen so far: with per-token
// acceptance a, k drafts yield 1 + a + ... + a^k tokens per round for a cost modelled as
// 1 + k·c, where c is one drafted token's share of a step (an MTP step plus one more verified
// row; more when the batch is loaded). c starts at a prior and, where the caller times its
// rounds (observe_time), follows the measured time per extra row. The k in [0, max] with the
// best ratio wins; k = 0 (drafting does not pay) is left every kProbe rounds for one draft, so
// a rise in acceptance is noticed.
class DraftLength {
 public:
  explicit DraftLength(int max_draft, double cost_per_token = 0.1) : max_(max_draft), prior_(cost_per_token) {}
  int next(double load = 0);
  void observe(int drafted, int accepted);
  // A verification pass over `rows` rows (1 = no drafts) took `seconds`.
  void observe_time(int64_t rows, double seconds);
  // A weak prior of 1/2 (half a try), so a few rejected rounds are enough to stop drafting.
  double acceptance() const { return (hits_ + 0.25) / (tries_ + 0.5); }
  double cost_per_token() const;

  static constexpr int kProbe = 8;

 private:
  int max_;
  double prior_;
  double hits_ = 0, tries_ = 0;  // decayed counts of accepted / attempted draft positions
  double t1_ = 0, slope_ = 0;    // measured seconds of a one-row pass, per extra row (0 = not yet)
  int idle_ = 0;                 // rounds in a row without drafts
};

// The MTP block as a drafter. Invariant kept on the state: the MTP has seen every main
// position but the last (mtp_pos == pos - 1), and mtp_hidden holds the main streams of that
// last position, whose next token is not known until it is sampled.
class MtpDrafter {
 public:
  explicit MtpDrafter(const models::Model& m) : m_(m) {}
  // After the main layers ran ids[0..n) (now st.pos), with their final hidden rows
  // [n][hidden_width]: feeds the MTP every position whose next token is now known.
  // A state whose MTP is out of step (e.g. tokens run without speculation) restarts the MTP
  // at the first new position: drafts are worse for a window, outputs are not affected.
  void sync(models::Sequence& st, const int64_t* ids, int64_t n, const float* hidden) const;
  // Drafts k tokens to follow `pending` (the token at position st.pos), greedy over rows
  // [0, vocab_limit) after the request's logit bias, if any (the target samples with it, so
  // unbiased drafts of a banned or forced token would be rejected); the MTP's state is
  // unchanged afterwards. None when the MTP is not in step (nothing synced yet).
  std::vector<int64_t> draft(models::Sequence& st, int64_t pending, int k, int64_t vocab_limit,
                             const LogitBias* bias = nullptr) const;
  // Several requests' drafts at once: draft step i runs the MTP block once for every request
  // still drafting (k > i), so the head and each routed expert are read once per step for
  // all of them (per request, a batch of 8 read V4-Flash's 1 GB head 8 times per drafted token).
  // Each request's drafts are bitwise those of draft() alone; the states must be distinct.
  struct DraftJob {
    models::Sequence* state = nullptr;
    int64_t pending = 0;
    int k = 0;
    std::vector<int64_t> drafts;  // out
    const LogitBias* bias = nullptr;  // the request's logit bias (none: null or empty)
  };
  void draft_batch(std::vector<DraftJob>& jobs, int64_t vocab_limit) const;
  // sync() for several requests in one MTP pass (each weight read once for all of them).
  struct SyncJob {
    models::Sequence* state = nullptr;
    const int64_t* ids = nullptr;
    int64_t n = 0;
    const float* hidden = nullptr;
  };
  void sync_batch(const std::vector<SyncJob>& jobs) const;

 private:
  // The MTP has run every position before pos − 1 and holds the main streams of pos − 1.
  bool one_behind(const models::Sequence& st, int64_t pos) const;
  const models::Model& m_;
};

// Rejection sampling of one draft token d drawn from q: accepted with probability
// min(1, p[d]/q[d]); otherwise the replacement is drawn from normalize(max(0, p − q)). The
// result is distributed exactly as p. u1, u2 are uniform [0, 1) numbers.
struct SpeculativeChoice {
  int32_t token;
  bool accepted;
};
// Forced acceptance (benchmarks): drafts[j] becomes forced[generated + j] where forced has it,
// generated being the tokens the request has produced so far.
void force_drafts(std::vector<int64_t>& drafts, const std::vector<int32_t>& forced, int64_t generated);

SpeculativeChoice speculative_accept(std::span<const float> p, std::span<const float> q, int32_t d, double u1, double u2);

}  // namespace strata
