// Prefix cache over the pool: at each block boundary of a prompt a checkpoint keeps the
// request's blocks (shared, reference-counted: the entries of every complete block are never
// copied) and a copy of its fixed state (window rings, compressor slot rows, recurrent states)
// in a pool slot of its own, as each cache kind's checkpoint policy says (cache/kind_policy.h). Checkpoints are found again by a hash chain
// over the token ids of the blocks. A request whose first k complete blocks match shares those
// blocks, copies the slot and computes only the rest; since the forward pass is bitwise
// independent of how a sequence is chunked, its output equals a cold run's.
//
// Why a fixed-state checkpoint rather than recomputing the window ("zero SWA caching"): one
// slot copy per hit (a few MB at full scale) against window × layers tokens of forward pass
// per hit; measured in docs/engine.md. Checkpoints live in the same pool as running requests
// and are evicted least recently used when a request needs the room.
#pragma once
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "cache/pool.h"
#include "models/model.h"

namespace strata::engine {

class PrefixCache {
 public:
  explicit PrefixCache(cache::CachePool& pool) : pool_(pool), block_(pool.layout().block_tokens) {}
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  int64_t block_tokens() const { return block_; }
  // Restores the longest checkpoint of tokens[0 .. B·k) with B·k <= limit (B = block_tokens)
  // into `st` (a fresh Model::new_sequence() for the pool's layout) and `seq` (empty): shared
  // blocks, a copied slot. Returns the tokens covered; 0 = miss, or the pool had no room for
  // the slot (nothing taken then).
  int64_t restore(const std::vector<int32_t>& tokens, int64_t limit, models::Sequence& st, cache::PoolSeq& seq);
  // Keeps `st` (at position st.pos, a block boundary; bound to the pool in `seq`) as the
  // checkpoint of tokens[0..st.pos), evicting older checkpoints if the pool needs their room
  // for the slot. False when it could not (the pool is full of running requests).
  bool insert(const std::vector<int32_t>& tokens, models::Sequence& st, const cache::PoolSeq& seq);
  // Drops the least recently used checkpoint (its slot, its references); false when empty.
  bool evict_one();
  size_t size() const { return map_.size(); }
  // Blocks the checkpoints share with each other and with running requests, counted once each.
  int64_t blocks_referenced() const { return int64_t(block_uses_.size()); }

 private:
  struct Checkpoint {
    std::vector<int32_t> tokens;  // the full prefix, compared on a hit (hash collisions)
    cache::PoolSeq seq;           // a slot with the fixed state, the blocks
    int64_t shared = 0;           // blocks [0, shared) are complete; later ones are private copies
    int64_t pos = 0;
    std::vector<int64_t> mtp_pos;
    std::vector<float> mtp_hidden;
    std::list<uint64_t>::iterator lru;
  };
  // Key of the first `blocks` blocks; keys[k-1] of the first k, for k = 1..blocks, in one pass.
  uint64_t chain(const std::vector<int32_t>& tokens, int64_t blocks) const;
  std::vector<uint64_t> chains(const std::vector<int32_t>& tokens, int64_t blocks) const;
  // The checkpoint stored under `key` if it is the one of the first `blocks` blocks of tokens.
  Checkpoint* find(uint64_t key, const std::vector<int32_t>& tokens, int64_t blocks);
  cache::CachePool& pool_;
  int64_t block_;
  std::unordered_map<uint64_t, Checkpoint> map_;
  std::list<uint64_t> lru_;  // front = most recently used
  std::unordered_map<int32_t, int32_t> block_uses_;  // pool block -> checkpoints holding it
};

}  // namespace strata::engine
