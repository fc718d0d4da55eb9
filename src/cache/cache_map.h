// A sequence's caches as the layout sees them: for every spec of a layout, where that spec's
// state lives in the sequence (Sequence::cache_map builds it; the model knows its own state).
// The policies of kind_policy.h act on this map alone, so binding a state to the pool,
// checkpointing it for the prefix cache and exporting it are the same code for every model.
#pragma once
#include <cstdint>
#include <vector>

#include "cache/cache_spec.h"
#include "cache/entry_array.h"
#include "cache/fixed_region.h"
#include "cache/pool.h"

namespace strata::cache {

// A fixed region of any element type, seen as bytes.
class RegionRef {
 public:
  template <class T>
  RegionRef(FixedRegion<T>& r)  // NOLINT: implicit, so a piece lists regions as {ring} or {kv, score}
      : p_(&r),
        bytes_(int64_t(r.size() * sizeof(T))),
        bind_([](void* p, uint8_t* at) { static_cast<FixedRegion<T>*>(p)->bind(reinterpret_cast<T*>(at)); }),
        adopt_([](void* p, uint8_t* at) { static_cast<FixedRegion<T>*>(p)->adopt(reinterpret_cast<T*>(at)); }),
        data_([](void* p) { return reinterpret_cast<uint8_t*>(static_cast<FixedRegion<T>*>(p)->data()); }) {}
  int64_t bytes() const { return bytes_; }
  uint8_t* data() const { return data_(p_); }
  // As FixedRegion::bind / adopt (`at` aligned for the element type).
  void bind(uint8_t* at) const { bind_(p_, at); }
  void adopt(uint8_t* at) const { adopt_(p_, at); }

 private:
  void* p_;
  int64_t bytes_;
  void (*bind_)(void*, uint8_t*);
  void (*adopt_)(void*, uint8_t*);
  uint8_t* (*data_)(void*);
};

// One spec's storage in a sequence.
struct CachePiece {
  // Slot kinds: the live state, laid out one region after another in the spec's slot room;
  // then, for draft-slot kinds, the draft copies (spec.draft_copies of the live size).
  std::vector<RegionRef> regions;
  std::vector<RegionRef> drafts;
  // Block kinds: the entries, and the positions the layer has run (its entry count is
  // tokens / tokens_per_entry: an MTP layer runs a token behind the main layers).
  EntryArray* entries = nullptr;
  int64_t tokens = 0;
};

// One piece per spec of the layout it was built for, in spec order.
using CacheMap = std::vector<CachePiece>;

// Throws strata::Error naming the spec when a piece's sizes differ from its spec's (and, with
// entry_counts, when a growing piece's entries are not those of its tokens).
void check_map(const CacheMap& map, const CacheLayout& layout, bool entry_counts = true);

// The state's contents move into the pool: fixed regions into the request's slot (their draft
// copies into its draft unit), entries into its blocks (seq must hold a slot, a draft unit
// where the layout has draft copies, and the blocks for the pieces' tokens).
void bind_to_pool(CacheMap& map, CachePool& pool, PoolSeq& seq);
// The pool already holds the contents (a restored prefix checkpoint: its slot state copied,
// its blocks shared); the pieces' token counts say how many entries are there.
void adopt_from_pool(CacheMap& map, CachePool& pool, PoolSeq& seq);
// Blocks every growing piece has filled, at most blocks_for(pos): these are final and may be
// shared; a block past them is still being written (an MTP layer a token behind) and is copied.
int64_t complete_blocks(const CacheMap& map, const CacheLayout& layout, int64_t pos);
// Copies a slot's state to another slot (a prefix checkpoint taken or restored): every slot
// spec's live state (draft copies live in the request's draft unit, not in its slot).
void copy_slot_state(CachePool& pool, int32_t from, int32_t to);

}  // namespace strata::cache
