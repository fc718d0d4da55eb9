#include "cache/pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace strata::cache {

namespace {
constexpr int64_t kAlign = 64;  // a cache line: every spec's data starts on one
int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
}  // namespace

int64_t CachePool::sequence_bytes_bound(const CacheLayout& layout, int64_t context) {
  const int64_t pad = kAlign * int64_t(layout.specs.size());
  const int64_t draft_pad = layout.draft_bytes() > 0 ? pad : 0;
  return layout.fixed_bytes() + pad + draft_pad + layout.blocks_for(context) * (layout.block_bytes() + pad);
}

CachePool::CachePool(CacheLayout layout, int64_t capacity_bytes, bool populate, int64_t workspace_bytes,
                     int64_t draft_units)
    : layout_(std::move(layout)) {
  if (capacity_bytes <= 0) throw Error("cache pool: the capacity must be positive");
  if (workspace_bytes < 0) throw Error("cache pool: the workspace cannot be negative");
  // Offsets: growing specs inside a block, fixed specs' live state inside a slot, their draft
  // copies inside a draft unit, in layout order.
  int64_t block_off = 0, slot_off = 0, draft_off = 0;
  for (const auto& s : layout_.specs) {
    if (kind_grows(s.kind)) {
      offsets_.push_back(block_off);
      draft_offsets_.push_back(0);
      block_off = align_up(block_off + s.block_bytes(layout_.block_tokens), kAlign);
    } else {
      offsets_.push_back(slot_off);
      slot_off = align_up(slot_off + s.live_bytes(), kAlign);
      draft_offsets_.push_back(draft_off);
      if (s.draft_copies > 0) draft_off = align_up(draft_off + s.fixed_bytes() - s.live_bytes(), kAlign);
    }
  }
  block_stride_ = std::max<int64_t>(block_off, kAlign);
  slot_stride_ = std::max<int64_t>(slot_off, kAlign);
  draft_stride_ = draft_off;
  capacity_ = align_up(capacity_bytes, kAlign);
  if (draft_stride_ > 0) {
    if (draft_units < 1) throw Error("cache pool: the layout has draft copies and the pool no draft units");
    draft_units_ = draft_units;
    for (int64_t u = draft_units_; u-- > 0;) free_drafts_.push_back(int32_t(u));
  }
  slots_end_ = capacity_ - draft_units_ * draft_stride_;
  if (slots_end_ < 0) throw Error("cache pool: the capacity does not hold its draft units");
  workspace_ = align_up(workspace_bytes, kAlign);
  const int64_t mapped = capacity_ + workspace_;
  void* p = ::mmap(nullptr, size_t(mapped), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cache pool: cannot map " + std::to_string(mapped) + " bytes: " + std::strerror(errno));
  base_ = static_cast<uint8_t*>(p);
#ifdef MADV_HUGEPAGE
  ::madvise(base_, size_t(mapped), MADV_HUGEPAGE);  // a hint: fewer TLB misses when granted
#endif
  if (populate)
    for (int64_t off = 0; off < mapped; off += 4096) base_[off] = 0;
}

CachePool::~CachePool() {
  if (base_) ::munmap(base_, size_t(capacity_ + workspace_));
}

int32_t CachePool::take_block() {
  int32_t b;
  if (!free_blocks_.empty()) {
    b = free_blocks_.back();
    free_blocks_.pop_back();
  } else {
    b = block_top_++;
    refs_.resize(size_t(block_top_), 0);
  }
  refs_[size_t(b)] = 1;
  ++blocks_used_;
  return b;
}

int32_t CachePool::take_slot() {
  ++slots_used_;
  if (!free_slots_.empty()) {
    int32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  return slot_top_++;
}

bool CachePool::fits(int64_t blocks, int64_t slots) const {
  const int64_t new_blocks = std::max<int64_t>(0, blocks - int64_t(free_blocks_.size()));
  const int64_t new_slots = std::max<int64_t>(0, slots - int64_t(free_slots_.size()));
  return (block_top_ + new_blocks) * block_stride_ + (slot_top_ + new_slots) * slot_stride_ <= slots_end_;
}

bool CachePool::can_reserve(const PoolSeq& s, int64_t context) const {
  if (draft_stride_ > 0 && s.draft < 0 && free_drafts_.empty()) return false;
  return fits(layout_.blocks_for(context) - int64_t(s.blocks.size()), s.slot < 0 ? 1 : 0);
}

void CachePool::push_block(PoolSeq& s, int32_t b) {
  s.blocks.push_back(b);
  s.block_ptrs.push_back(block_data(b));
}

bool CachePool::reserve(PoolSeq& s, int64_t context) {
  if (!can_reserve(s, context)) return false;
  if (s.slot < 0) s.slot = take_slot();
  take_draft(s);
  while (int64_t(s.blocks.size()) < layout_.blocks_for(context)) push_block(s, take_block());
  return true;
}

bool CachePool::take_slot(PoolSeq& s) {
  if (s.slot >= 0) return true;
  if (!fits(0, 1)) return false;
  s.slot = take_slot();
  return true;
}

bool CachePool::take_draft(PoolSeq& s) {
  if (draft_stride_ == 0 || s.draft >= 0) return true;
  if (free_drafts_.empty()) return false;
  s.draft = free_drafts_.back();
  free_drafts_.pop_back();
  ++drafts_used_;
  return true;
}

void CachePool::share(PoolSeq& s, const std::vector<int32_t>& blocks, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    retain(blocks[i]);
    push_block(s, blocks[i]);
  }
}

bool CachePool::append_copy(PoolSeq& s, int32_t from) {
  if (!fits(1, 0)) return false;
  const int32_t b = take_block();
  std::memcpy(block_data(b), block_data(from), size_t(block_stride_));
  push_block(s, b);
  return true;
}

void CachePool::drop_block(int32_t b) {
  if (--refs_[size_t(b)] == 0) {
    free_blocks_.push_back(b);
    --blocks_used_;
  }
}

void CachePool::release(PoolSeq& s) {
  for (int32_t b : s.blocks) drop_block(b);
  s.blocks.clear();
  s.block_ptrs.clear();
  if (s.slot >= 0) {
    free_slots_.push_back(s.slot);
    --slots_used_;
    s.slot = -1;
  }
  if (s.draft >= 0) {
    free_drafts_.push_back(s.draft);
    --drafts_used_;
    s.draft = -1;
  }
  give_back_ends();
}

void CachePool::shrink(PoolSeq& s, int64_t context) {
  const size_t keep = size_t(layout_.blocks_for(context));
  if (s.blocks.size() <= keep) return;
  for (size_t i = keep; i < s.blocks.size(); ++i) drop_block(s.blocks[i]);
  s.blocks.resize(keep);
  s.block_ptrs.resize(keep);
  give_back_ends();
}

void CachePool::give_back_ends() {
  // Give the ends back when they are free, so the other kind can grow into them.
  auto trim = [](std::vector<int32_t>& free, int32_t& top) {
    bool again = true;
    while (again && top > 0) {
      again = false;
      for (size_t i = 0; i < free.size(); ++i)
        if (free[i] == top - 1) {
          free[i] = free.back();
          free.pop_back();
          --top;
          again = true;
          break;
        }
    }
  };
  trim(free_blocks_, block_top_);
  refs_.resize(size_t(block_top_));
  trim(free_slots_, slot_top_);
}

std::vector<std::pair<std::string, int64_t>> CachePool::bytes_by_kind() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& s : layout_.specs) {
    const int64_t b = kind_grows(s.kind) ? blocks_used_ * s.block_bytes(layout_.block_tokens)
                                         : slots_used_ * s.live_bytes() + drafts_used_ * (s.fixed_bytes() - s.live_bytes());
    bool found = false;
    for (auto& [k, v] : out)
      if (k == kind_name(s.kind)) v += b, found = true;
    if (!found) out.emplace_back(kind_name(s.kind), b);
  }
  return out;
}

}  // namespace strata::cache
