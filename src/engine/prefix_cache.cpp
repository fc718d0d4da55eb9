#include "engine/prefix_cache.h"

#include <algorithm>

namespace strata::engine {

namespace {
uint64_t mix(uint64_t h, uint64_t v) {  // splitmix64-style step over one value
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  return h;
}
}  // namespace

// h_k = H(h_{k-1}, block k's ids): a block's key names its whole prefix.
uint64_t PrefixCache::chain(const std::vector<int32_t>& tokens, int64_t blocks) const {
  uint64_t h = 0x5eed;
  for (int64_t i = 0; i < blocks * block_; ++i) h = mix(h, uint64_t(uint32_t(tokens[size_t(i)])));
  return mix(h, uint64_t(blocks));
}

bool PrefixCache::contains(const std::vector<int32_t>& tokens, int64_t n) const {
  if (n % block_ || n > int64_t(tokens.size())) return false;
  auto it = map_.find(chain(tokens, n / block_));
  return it != map_.end() && std::equal(it->second.tokens.begin(), it->second.tokens.end(), tokens.begin());
}

int64_t PrefixCache::lookup(const std::vector<int32_t>& tokens, int64_t limit, dsv4::SequenceState& out) {
  for (int64_t k = std::min<int64_t>(limit, int64_t(tokens.size())) / block_; k > 0; --k) {
    auto it = map_.find(chain(tokens, k));
    if (it == map_.end()) continue;
    Entry& e = it->second;
    if (int64_t(e.tokens.size()) != k * block_ || !std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin()))
      continue;
    out = e.state;
    lru_.splice(lru_.begin(), lru_, e.lru);
    return k * block_;
  }
  return 0;
}

void PrefixCache::insert(const std::vector<int32_t>& tokens, const dsv4::SequenceState& st, int64_t bytes) {
  if (st.pos <= 0 || st.pos % block_ || st.pos > int64_t(tokens.size()) || contains(tokens, st.pos)) return;
  const uint64_t key = chain(tokens, st.pos / block_);
  if (map_.count(key)) return;  // a colliding prefix keeps its slot
  lru_.push_front(key);
  Entry& e = map_[key];
  e.tokens.assign(tokens.begin(), tokens.begin() + st.pos);
  e.state = st;
  e.bytes = bytes;
  e.lru = lru_.begin();
  bytes_ += bytes;
}

bool PrefixCache::evict_one() {
  if (lru_.empty()) return false;
  auto it = map_.find(lru_.back());
  bytes_ -= it->second.bytes;
  map_.erase(it);
  lru_.pop_back();
  return true;
}

}  // namespace strata::engine
