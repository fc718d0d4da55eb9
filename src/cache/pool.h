// One memory pool for every cache kind: a single mapping carved into blocks of block_tokens
// tokens for the growing kinds (compressed entries, indexer keys, full-attention KV, MLA
// latents) and fixed-size slots for per-request state (window ring, compressor partial state,
// linear-attention state and its draft slots).
//
// Layout: blocks are taken from the bottom of the arena, slots from the top, each with its own
// free list, so neither kind fragments the other; they meet in the middle. A block holds every
// growing spec's entries for block_tokens tokens, a slot every fixed spec's live state, each
// spec at a fixed 64-byte-aligned offset (spec_offset), in the storage formats of the layout.
// Blocks are reference-counted so that a prefix can be shared between requests.
//
// Draft copies (kind_policy.h, draft slots) are scratch that only a running request needs: they
// live in draft units, `draft_units` of them carved once above the slots, one per request that
// reserves (a prefix checkpoint holds a slot but no draft unit, so it costs the live state only).
//
// Accounting is the layout's: a request with a slot, a draft unit and blocks_for(n) blocks holds
// exactly layout.bytes_for(n) bytes (bytes_in_use); the alignment padding is reported apart.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cache/cache_spec.h"

namespace strata::cache {

// A request's share of the pool: its slot and its block table (block i covers tokens
// [i·block_tokens, (i+1)·block_tokens)), with each block's address beside its index (what a
// state's EntryArrays read; the pool keeps both in step).
struct PoolSeq {
  int32_t slot = -1;
  int32_t draft = -1;  // its draft unit, when the layout has draft copies
  std::vector<int32_t> blocks;
  std::vector<uint8_t*> block_ptrs;
  PoolSeq() = default;
  // A bound state points at block_ptrs, so a request's PoolSeq stays where it is; moving is
  // for sequences no state reads (prefix checkpoints).
  PoolSeq(const PoolSeq&) = delete;
  PoolSeq& operator=(const PoolSeq&) = delete;
  PoolSeq(PoolSeq&&) = default;
  PoolSeq& operator=(PoolSeq&&) = default;
};

class CachePool {
 public:
  // Maps `capacity_bytes` for the caches (MADV_HUGEPAGE) and, after them, `workspace_bytes` of
  // working memory for the forward pass (a model's Workspace, e.g. a sparse indexer's scores):
  // bounded, counted here, never handed out as blocks or slots. populate = touch every page
  // now, so that serving never takes a page fault and a too-large pool fails at start rather
  // than under load. draft_units: requests that may hold draft copies at once (the engine's
  // running requests), carved from the capacity when the layout has draft copies.
  CachePool(CacheLayout layout, int64_t capacity_bytes, bool populate = false, int64_t workspace_bytes = 0,
            int64_t draft_units = 1);
  ~CachePool();
  CachePool(const CachePool&) = delete;
  CachePool& operator=(const CachePool&) = delete;

  // Room one sequence of `context` tokens can take, alignment padding included (an upper
  // bound: every spec padded by a full cache line): what a pool for n such sequences maps n of.
  static int64_t sequence_bytes_bound(const CacheLayout& layout, int64_t context);

  const CacheLayout& layout() const { return layout_; }
  int64_t capacity() const { return capacity_; }  // the caches' bytes (the workspace apart)
  int64_t workspace_bytes() const { return workspace_; }
  uint8_t* workspace() { return workspace_ > 0 ? base_ + capacity_ : nullptr; }  // 64-byte aligned

  // Gives s a slot and a draft unit (if it has none) and blocks up to blocks_for(context); on
  // failure nothing changes and false is returned (the caller preempts).
  bool reserve(PoolSeq& s, int64_t context);
  // Whether reserve(s, context) would succeed.
  bool can_reserve(const PoolSeq& s, int64_t context) const;
  // Returns s's slot and draft unit and drops its references to its blocks.
  void release(PoolSeq& s);
  // Drops s's blocks past blocks_for(context): a sequence rolled back (rejected speculative
  // tokens) holds exactly the ledger's bytes for its context again.
  void shrink(PoolSeq& s, int64_t context);
  // Another reference to a block (a shared prefix); release() drops it.
  void retain(int32_t block) { ++refs_[size_t(block)]; }
  int32_t refs(int32_t block) const { return refs_[size_t(block)]; }
  // Appends blocks (another sequence's, complete) to s's table, shared: one more reference each.
  void share(PoolSeq& s, const std::vector<int32_t>& blocks, size_t count);
  // Appends a fresh block to s holding a copy of block `from` (a block still being written by
  // its owner); false when the pool is full.
  bool append_copy(PoolSeq& s, int32_t from);
  // Gives s a slot (no draft unit: a prefix checkpoint) if it has none; false when the pool is full.
  bool take_slot(PoolSeq& s);
  // Gives s a draft unit if the layout has draft copies and s has none; false when none is free.
  bool take_draft(PoolSeq& s);

  // Bytes held, with the layout's figures: slots × live fixed bytes + draft units × draft
  // bytes + blocks × block_bytes.
  int64_t bytes_in_use() const {
    return slots_used_ * (layout_.fixed_bytes() - layout_.draft_bytes()) + drafts_used_ * layout_.draft_bytes() +
           blocks_used_ * layout_.block_bytes();
  }
  int64_t blocks_in_use() const { return blocks_used_; }
  int64_t slots_in_use() const { return slots_used_; }
  // Bytes in use by cache kind (kind_name), every kind of the layout listed.
  std::vector<std::pair<std::string, int64_t>> bytes_by_kind() const;

  // Where spec i of the layout lives inside a block or a slot, and its draft copies inside a
  // draft unit.
  int64_t spec_offset(size_t spec) const { return offsets_[spec]; }
  int64_t draft_offset(size_t spec) const { return draft_offsets_[spec]; }
  uint8_t* block_data(int32_t block) { return base_ + int64_t(block) * block_stride_; }
  uint8_t* slot_data(int32_t slot) { return base_ + slots_end_ - int64_t(slot + 1) * slot_stride_; }
  uint8_t* draft_data(int32_t unit) { return base_ + slots_end_ + int64_t(unit) * draft_stride_; }
  int64_t block_stride() const { return block_stride_; }  // block_bytes + alignment padding
  int64_t slot_stride() const { return slot_stride_; }
  int64_t draft_stride() const { return draft_stride_; }  // 0 when the layout has no draft copies
  int64_t draft_units() const { return draft_units_; }

 private:
  int32_t take_block();
  int32_t take_slot();
  void push_block(PoolSeq& s, int32_t b);
  // Whether `blocks` more blocks and `slots` more slots fit, free-list entries used first.
  bool fits(int64_t blocks, int64_t slots) const;
  void drop_block(int32_t b);
  void give_back_ends();

  CacheLayout layout_;
  int64_t capacity_ = 0, workspace_ = 0, block_stride_ = 0, slot_stride_ = 0, draft_stride_ = 0;
  int64_t draft_units_ = 0, slots_end_ = 0;  // draft units lie in [slots_end_, capacity_)
  uint8_t* base_ = nullptr;
  std::vector<int64_t> offsets_, draft_offsets_;
  std::vector<int32_t> free_drafts_;
  int64_t drafts_used_ = 0;
  // Bottom: blocks [0, block_top_); top: slots [0, slot_top_) counted downwards.
  int32_t block_top_ = 0, slot_top_ = 0;
  std::vector<int32_t> free_blocks_, free_slots_;
  std::vector<int32_t> refs_;
  int64_t blocks_used_ = 0, slots_used_ = 0;
};

}  // namespace strata::cache
