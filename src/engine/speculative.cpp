#include "engine/speculative.h"

#include <algorithm>

#include "cache/undo_log.h"
#include "core/error.h"
#include "engine/sampling_ops.h"

namespace strata {

double DraftLength::cost_per_token() const {
  if (t1_ > 0 && slope_ > 0) return std::clamp(slope_ / t1_, 0.005, 4.0);
  return prior_;
}

int DraftLength::next(double load) {
  if (max_ <= 0) return 0;
  const double a = acceptance(), c = cost_per_token() * (1.0 + load);
  int best = 0;
  double best_gain = 1.0, yield = 1, term = 1;  // k = 0: one token per plain step
  for (int k = 1; k <= max_; ++k) {
    term *= a;
    yield += term;
    const double gain = yield / (1.0 + c * k);
    if (gain > best_gain) best_gain = gain, best = k;
  }
  if (best == 0 && ++idle_ >= kProbe) best = 1;
  if (best > 0) idle_ = 0;
  return best;
}

void DraftLength::observe(int drafted, int accepted) {
  if (drafted <= 0) return;
  constexpr double kDecay = 0.9;  // remembers roughly the last ten rounds
  const int tried = accepted + (accepted < drafted ? 1 : 0);
  hits_ = kDecay * hits_ + accepted;
  tries_ = kDecay * tries_ + tried;
}

void DraftLength::observe_time(int64_t rows, double seconds) {
  constexpr double kMix = 0.2;
  if (rows <= 1) {
    t1_ = t1_ > 0 ? (1 - kMix) * t1_ + kMix * seconds : seconds;
  } else if (t1_ > 0) {
    const double s = std::max(0.0, (seconds - t1_) / double(rows - 1));
    slope_ = slope_ > 0 ? (1 - kMix) * slope_ + kMix * s : s;
  }
}

bool MtpDrafter::one_behind(const models::Sequence& st, int64_t pos) const {
  return pos > 0 && st.mtp_pos[0] == pos - 1 && int64_t(st.mtp_hidden.size()) == m_.facts().hidden_width;
}

void MtpDrafter::sync(models::Sequence& st, const int64_t* ids, int64_t n, const float* hidden) const {
  sync_batch({SyncJob{&st, ids, n, hidden}});
}

void MtpDrafter::sync_batch(const std::vector<SyncJob>& jobs) const {
  if (m_.n_mtp() == 0) throw Error("speculative decoding needs an MTP block; the checkpoint has none");
  const int64_t hcd = m_.facts().hidden_width;
  // Per job: the rows the MTP has not seen yet (the pending position's streams, when it is in
  // step, then every new position but the last) and the token after each.
  std::vector<std::vector<float>> rows(jobs.size());
  std::vector<std::vector<int64_t>> next(jobs.size());
  std::vector<models::Model::MtpItem> items;
  for (size_t i = 0; i < jobs.size(); ++i) {
    models::Sequence& st = *jobs[i].state;
    const int64_t n = jobs[i].n, pos0 = st.pos - n;
    const bool in_step = (pos0 == 0 && st.mtp_pos[0] == 0) || one_behind(st, pos0);
    if (in_step && pos0 > 0) {  // the pending position pos0 - 1 learns its next token, ids[0]
      rows[i].insert(rows[i].end(), st.mtp_hidden.begin(), st.mtp_hidden.end());
      next[i].push_back(jobs[i].ids[0]);
    } else if (!in_step) {
      m_.restart_mtp(st, pos0);
    }
    rows[i].insert(rows[i].end(), jobs[i].hidden, jobs[i].hidden + (n - 1) * hcd);
    next[i].insert(next[i].end(), jobs[i].ids + 1, jobs[i].ids + n);
    if (next[i].empty()) continue;
    models::Model::MtpItem it;
    it.state = &st;
    it.hidden = rows[i].data();
    it.next_ids = next[i].data();
    it.n = int64_t(next[i].size());
    items.push_back(std::move(it));
  }
  if (!items.empty()) m_.mtp_forward_batch(items);
  for (const auto& job : jobs)
    job.state->mtp_hidden.assign(job.hidden + (job.n - 1) * hcd, job.hidden + job.n * hcd);
}

std::vector<int64_t> MtpDrafter::draft(models::Sequence& st, int64_t pending, int k, int64_t vocab_limit,
                                       const LogitBias* bias) const {
  std::vector<DraftJob> jobs(1);
  jobs[0].state = &st;
  jobs[0].pending = pending;
  jobs[0].k = k;
  jobs[0].bias = bias;
  draft_batch(jobs, vocab_limit);
  return std::move(jobs[0].drafts);
}

void MtpDrafter::draft_batch(std::vector<DraftJob>& jobs, int64_t vocab_limit) const {
  struct Run {
    DraftJob* job;
    int64_t start, room, tok;
    std::vector<float> h;
    cache::UndoLog undo;
  };
  std::vector<Run> runs;
  runs.reserve(jobs.size());  // items point at runs' members
  for (auto& job : jobs) {
    job.drafts.clear();
    // Only an MTP in step (see sync) knows the hidden state it drafts from.
    if (job.k <= 0 || m_.n_mtp() == 0 || !one_behind(*job.state, job.state->pos)) continue;
    const int64_t start = job.state->mtp_pos[0];
    runs.push_back(Run{&job, start, m_.max_positions() - start, job.pending, job.state->mtp_hidden, {}});
  }
  // Every state is rolled back, also when a step throws.
  struct Rollback {
    const models::Model& m;
    std::vector<Run>& runs;
    ~Rollback() {
      for (auto& r : runs) m.rollback_mtp(*r.job->state, r.undo, r.start);
    }
  } rollback{m_, runs};
  for (int i = 0;; ++i) {
    std::vector<models::Model::MtpItem> items;
    std::vector<Run*> who;
    for (auto& r : runs) {
      if (i >= r.job->k || i >= r.room) continue;
      models::Model::MtpItem it;
      it.state = r.job->state;
      it.hidden = r.h.data();
      it.next_ids = &r.tok;
      it.n = 1;
      it.undo = &r.undo;
      it.logits = true;
      items.push_back(std::move(it));
      who.push_back(&r);
    }
    if (items.empty()) break;
    m_.mtp_forward_batch(items);
    for (size_t b = 0; b < items.size(); ++b) {
      Run& r = *who[b];
      auto& logits = items[b].out;
      const size_t n = size_t(std::min<int64_t>(vocab_limit, int64_t(logits.size())));
      if (r.job->bias)
        for (const auto& [id, bias] : *r.job->bias)
          if (size_t(id) < n) logits[size_t(id)] += float(bias);
      r.tok = first_max_index(std::span<const float>(logits.data(), n));  // ties: lowest id
      r.job->drafts.push_back(r.tok);
      r.h.swap(items[b].streams);
    }
  }
}

void force_drafts(std::vector<int64_t>& drafts, const std::vector<int32_t>& forced, int64_t generated) {
  for (size_t j = 0; j < drafts.size() && size_t(generated) + j < forced.size(); ++j)
    drafts[j] = forced[size_t(generated) + j];
}

SpeculativeChoice speculative_accept(std::span<const float> p, std::span<const float> q, int32_t d, double u1,
                                     double u2) {
  if (p.size() != q.size() || d < 0 || size_t(d) >= p.size()) throw Error("speculative_accept: bad distributions");
  const double pd = p[size_t(d)], qd = q[size_t(d)];
  if (qd > 0 && u1 * qd < pd) return {d, true};  // u1 < p/q, without dividing
  double mass = 0;
  for (size_t i = 0; i < p.size(); ++i) mass += std::max(0.0, double(p[i]) - double(q[i]));
  if (mass <= 0) return {d, true};  // p == q: the draft is always right
  double target = u2 * mass, acc = 0;
  int32_t last = d;
  for (size_t i = 0; i < p.size(); ++i) {
    const double r = std::max(0.0, double(p[i]) - double(q[i]));
    if (r <= 0) continue;
    last = int32_t(i);
    acc += r;
    if (target < acc) return {int32_t(i), false};
  }
  return {last, false};
}

}  // namespace strata
