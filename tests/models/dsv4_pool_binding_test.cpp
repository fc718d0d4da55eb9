// A sequence state placed in the cache pool (its cache map, cache/cache_map.h): the forward pass reads and writes
// pool memory with bitwise the same logits as an owned state; every cache byte lies in the
// request's slot and blocks, at the layout's offsets, so the pool holds exactly the ledger's
// bytes; a write with no block reserved is an error, not a stray write.
#include <gtest/gtest.h>

#include "core/error.h"
#include "models/deepseek_v4/cache_layout.h"
#include "models/dsv4_fixture.h"

namespace strata::dsv4 {
namespace {

testing::TinyModel& tiny() {
  static testing::TinyModel t;
  return t;
}

std::vector<int64_t> ids(int64_t n, int64_t salt) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(100 + (i * 11 + salt) % 4000);
  return v;
}

bool inside(const void* p, size_t n, const uint8_t* lo, int64_t len) {
  auto a = static_cast<const uint8_t*>(p);
  return a >= lo && a + n <= lo + len;
}

TEST(Dsv4PoolBinding, PooledStateGivesTheSameLogitsAndHoldsTheLedgersBytes) {
  const Model& m = *tiny().model;
  for (IndexKeyFormat f : {IndexKeyFormat::fp8, IndexKeyFormat::fp4}) {
    CacheLayoutOptions lo;
    lo.index_keys = f;
    const auto layout = cache_layout(m.config(), lo);
    cache::CachePool pool(layout, int64_t(64) << 20);
    cache::PoolSeq seq;
    SequenceState owned = m.new_state(f), pooled = m.new_state(f);
    // Chunks that cross block boundaries at odd places; the pool grows a step ahead.
    const auto p = ids(300, 5);
    int64_t at = 0;
    for (int64_t n : {1, 130, 100, 69}) {
      ASSERT_TRUE(pool.reserve(seq, at + n));
      if (at == 0) bind_to_pool(pooled, pool, seq);
      auto a = m.forward(owned, p.data() + at, n);
      auto b = m.forward(pooled, p.data() + at, n);
      ASSERT_EQ(a, b) << "chunk at " << at;
      at += n;
      pool.shrink(seq, at);
      EXPECT_EQ(pool.bytes_in_use(), layout.bytes_for(at)) << at;
    }
    // Every piece lives in the pool, in the slot or in the block that covers its tokens.
    const uint8_t* slot = pool.slot_data(seq.slot);
    int64_t state_bytes = 0;
    for (const auto& L : pooled.layers) {
      ASSERT_TRUE(L.ring.bound());
      EXPECT_TRUE(inside(L.ring.data(), L.ring.size(), slot, pool.slot_stride()));
      state_bytes += int64_t(L.ring.size());
      for (const CompressorState* c : {&L.compressor, &L.index_keys}) {
        if (c->ratio == 0) continue;
        ASSERT_TRUE(c->entries.bound() && c->kv.bound() && c->score.bound());
        EXPECT_TRUE(inside(c->kv.data(), c->kv.size() * 4, slot, pool.slot_stride()));
        EXPECT_TRUE(inside(c->score.data(), c->score.size() * 4, slot, pool.slot_stride()));
        for (int64_t e = 0; e < c->n_entries(); ++e) {
          const int32_t block = seq.blocks[size_t(e * c->ratio / layout.block_tokens)];
          EXPECT_TRUE(inside(c->entry(e), size_t(c->codec.bytes()), pool.block_data(block), pool.block_stride()));
        }
        state_bytes += c->entries.bytes() + int64_t(c->kv.size() + c->score.size()) * 4;
      }
    }
    EXPECT_EQ(state_bytes, layout.bytes_exact(at));
    // A copy is owned and equal; its logits continue the same.
    SequenceState copy = pooled;
    EXPECT_FALSE(copy.layers[0].ring.bound());
    ASSERT_TRUE(pool.reserve(seq, at + 1));
    EXPECT_EQ(m.forward(copy, p.data(), 1), m.forward(pooled, p.data(), 1));
  }
}

TEST(Dsv4PoolBinding, AppendWithoutABlockIsAnError) {
  const Model& m = *tiny().model;
  const auto layout = cache_layout(m.config());
  cache::CachePool pool(layout, int64_t(64) << 20);
  cache::PoolSeq seq;
  SequenceState st = m.new_state();
  ASSERT_TRUE(pool.reserve(seq, 4));
  bind_to_pool(st, pool, seq);
  const auto p = ids(200, 1);
  m.forward(st, p.data(), 4);
  // The engine reserves before it runs; a caller that does not gets strata::Error, and the
  // pool's neighbours are untouched.
  EXPECT_THROW(m.forward(st, p.data() + 4, 200 - 4), Error);
}

TEST(Dsv4PoolBinding, StateThatDoesNotFitItsSpecsIsRefused) {
  const Model& m = *tiny().model;
  const auto layout = cache_layout(m.config());
  cache::CachePool pool(layout, int64_t(64) << 20);
  cache::PoolSeq seq;
  SequenceState st = m.new_state(IndexKeyFormat::fp4);  // the layout stores FP8 keys
  ASSERT_TRUE(pool.reserve(seq, 1));
  EXPECT_THROW(bind_to_pool(st, pool, seq), Error);
  SequenceState none = m.new_state();
  cache::PoolSeq empty;
  EXPECT_THROW(bind_to_pool(none, pool, empty), Error);  // no slot
}

}  // namespace
}  // namespace strata::dsv4
