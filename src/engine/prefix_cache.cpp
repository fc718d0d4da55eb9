#include "engine/prefix_cache.h"

#include <algorithm>
#include <cstring>

#include "cache/cache_map.h"

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

PrefixCache::~PrefixCache() {
  while (evict_one()) {
  }
}

// h_k = H(h_{k-1}, block k's ids): a block's key names its whole prefix.
std::vector<uint64_t> PrefixCache::chains(const std::vector<int32_t>& tokens, int64_t blocks) const {
  std::vector<uint64_t> keys;
  uint64_t h = 0x5eed;
  for (int64_t k = 1; k <= blocks; ++k) {
    for (int64_t i = (k - 1) * block_; i < k * block_; ++i) h = mix(h, uint64_t(uint32_t(tokens[size_t(i)])));
    keys.push_back(mix(h, uint64_t(k)));
  }
  return keys;
}

uint64_t PrefixCache::chain(const std::vector<int32_t>& tokens, int64_t blocks) const {
  return blocks > 0 ? chains(tokens, blocks).back() : 0;
}

PrefixCache::Checkpoint* PrefixCache::find(uint64_t key, const std::vector<int32_t>& tokens, int64_t blocks) {
  if (blocks * block_ > int64_t(tokens.size())) return nullptr;
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  Checkpoint& c = it->second;
  if (int64_t(c.tokens.size()) != blocks * block_ || !std::equal(c.tokens.begin(), c.tokens.end(), tokens.begin()))
    return nullptr;
  return &c;
}

int64_t PrefixCache::restore(const std::vector<int32_t>& tokens, int64_t limit, models::Sequence& st,
                             cache::PoolSeq& seq) {
  const std::vector<uint64_t> keys = chains(tokens, std::min<int64_t>(limit, int64_t(tokens.size())) / block_);
  for (int64_t k = int64_t(keys.size()); k > 0; --k) {
    Checkpoint* c = find(keys[size_t(k - 1)], tokens, k);
    if (!c) continue;
    lru_.splice(lru_.begin(), lru_, c->lru);
    // Complete blocks shared; a block still being written (an MTP layer a token behind) copied,
    // since the request will write into it.
    pool_.share(seq, c->seq.blocks, size_t(c->shared));
    bool ok = pool_.take_slot(seq) && pool_.take_draft(seq);  // a running request's: its draft unit too
    for (size_t b = size_t(c->shared); ok && b < c->seq.blocks.size(); ++b) ok = pool_.append_copy(seq, c->seq.blocks[b]);
    if (!ok) {
      pool_.release(seq);
      return 0;
    }
    cache::copy_slot_state(pool_, c->seq.slot, seq.slot);
    st.pos = c->pos;
    st.mtp_pos = c->mtp_pos;
    st.mtp_hidden = c->mtp_hidden;
    auto map = st.cache_map(pool_.layout());
    cache::adopt_from_pool(map, pool_, seq);
    return c->pos;
  }
  return 0;
}

bool PrefixCache::insert(const std::vector<int32_t>& tokens, models::Sequence& st, const cache::PoolSeq& seq) {
  if (st.pos <= 0 || st.pos % block_ || st.pos > int64_t(tokens.size())) return false;
  if (seq.slot < 0 || int64_t(seq.blocks.size()) < pool_.layout().blocks_for(st.pos)) return false;
  const uint64_t key = chain(tokens, st.pos / block_);
  if (map_.count(key)) return false;  // there already, or a colliding prefix that keeps its place
  Checkpoint c;
  while (!pool_.take_slot(c.seq))
    if (!evict_one()) return false;
  c.shared = cache::complete_blocks(st.cache_map(pool_.layout()), pool_.layout(), st.pos);
  pool_.share(c.seq, seq.blocks, size_t(c.shared));
  for (int64_t b = c.shared; b < pool_.layout().blocks_for(st.pos); ++b)
    while (!pool_.append_copy(c.seq, seq.blocks[size_t(b)]))
      if (!evict_one()) {
        pool_.release(c.seq);
        return false;
      }
  cache::copy_slot_state(pool_, seq.slot, c.seq.slot);
  c.tokens.assign(tokens.begin(), tokens.begin() + st.pos);
  c.pos = st.pos;
  c.mtp_pos = st.mtp_pos;
  c.mtp_hidden = st.mtp_hidden;
  lru_.push_front(key);
  c.lru = lru_.begin();
  for (int32_t b : c.seq.blocks) ++block_uses_[b];
  map_.emplace(key, std::move(c));
  return true;
}

bool PrefixCache::evict_one() {
  if (lru_.empty()) return false;
  auto it = map_.find(lru_.back());
  for (int32_t b : it->second.seq.blocks)
    if (--block_uses_[b] == 0) block_uses_.erase(b);
  pool_.release(it->second.seq);
  map_.erase(it);
  lru_.pop_back();
  return true;
}

}  // namespace strata::engine
