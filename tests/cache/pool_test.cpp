// CachePool: slots and blocks from one mapping, the layout's byte figures, reuse, sharing and
// the two ends meeting.
#include "cache/pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"

namespace strata::cache {
namespace {

CacheLayout small_layout() {
  CacheLayout l;
  l.block_tokens = 128;
  l.specs = {{CacheKind::sliding_window, 0, 584, 128, 1, "584 B"},
             {CacheKind::compressed, 1, 584, 0, 4, "584 B"},
             {CacheKind::indexer_keys, 1, 68, 0, 4, "68 B"},
             {CacheKind::compressor_state, 1, 4096, 1, 1, "fp32"},
             {CacheKind::compressed, 2, 584, 0, 128, "584 B"}};
  return l;
}

TEST(CachePool, RequestHoldsTheLedgersBytes) {
  const auto l = small_layout();
  CachePool pool(l, 64 << 20);
  PoolSeq s;
  for (int64_t n : {1, 127, 128, 129, 1000}) {
    ASSERT_TRUE(pool.reserve(s, n));
    EXPECT_EQ(pool.bytes_in_use(), l.bytes_for(n)) << n;
    EXPECT_EQ(int64_t(s.blocks.size()), l.blocks_for(n));
  }
  int64_t sum = 0;
  for (auto& [k, b] : pool.bytes_by_kind()) sum += b;
  EXPECT_EQ(sum, l.bytes_for(1000));
  pool.release(s);
  EXPECT_EQ(pool.bytes_in_use(), 0);
  EXPECT_EQ(s.slot, -1);
}

// sequence_bytes_bound: a pool of n bounds holds n sequences of that context (alignment padding
// included), and the bound is not loose by more than a cache line per spec and block.
TEST(CachePool, SequenceBytesBoundHoldsThatManySequences) {
  const auto l = small_layout();
  for (int64_t context : {1, 128, 129, 5000}) {
    const int64_t bound = CachePool::sequence_bytes_bound(l, context);
    CachePool pool(l, 3 * bound);
    PoolSeq a, b, c, d;
    EXPECT_TRUE(pool.reserve(a, context) && pool.reserve(b, context) && pool.reserve(c, context)) << context;
    const int64_t held = pool.slot_stride() + l.blocks_for(context) * pool.block_stride();
    EXPECT_LE(held, bound);
    EXPECT_LE(bound - held, 64 * int64_t(l.specs.size()) * (1 + l.blocks_for(context)));
    if (3 * (bound - held) < held) EXPECT_FALSE(pool.reserve(d, context)) << context;  // no room for a 4th
  }
}

// The workspace sits beside the caches: writable, 64-byte aligned, counted apart from the
// capacity, and untouched by blocks and slots filling the whole cache arena.
TEST(CachePool, WorkspaceIsApartFromBlocksAndSlots) {
  const auto l = small_layout();
  CachePool none(l, 1 << 20);
  EXPECT_EQ(none.workspace_bytes(), 0);
  EXPECT_EQ(none.workspace(), nullptr);
  CachePool pool(l, 1 << 20, false, 100000);
  EXPECT_EQ(pool.capacity(), 1 << 20);
  EXPECT_GE(pool.workspace_bytes(), 100000);
  uint8_t* ws = pool.workspace();
  ASSERT_NE(ws, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ws) % 64, 0u);
  std::memset(ws, 0xAB, size_t(pool.workspace_bytes()));
  std::vector<PoolSeq> seqs;
  for (;;) {  // fill the arena with sequences, every block and slot byte written
    PoolSeq s;
    if (!pool.reserve(s, 300)) break;
    std::memset(pool.slot_data(s.slot), 0x11, size_t(pool.slot_stride()));
    for (int32_t b : s.blocks) std::memset(pool.block_data(b), 0x22, size_t(pool.block_stride()));
    seqs.push_back(std::move(s));
  }
  EXPECT_GT(seqs.size(), 1u);
  for (int64_t i = 0; i < pool.workspace_bytes(); ++i) ASSERT_EQ(ws[i], 0xAB) << i;
  EXPECT_THROW(CachePool(l, 1 << 20, false, -1), Error);
}

// Speculative tokens reserve ahead; a rollback shrinks back to exactly the ledger's bytes, and a
// shared block only loses this sequence's reference.
TEST(CachePool, ShrinkAfterRollbackHoldsTheLedgersBytes) {
  const auto l = small_layout();
  CachePool pool(l, 64 << 20);
  PoolSeq s, other;
  ASSERT_TRUE(pool.reserve(s, 126));
  ASSERT_TRUE(pool.reserve(s, 126 + 5));  // drafts cross into a second block
  EXPECT_EQ(int64_t(s.blocks.size()), 2);
  pool.shrink(s, 127);  // all drafts rejected
  EXPECT_EQ(int64_t(s.blocks.size()), 1);
  EXPECT_EQ(pool.bytes_in_use(), l.bytes_for(127));
  pool.shrink(s, 500);  // never grows
  EXPECT_EQ(int64_t(s.blocks.size()), 1);
  ASSERT_TRUE(pool.reserve(s, 300));
  other.blocks = {s.blocks[2]};
  pool.retain(s.blocks[2]);
  const int32_t shared = s.blocks[2];
  pool.shrink(s, 200);
  EXPECT_EQ(pool.refs(shared), 1);
  EXPECT_EQ(int64_t(s.blocks.size()), 2);
  pool.release(other);
  pool.release(s);
  EXPECT_EQ(pool.bytes_in_use(), 0);
  EXPECT_EQ(pool.blocks_in_use(), 0);
}

TEST(CachePool, SpecsDoNotOverlapAndMemoryIsWritable) {
  const auto l = small_layout();
  CachePool pool(l, 8 << 20, /*populate=*/true);
  PoolSeq a, b;
  ASSERT_TRUE(pool.reserve(a, 300));
  ASSERT_TRUE(pool.reserve(b, 300));
  // Fill a's memory with 1s and b's with 2s, spec by spec, then check nothing was overwritten.
  auto fill = [&](PoolSeq& s, uint8_t v) {
    for (size_t i = 0; i < l.specs.size(); ++i) {
      const auto& sp = l.specs[i];
      if (kind_grows(sp.kind))
        for (int32_t blk : s.blocks) std::memset(pool.block_data(blk) + pool.spec_offset(i), v, size_t(sp.block_bytes(128)));
      else
        std::memset(pool.slot_data(s.slot) + pool.spec_offset(i), v, size_t(sp.fixed_bytes()));
    }
  };
  auto check = [&](PoolSeq& s, uint8_t v) {
    for (size_t i = 0; i < l.specs.size(); ++i) {
      const auto& sp = l.specs[i];
      const uint8_t* p = kind_grows(sp.kind) ? pool.block_data(s.blocks.back()) : pool.slot_data(s.slot);
      const int64_t n = kind_grows(sp.kind) ? sp.block_bytes(128) : sp.fixed_bytes();
      for (int64_t k = 0; k < n; ++k) ASSERT_EQ(p[pool.spec_offset(i) + k], v);
    }
  };
  fill(a, 1);
  fill(b, 2);
  check(a, 1);
  check(b, 2);
}

TEST(CachePool, FullPoolRefusesAndFreedSpaceIsReused) {
  const auto l = small_layout();
  // Room for exactly two requests of one block each.
  CachePool probe(l, 1 << 20);
  const int64_t cap = 2 * (probe.block_stride() + probe.slot_stride());
  CachePool pool(l, cap);
  PoolSeq a, b, c;
  ASSERT_TRUE(pool.reserve(a, 10));
  ASSERT_TRUE(pool.reserve(b, 10));
  EXPECT_FALSE(pool.can_reserve(c, 10));
  EXPECT_FALSE(pool.reserve(c, 10));
  EXPECT_EQ(c.slot, -1);
  EXPECT_TRUE(c.blocks.empty());
  EXPECT_FALSE(pool.reserve(a, 200));  // growth fails too, and leaves a as it was
  EXPECT_EQ(a.blocks.size(), 1u);
  pool.release(b);
  ASSERT_TRUE(pool.reserve(c, 10));
  pool.release(a);
  pool.release(c);
  // Everything free: the ends are back, so one request may take all blocks.
  PoolSeq big;
  EXPECT_TRUE(pool.reserve(big, 128 * ((cap - pool.slot_stride()) / pool.block_stride())));
}

TEST(CachePool, SharedBlocksAreReferenceCounted) {
  CachePool pool(small_layout(), 4 << 20);
  PoolSeq a;
  ASSERT_TRUE(pool.reserve(a, 256));
  PoolSeq b;
  b.blocks = a.blocks;  // b shares a's prefix
  for (int32_t blk : b.blocks) pool.retain(blk);
  ASSERT_TRUE(pool.reserve(b, 300));
  EXPECT_EQ(pool.blocks_in_use(), 3);
  EXPECT_EQ(pool.refs(a.blocks[0]), 2);
  pool.release(a);
  EXPECT_EQ(pool.blocks_in_use(), 3);  // still referenced by b
  pool.release(b);
  EXPECT_EQ(pool.blocks_in_use(), 0);
}

}  // namespace
}  // namespace strata::cache

namespace strata::cache {
namespace {

// share() adds references to complete blocks (no bytes move); append_copy() gives a private
// copy of a block still being written; block_ptrs follow the table through every change.
TEST(CachePool, ShareAndCopyBlocks) {
  const auto l = small_layout();
  CachePool pool(l, 64 << 20);
  PoolSeq a, b;
  ASSERT_TRUE(pool.reserve(a, 300));  // three blocks
  for (size_t i = 0; i < a.blocks.size(); ++i) std::memset(pool.block_data(a.blocks[i]), int(i + 1), size_t(pool.block_stride()));
  const int64_t before = pool.bytes_in_use();
  pool.share(b, a.blocks, 2);
  ASSERT_TRUE(pool.take_slot(b));
  EXPECT_EQ(pool.bytes_in_use(), before + l.fixed_bytes());  // shared blocks cost nothing more
  ASSERT_TRUE(pool.append_copy(b, a.blocks[2]));
  EXPECT_EQ(pool.bytes_in_use(), before + l.fixed_bytes() + l.block_bytes());
  ASSERT_EQ(b.blocks.size(), 3u);
  EXPECT_EQ(b.blocks[0], a.blocks[0]);
  EXPECT_NE(b.blocks[2], a.blocks[2]);
  EXPECT_EQ(pool.block_data(b.blocks[2])[pool.block_stride() - 1], 3);
  for (size_t i = 0; i < b.blocks.size(); ++i) EXPECT_EQ(b.block_ptrs[i], pool.block_data(b.blocks[i]));
  EXPECT_EQ(pool.refs(a.blocks[0]), 2);
  pool.release(a);
  EXPECT_EQ(pool.refs(b.blocks[0]), 1);
  EXPECT_EQ(pool.block_data(b.blocks[1])[0], 2);  // still b's
  pool.shrink(b, 128);
  EXPECT_EQ(b.block_ptrs.size(), 1u);
  pool.release(b);
  EXPECT_EQ(pool.bytes_in_use(), 0);
  EXPECT_TRUE(b.block_ptrs.empty());
}

TEST(CachePool, CopyAndSlotFailWhenFull) {
  const auto l = small_layout();
  CachePool probe(l, 1 << 20);
  CachePool pool(l, probe.slot_stride() + probe.block_stride());
  PoolSeq a, b;
  ASSERT_TRUE(pool.reserve(a, 100));
  EXPECT_FALSE(pool.take_slot(b));
  EXPECT_FALSE(pool.append_copy(b, a.blocks[0]));
  EXPECT_EQ(pool.bytes_in_use(), l.bytes_for(100));
}

}  // namespace
}  // namespace strata::cache
