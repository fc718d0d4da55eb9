#include "engine/speculative.h"

#include <algorithm>

#include "cache/undo_log.h"
#include "core/error.h"
#include "models/deepseek_v4/attention.h"

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

bool MtpDrafter::one_behind(const dsv4::SequenceState& st, int64_t pos) const {
  const auto& cfg = m_.config();
  return pos > 0 && st.mtp_pos[0] == pos - 1 && int64_t(st.mtp_hidden.size()) == cfg.hc_mult * cfg.hidden_size;
}

void MtpDrafter::sync(dsv4::SequenceState& st, const int64_t* ids, int64_t n, const float* hidden) const {
  if (m_.n_mtp() == 0) throw Error("speculative decoding needs an MTP block; the checkpoint has none");
  const auto& cfg = m_.config();
  const int64_t hcd = cfg.hc_mult * cfg.hidden_size, pos0 = st.pos - n;
  std::vector<float> rows;
  std::vector<int64_t> next;
  const bool in_step = (pos0 == 0 && st.mtp_pos[0] == 0) || one_behind(st, pos0);
  if (in_step && pos0 > 0) {  // the pending position pos0 - 1 learns its next token, ids[0]
    rows.insert(rows.end(), st.mtp_hidden.begin(), st.mtp_hidden.end());
    next.push_back(ids[0]);
  } else if (!in_step) {
    const bool fp4 = st.mtp[0].index_keys.codec.kind == dsv4::EntryCodec::Kind::index_fp4;  // keep its storage
    dsv4::init_layer_state(m_.attention_spec(cfg.num_hidden_layers), st.mtp[0],
                           fp4 ? dsv4::IndexKeyFormat::fp4 : dsv4::IndexKeyFormat::fp8);
    st.mtp_pos[0] = pos0;
  }
  rows.insert(rows.end(), hidden, hidden + (n - 1) * hcd);
  next.insert(next.end(), ids + 1, ids + n);
  if (!next.empty()) m_.mtp_advance(st, rows.data(), next.data(), int64_t(next.size()));
  st.mtp_hidden.assign(hidden + (n - 1) * hcd, hidden + n * hcd);
}

std::vector<int64_t> MtpDrafter::draft(dsv4::SequenceState& st, int64_t pending, int k, int64_t vocab_limit) const {
  std::vector<int64_t> out;
  // Only an MTP in step (see sync) knows the hidden state it drafts from.
  if (k <= 0 || m_.n_mtp() == 0 || !one_behind(st, st.pos)) return out;
  cache::UndoLog undo;
  const int64_t start = st.mtp_pos[0];
  std::vector<float> h = st.mtp_hidden, streams;
  int64_t tok = pending;
  const int64_t room = m_.max_positions() - start;
  for (int i = 0; i < k && i < room; ++i) {
    auto logits = m_.mtp_forward(st, h.data(), &tok, 1, 0, &undo, &streams);
    const auto end = logits.begin() + std::min<int64_t>(vocab_limit, int64_t(logits.size()));
    tok = int64_t(std::max_element(logits.begin(), end) - logits.begin());  // ties: lowest id
    out.push_back(tok);
    h.swap(streams);
  }
  m_.rollback_mtp(st, undo, start);
  return out;
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
