#include "grammar/matcher.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace strata::grammar {
namespace {

// Distinct states a grammar keeps masks for (16 KB each on a 129K vocabulary); past it, masks
// are computed without being kept.
constexpr size_t kMaxCachedMasks = 4096;

// Stacks interned as (position, parent) pairs, so that equal stacks have equal ids and a
// stack's advance by a byte is computed once per walk, however many trie nodes ask for it.
class Arena {
 public:
  explicit Arena(const Grammar& g) : g_(g) {}

  int32_t intern(uint32_t pos, int32_t parent) {
    const uint64_t key = (uint64_t(pos) << 32) | uint32_t(parent);
    auto [it, fresh] = index_.try_emplace(key, int32_t(nodes_.size()));
    if (fresh) nodes_.push_back({pos, parent});
    return it->second;
  }

  // Every stack reachable from `id` without consuming a byte whose top is a byte set; -1 for
  // the empty stack (the root complete).
  void expand(int32_t id, std::vector<int32_t>& out) {
    if (id < 0) {
      out.push_back(-1);
      return;
    }
    const uint32_t pos = nodes_[size_t(id)].pos;
    const int32_t parent = nodes_[size_t(id)].parent;
    const Elem e = g_.elems[pos];
    if (e.kind == Elem::Kind::bytes || e.kind == Elem::Kind::token) {
      out.push_back(id);
    } else if (e.kind == Elem::Kind::end) {
      expand(parent, out);
    } else {
      // A reference in tail position returns straight to the parent: the stack of a right-
      // recursive repetition stays one frame deep.
      int32_t base = parent;
      if (g_.elems[pos + 1].kind != Elem::Kind::end) base = intern(pos + 1, parent);
      for (uint32_t a : g_.rule_alts[e.arg]) expand(intern(a, base), out);
    }
  }

  // The terminal stacks after `id` (a terminal stack) consumes byte b.
  const std::vector<int32_t>& step(int32_t id, uint8_t b) {
    const uint64_t key = (uint64_t(uint32_t(id)) << 8) | b;
    auto it = memo_.find(key);
    if (it != memo_.end()) return results_[it->second];
    std::vector<int32_t> out;
    const Node n = nodes_[size_t(id)];
    const Elem e = g_.elems[n.pos];
    if (e.kind == Elem::Kind::bytes && g_.sets[e.arg].has(b)) {
      expand(intern(n.pos + 1, n.parent), out);
      normalize(out);
    }
    memo_.emplace(key, results_.size());
    results_.push_back(std::move(out));
    return results_.back();
  }

  // The terminal stacks after the whole added token `token`.
  void advance_token(const std::vector<int32_t>& from, int32_t token, std::vector<int32_t>& to) {
    to.clear();
    for (int32_t id : from) {
      if (id < 0) continue;
      const Node n = nodes_[size_t(id)];
      const Elem e = g_.elems[n.pos];
      if (e.kind == Elem::Kind::token && int32_t(e.arg) == token) expand(intern(n.pos + 1, n.parent), to);
    }
    normalize(to);
  }

  // Added tokens a terminal stack may take next.
  void tokens_next(const std::vector<int32_t>& from, std::vector<int32_t>& out) const {
    for (int32_t id : from) {
      if (id < 0) continue;
      const Elem e = g_.elems[nodes_[size_t(id)].pos];
      if (e.kind == Elem::Kind::token) out.push_back(int32_t(e.arg));
    }
  }

  void advance(const std::vector<int32_t>& from, uint8_t b, std::vector<int32_t>& to) {
    to.clear();
    for (int32_t id : from) {
      if (id < 0) continue;
      const std::vector<int32_t>& r = step(id, b);
      to.insert(to.end(), r.begin(), r.end());
    }
    if (from.size() > 1) normalize(to);
  }

  static void normalize(std::vector<int32_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  int32_t from_stack(const Stack& s) {
    int32_t id = -1;
    for (uint32_t p : s) id = intern(p, id);
    return id;
  }

  Stack to_stack(int32_t id) const {
    Stack s;
    for (; id >= 0; id = nodes_[size_t(id)].parent) s.push_back(nodes_[size_t(id)].pos);
    std::reverse(s.begin(), s.end());
    return s;
  }

  std::vector<int32_t> from_set(const StackSet& set) {
    std::vector<int32_t> ids;
    for (const Stack& s : set) ids.push_back(from_stack(s));
    normalize(ids);
    return ids;
  }

  StackSet to_set(const std::vector<int32_t>& ids) const {
    StackSet set;
    for (int32_t id : ids) set.push_back(to_stack(id));
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    return set;
  }

 private:
  struct Node {
    uint32_t pos;
    int32_t parent;
  };
  const Grammar& g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> index_;
  std::unordered_map<uint64_t, size_t> memo_;
  std::vector<std::vector<int32_t>> results_;  // deque-like use: only appended, read by index
};

std::string state_key(const StackSet& s) {
  std::string k;
  for (const Stack& st : s) {
    const uint32_t n = uint32_t(st.size());
    k.append(reinterpret_cast<const char*>(&n), sizeof n);
    k.append(reinterpret_cast<const char*>(st.data()), st.size() * sizeof(uint32_t));
  }
  return k;
}

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar g, std::shared_ptr<const VocabIndex> vocab)
    : g_(std::move(g)), vocab_(std::move(vocab)) {}

StackSet CompiledGrammar::initial() const {
  Arena ar(g_);
  std::vector<int32_t> ids;
  for (uint32_t a : g_.rule_alts[g_.root]) ar.expand(ar.intern(a, -1), ids);
  Arena::normalize(ids);
  return ar.to_set(ids);
}

bool CompiledGrammar::advance(StackSet& state, std::string_view bytes) const {
  Arena ar(g_);
  std::vector<int32_t> cur = ar.from_set(state), next;
  for (char c : bytes) {
    ar.advance(cur, uint8_t(c), next);
    if (next.empty()) return false;
    cur.swap(next);
  }
  state = ar.to_set(cur);
  return true;
}

bool CompiledGrammar::advance_token(StackSet& state, int32_t token) const {
  Arena ar(g_);
  std::vector<int32_t> next;
  ar.advance_token(ar.from_set(state), token, next);
  if (next.empty()) return false;
  state = ar.to_set(next);
  return true;
}

std::shared_ptr<const TokenMask> CompiledGrammar::mask(const StackSet& state) const {
  const std::string key = state_key(state);
  {
    std::lock_guard lk(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      ++stats_.hits;
      return it->second;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto m = compute(state);
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard lk(mu_);
  ++stats_.misses;
  stats_.miss_seconds += dt;
  if (cache_.size() < kMaxCachedMasks) cache_.emplace(key, m);
  return m;
}

CompiledGrammar::Stats CompiledGrammar::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

std::shared_ptr<const TokenMask> CompiledGrammar::compute(const StackSet& state) const {
  auto m = std::make_shared<TokenMask>();
  m->bits.assign((size_t(vocab_->size()) + 63) / 64, 0);
  Arena ar(g_);
  std::vector<std::vector<int32_t>> level(1, ar.from_set(state));
  m->complete = !level[0].empty() && level[0][0] == -1;
  std::vector<int32_t> added;
  ar.tokens_next(level[0], added);
  for (int32_t t : added)
    if (t >= 0 && t < vocab_->size()) m->bits[size_t(t) >> 6] |= uint64_t(1) << (t & 63);
  const auto& nodes = vocab_->nodes();
  const auto& toks = vocab_->node_tokens();
  for (size_t i = 1; i < nodes.size();) {
    const VocabIndex::Node& n = nodes[i];
    if (level.size() <= n.depth) level.resize(size_t(n.depth) + 1);
    ar.advance(level[n.depth - 1], n.byte, level[n.depth]);
    if (level[n.depth].empty()) {
      i = n.end;  // no token with this prefix can be matched
      continue;
    }
    for (uint32_t t = n.tok_begin; t < n.tok_end; ++t)
      m->bits[size_t(toks[t]) >> 6] |= uint64_t(1) << (toks[t] & 63);
    ++i;
  }
  return m;
}

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> g, int32_t start_after_token)
    : g_(std::move(g)), state_(g_->initial()), start_after_(start_after_token), active_(start_after_token < 0) {}

bool Matcher::complete() const {
  return active_ && !state_.empty() && state_.front().empty();  // the empty stack sorts first
}

void Matcher::apply(std::span<float> logits, std::span<const int32_t> eos_ids) const {
  if (!active_) return;
  const auto m = g_->mask(state_);
  const size_t V = size_t(g_->vocab().size());
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<std::pair<size_t, float>> eos;  // EOS rows keep the model's logit where they may end the output
  for (int32_t e : eos_ids)
    if (e >= 0 && size_t(e) < logits.size()) eos.emplace_back(size_t(e), logits[size_t(e)]);
  bool any = false;
  for (size_t w = 0; w * 64 < logits.size(); ++w) {
    const uint64_t bits = w < m->bits.size() ? m->bits[w] : 0;
    any = any || bits != 0;
    const size_t hi = std::min(logits.size(), w * 64 + 64);
    if (bits == ~uint64_t(0) && hi - w * 64 == 64) continue;
    for (size_t i = w * 64; i < hi; ++i)
      if (i >= V || !((bits >> (i & 63)) & 1)) logits[i] = ninf;
  }
  if (m->complete || !any)
    for (const auto& [i, v] : eos) logits[i] = v;
}

void Matcher::accept(int32_t token, std::span<const int32_t> eos_ids) {
  if (!active_) {
    active_ = token == start_after_;
    return;
  }
  if (std::find(eos_ids.begin(), eos_ids.end(), token) != eos_ids.end()) return;
  const bool in_vocab = token >= 0 && token < g_->vocab().size();
  const bool ok = in_vocab && (g_->vocab().bytes(token) ? g_->advance(state_, *g_->vocab().bytes(token))
                                                         : g_->advance_token(state_, token));
  if (!ok)
    throw Error("structured output: token " + std::to_string(token) + " is not allowed by the grammar here");
}

nlohmann::json Matcher::state_json() const { return {{"active", active_}, {"stacks", state_}}; }

void Matcher::restore_state(const nlohmann::json& j) {
  active_ = j.at("active").get<bool>();
  state_ = j.at("stacks").get<StackSet>();
  for (const Stack& s : state_)
    for (uint32_t p : s)
      if (p >= g_->grammar().elems.size()) throw Error("structured output: a saved grammar state does not fit");
}

}  // namespace strata::grammar
