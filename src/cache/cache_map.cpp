#include "cache/cache_map.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "cache/kind_policy.h"
#include "core/error.h"

namespace strata::cache {

namespace {

int64_t total_bytes(const std::vector<RegionRef>& rs) {
  int64_t n = 0;
  for (const auto& r : rs) n += r.bytes();
  return n;
}

std::string spec_name(const CacheSpec& s) {
  return std::string("layer ") + std::to_string(s.layer) + "'s " + kind_name(s.kind);
}

// Lays regions out one after another from `at`.
template <class F>
uint8_t* place(const std::vector<RegionRef>& rs, uint8_t* at, F f) {
  for (const auto& r : rs) {
    f(r, at);
    at += r.bytes();
  }
  return at;
}

void place_all(CacheMap& map, CachePool& pool, PoolSeq& seq, bool adopt) {
  const auto& layout = pool.layout();
  check_map(map, layout, /*entry_counts=*/!adopt);  // adopted entries are the pool's, not the state's
  if (seq.slot < 0) throw Error("cache pool: the request holds no slot for its state");
  if (layout.draft_bytes() > 0 && seq.draft < 0) throw Error("cache pool: the request holds no draft unit");
  uint8_t* slot = pool.slot_data(seq.slot);
  for (size_t i = 0; i < map.size(); ++i) {
    CachePiece& p = map[i];
    const CacheSpec& s = layout.specs[i];
    if (policy(s.kind).storage == Storage::slot) {
      auto f = [&](const RegionRef& r, uint8_t* at) { adopt ? r.adopt(at) : r.bind(at); };
      place(p.regions, slot + pool.spec_offset(i), f);
      // Draft copies are scratch: bound to the request's draft unit, never adopted as content.
      if (!p.drafts.empty())
        place(p.drafts, pool.draft_data(seq.draft) + pool.draft_offset(i),
              [](const RegionRef& r, uint8_t* at) { r.adopt(at); });
      continue;
    }
    const int64_t per_block = s.entries_per_block(layout.block_tokens);
    const int64_t n = p.tokens / s.tokens_per_entry;
    if (int64_t(seq.blocks.size()) * per_block < n)
      throw Error("cache pool: the request holds too few blocks for " + spec_name(s));
    if (adopt) p.entries->adopt(&seq.block_ptrs, pool.spec_offset(i), per_block, n);
    else p.entries->bind(&seq.block_ptrs, pool.spec_offset(i), per_block);
  }
}

}  // namespace

void check_map(const CacheMap& map, const CacheLayout& layout, bool entry_counts) {
  if (map.size() != layout.specs.size())
    throw Error("cache map: " + std::to_string(map.size()) + " pieces for " + std::to_string(layout.specs.size()) +
                " specs");
  for (size_t i = 0; i < map.size(); ++i) {
    const CachePiece& p = map[i];
    const CacheSpec& s = layout.specs[i];
    bool ok;
    if (policy(s.kind).storage == Storage::slot)
      ok = !p.entries && total_bytes(p.regions) == s.live_bytes() &&
           total_bytes(p.drafts) == s.live_bytes() * s.draft_copies;
    else
      ok = p.entries && p.regions.empty() && p.drafts.empty() && p.entries->entry_bytes() == s.entry_bytes &&
           p.tokens >= 0 &&
           (!entry_counts || int64_t(p.entries->size()) == p.tokens / s.tokens_per_entry);
    if (!ok) throw Error("cache map: " + spec_name(s) + " does not match its spec");
  }
}

void bind_to_pool(CacheMap& map, CachePool& pool, PoolSeq& seq) { place_all(map, pool, seq, false); }
void adopt_from_pool(CacheMap& map, CachePool& pool, PoolSeq& seq) { place_all(map, pool, seq, true); }

int64_t complete_blocks(const CacheMap& map, const CacheLayout& layout, int64_t pos) {
  int64_t blocks = layout.blocks_for(pos);
  for (size_t i = 0; i < map.size(); ++i) {
    const CacheSpec& s = layout.specs[i];
    if (policy(s.kind).checkpoint != Checkpoint::share_blocks) continue;
    blocks = std::min(blocks, int64_t(map[i].entries->size()) / s.entries_per_block(layout.block_tokens));
  }
  return blocks;
}

void copy_slot_state(CachePool& pool, int32_t from, int32_t to) {
  std::memcpy(pool.slot_data(to), pool.slot_data(from), size_t(pool.slot_stride()));
}

}  // namespace strata::cache
