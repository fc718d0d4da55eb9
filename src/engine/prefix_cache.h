// Prefix cache by periodic checkpointing: the whole sequence state saved at each 128-token
// block boundary of a prompt, found again by a hash chain over the token ids of the blocks.
// A request whose first k complete blocks match starts from the checkpoint at 128·k and
// computes only the rest; since the forward pass is bitwise independent of how a sequence is
// chunked, its output equals a cold run's.
//
// Why checkpoints rather than recomputing the window ("zero SWA caching"): with the state
// still held as one SequenceState per request (the pool does not yet own the cache memory),
// blocks cannot be shared between requests, and a checkpoint costs one copy where the zero-SWA
// rebuild costs window × layers tokens of forward pass per hit. Entries are evicted least
// recently used when the engine needs their bytes (counted with the ledger's figures).
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/deepseek_v4/state.h"

namespace strata::engine {

class PrefixCache {
 public:
  explicit PrefixCache(int64_t block_tokens) : block_(block_tokens) {}

  int64_t block_tokens() const { return block_; }
  // Longest checkpoint for tokens[0 .. 128·k) with 128·k <= limit; copies its state into
  // `out`. Returns the number of tokens covered (0 = miss).
  int64_t lookup(const std::vector<int32_t>& tokens, int64_t limit, dsv4::SequenceState& out);
  // Saves `st` (at position st.pos, a block boundary) as the checkpoint of tokens[0..st.pos).
  void insert(const std::vector<int32_t>& tokens, const dsv4::SequenceState& st, int64_t bytes);
  bool contains(const std::vector<int32_t>& tokens, int64_t n) const;
  // Drops the least recently used checkpoint; false when empty.
  bool evict_one();
  int64_t bytes() const { return bytes_; }
  size_t size() const { return map_.size(); }

 private:
  struct Entry {
    std::vector<int32_t> tokens;  // the full prefix, compared on a hit (hash collisions)
    dsv4::SequenceState state;
    int64_t bytes = 0;
    std::list<uint64_t>::iterator lru;
  };
  uint64_t chain(const std::vector<int32_t>& tokens, int64_t blocks) const;
  int64_t block_;
  std::unordered_map<uint64_t, Entry> map_;
  std::list<uint64_t> lru_;  // front = most recently used
  int64_t bytes_ = 0;
};

}  // namespace strata::engine
