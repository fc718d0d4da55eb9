// PrefixCache over the pool: hash-chain lookup of the longest checkpointed prefix, blocks
// shared by reference (never copied), the fixed state restored bit for bit, LRU eviction that
// gives every byte back, and the measurement behind choosing checkpoints over the zero-SWA
// rebuild.
#include "engine/prefix_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "kernels/parallel.h"
#include "models/deepseek_v4/cache_layout.h"
#include "cache/cache_map.h"
#include "models/dsv4_fixture.h"

namespace strata::engine {
namespace {

dsv4::testing::TinyModel& tiny() {
  static dsv4::testing::TinyModel t;
  return t;
}

std::vector<int64_t> prompt(int64_t n, int64_t salt = 0) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(100 + (i * 7 + salt * 13) % 5000);
  return v;
}
std::vector<int32_t> ids32(const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

// A request's state in the pool, advanced as the engine does: blocks first, then the tokens.
struct PooledSeq {
  dsv4::SequenceState st;
  cache::PoolSeq seq;
  bool bound = false;
  void advance(cache::CachePool& pool, const dsv4::Model& m, const int64_t* ids, int64_t n) {
    ASSERT_TRUE(pool.reserve(seq, st.pos + n));
    if (!bound) dsv4::bind_to_pool(st, pool, seq), bound = true;
    m.advance(st, ids, n);
  }
};

struct PoolSetup {
  const dsv4::Model& model = *tiny().model;
  cache::CachePool pool{dsv4::cache_layout(model.config()), int64_t(256) << 20};
  int64_t bt = pool.layout().block_tokens;
};

TEST(PrefixCache, SharesCompleteBlocksAndRestoresTheStateExactly) {
  PoolSetup s;
  const auto p = prompt(3 * s.bt);
  PrefixCache pc(s.pool);
  PooledSeq a;
  a.st = s.model.new_state();
  a.advance(s.pool, s.model, p.data(), s.bt);
  ASSERT_TRUE(pc.insert(ids32(p), a.st, a.seq));
  const dsv4::SequenceState at1 = a.st;  // an owned copy of the state at one block
  a.advance(s.pool, s.model, p.data() + s.bt, s.bt);
  ASSERT_TRUE(pc.insert(ids32(p), a.st, a.seq));
  const dsv4::SequenceState at2 = a.st;
  EXPECT_FALSE(pc.insert(ids32(p), a.st, a.seq));  // already there
  EXPECT_EQ(pc.size(), 2u);
  // Both checkpoints reference a's blocks: nothing copied, block 0 held three times.
  EXPECT_EQ(s.pool.refs(a.seq.blocks[0]), 3);
  EXPECT_EQ(s.pool.refs(a.seq.blocks[1]), 2);
  EXPECT_EQ(pc.blocks_referenced(), 2);
  EXPECT_EQ(s.pool.blocks_in_use(), 2);
  EXPECT_EQ(s.pool.slots_in_use(), 3);  // a's and one per checkpoint

  auto tokens = ids32(p);
  for (auto [limit, expect] : {std::pair<int64_t, int64_t>{3 * s.bt, 2 * s.bt}, {2 * s.bt - 1, s.bt}, {s.bt - 1, 0}}) {
    PooledSeq b;
    b.st = s.model.new_state();
    ASSERT_EQ(pc.restore(tokens, limit, b.st, b.seq), expect) << limit;
    if (expect == 0) {
      EXPECT_EQ(b.seq.slot, -1);  // a miss takes nothing
      continue;
    }
    b.bound = true;
    EXPECT_EQ(b.seq.blocks, std::vector<int32_t>(a.seq.blocks.begin(), a.seq.blocks.begin() + expect / s.bt));
    const dsv4::SequenceState& want = expect == s.bt ? at1 : at2;
    const dsv4::SequenceState got = b.st;  // gathered out of the pool
    ASSERT_EQ(got.pos, want.pos);
    for (size_t L = 0; L < want.layers.size(); ++L) {
      EXPECT_TRUE(got.layers[L].ring == want.layers[L].ring) << L;
      EXPECT_TRUE(got.layers[L].compressor.kv == want.layers[L].compressor.kv) << L;
      EXPECT_TRUE(got.layers[L].compressor.score == want.layers[L].compressor.score) << L;
      EXPECT_TRUE(got.layers[L].compressor.entries == want.layers[L].compressor.entries) << L;
      EXPECT_TRUE(got.layers[L].index_keys.entries == want.layers[L].index_keys.entries) << L;
    }
    // Continuing from the checkpoint writes only fresh blocks: a's stay as they were.
    const dsv4::SequenceState a_before = a.st;
    b.advance(s.pool, s.model, p.data() + expect, 3 * s.bt - expect);
    const dsv4::SequenceState a_after = a.st;
    for (size_t L = 0; L < a_before.layers.size(); ++L)
      EXPECT_TRUE(a_after.layers[L].compressor.entries == a_before.layers[L].compressor.entries) << L;
    s.pool.release(b.seq);
  }
  auto other = tokens;
  other[0] ^= 1;  // the first block differs: the chain differs everywhere
  PooledSeq c;
  c.st = s.model.new_state();
  EXPECT_EQ(pc.restore(other, 3 * s.bt, c.st, c.seq), 0);
}

TEST(PrefixCache, EvictsLeastRecentlyUsedAndGivesEveryByteBack) {
  PoolSetup s;
  PrefixCache pc(s.pool);
  const auto p1 = prompt(s.bt, 1), p2 = prompt(s.bt, 2);
  for (const auto* p : {&p1, &p2}) {
    PooledSeq a;
    a.st = s.model.new_state();
    a.advance(s.pool, s.model, p->data(), s.bt);
    ASSERT_TRUE(pc.insert(ids32(*p), a.st, a.seq));
    a.st = {};
    s.pool.release(a.seq);  // the request ends; its checkpoint keeps the block alive
  }
  EXPECT_EQ(s.pool.blocks_in_use(), 2);
  PooledSeq b;
  b.st = s.model.new_state();
  EXPECT_EQ(pc.restore(ids32(p1), s.bt, b.st, b.seq), s.bt);  // p1 is now the most recent
  s.pool.release(b.seq);
  ASSERT_TRUE(pc.evict_one());
  PooledSeq c;
  c.st = s.model.new_state();
  EXPECT_EQ(pc.restore(ids32(p2), s.bt, c.st, c.seq), 0);
  EXPECT_EQ(pc.restore(ids32(p1), s.bt, c.st, c.seq), s.bt);
  s.pool.release(c.seq);
  ASSERT_TRUE(pc.evict_one());
  EXPECT_FALSE(pc.evict_one());
  EXPECT_EQ(s.pool.bytes_in_use(), 0);
}

// A checkpoint needs a slot; when the pool has none left it evicts older checkpoints, and a
// restore that cannot get one is a miss that takes nothing.
TEST(PrefixCache, FullPoolEvictsForTheSlotOrMisses) {
  const dsv4::Model& model = *tiny().model;
  const auto layout = dsv4::cache_layout(model.config());
  cache::CachePool probe(layout, 1 << 20);
  const int64_t bt = layout.block_tokens;
  // Room for two slots and two blocks (plus the halves' alignment).
  cache::CachePool pool(layout, 2 * probe.slot_stride() + 2 * probe.block_stride());
  PrefixCache pc(pool);
  const auto p1 = prompt(bt, 1), p2 = prompt(bt, 2);
  PooledSeq a;
  a.st = model.new_state();
  a.advance(pool, model, p1.data(), bt);
  ASSERT_TRUE(pc.insert(ids32(p1), a.st, a.seq));  // second slot
  a.st = {};
  pool.release(a.seq);
  PooledSeq b;
  b.st = model.new_state();
  b.advance(pool, model, p2.data(), bt);  // first slot again, the second block
  ASSERT_TRUE(pc.insert(ids32(p2), b.st, b.seq));  // evicts p1's checkpoint for its slot
  EXPECT_EQ(pc.size(), 1u);
  PooledSeq c;
  c.st = model.new_state();
  EXPECT_EQ(pc.restore(ids32(p2), bt, c.st, c.seq), 0);  // no third slot: a miss
  EXPECT_EQ(c.seq.slot, -1);
  EXPECT_TRUE(c.seq.blocks.empty());
  EXPECT_EQ(pool.refs(b.seq.blocks[0]), 2);
}

// The measurement: restoring a checkpoint (a slot copy; blocks shared) against the zero-SWA
// rebuild, which recomputes the last window (128) tokens through every layer. Prints both; the
// restore must be the cheaper one for the engine's choice to hold.
TEST(PrefixCache, CheckpointRestoreIsCheaperThanWindowRecompute) {
  PoolSetup s;
  kernels::set_num_threads(1);
  const int64_t window = s.model.config().sliding_window;
  const auto p = prompt(4 * window);
  PrefixCache pc(s.pool);
  PooledSeq a;
  a.st = s.model.new_state();
  a.advance(s.pool, s.model, p.data(), 3 * window);
  ASSERT_EQ(3 * window % s.bt, 0);
  ASSERT_TRUE(pc.insert(ids32(p), a.st, a.seq));
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  for (int i = 0; i < 10; ++i) {
    PooledSeq b;
    b.st = s.model.new_state();
    ASSERT_EQ(pc.restore(ids32(p), 3 * window, b.st, b.seq), 3 * window);
    s.pool.release(b.seq);
  }
  const double restore_s = std::chrono::duration<double>(clock::now() - t0).count() / 10;
  dsv4::SequenceState base = a.st;
  t0 = clock::now();
  s.model.advance(base, p.data() + 3 * window, window);
  const double recompute_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::printf("flash-tiny at %lld tokens: checkpoint restore %.3f ms, recompute of %lld window tokens %.1f ms\n",
              (long long)(3 * window), restore_s * 1e3, (long long)window, recompute_s * 1e3);
  EXPECT_LT(restore_s, recompute_s);
  kernels::set_num_threads(0);
}

}  // namespace
}  // namespace strata::engine
