// Gemma 4 (every tiny preset: K and V separate, K=V, PLE + KV-shared layers, MoE) on the cache
// machinery every architecture shares: the same logits bits in any chunking and any batch,
// also across the sliding window (32) and a 128-token block; placed in the pool, the same
// logits and exactly the ledger's bytes (the rings in the slot, full layers in blocks); a
// verification pass rolled back (ring slots restored from undo records, appends truncated)
// equals running the kept tokens; exported and imported, it decodes on identically.
#include <gtest/gtest.h>

#include <random>

#include "cache/cache_map.h"
#include "cache/cache_records.h"
#include "core/error.h"
#include "models/gemma4_fixture.h"
#include "models/numerics_profiles.h"

namespace strata::gemma4 {
namespace {

using testing::tiny;

class Gemma4Presets : public ::testing::TestWithParam<const char*> {};
INSTANTIATE_TEST_SUITE_P(Tiny, Gemma4Presets, ::testing::ValuesIn(testing::kTinyPresets),
                         [](const auto& i) {
                           std::string s = i.param;
                           for (auto& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

std::vector<int64_t> random_ids(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = int64_t(rng() % 512);
  return v;
}

std::vector<cache::CacheRecord> records(models::Sequence& st, const models::Model& m) {
  const auto layout = m.model_config().cache_layout({});
  return cache::export_caches(st.cache_map(layout), layout);
}

bool same(const std::vector<cache::CacheRecord>& a, const std::vector<cache::CacheRecord>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].kind != b[i].kind || a[i].entries != b[i].entries || a[i].bytes != b[i].bytes) return false;
  return true;
}

TEST_P(Gemma4Presets, ChunkingAndBatchingGiveTheSameBits) {
  for (Numerics profile : {Numerics::exact, Numerics::fast}) {
    ScopedNumerics scope(profile);
    const Model& m = tiny(GetParam());
    const auto ids = random_ids(300, 1);
    auto whole = m.new_sequence();
    const auto a = m.forward(*whole, ids.data(), 300);
    // Chunks shorter and longer than the window, ending before, on and after block boundaries.
    auto chunked = m.new_sequence();
    std::vector<float> b;
    int64_t at = 0;
    for (int64_t n : {1, 31, 33, 63, 1, 128, 43}) b = m.forward(*chunked, ids.data() + at, n), at += n;
    EXPECT_EQ(a, b) << numerics_name(profile);
    EXPECT_TRUE(same(records(*whole, m), records(*chunked, m))) << numerics_name(profile);
    // Token by token.
    auto one = m.new_sequence();
    for (int64_t i = 0; i < 300; ++i) b = m.decode(*one, ids[size_t(i)]);
    EXPECT_EQ(a, b) << numerics_name(profile);
    // Three sequences stacked in one pass, each at its own position.
    std::vector<std::unique_ptr<models::Sequence>> alone, stacked;
    std::vector<std::vector<float>> want;
    for (int s = 0; s < 3; ++s) {
      alone.push_back(m.new_sequence());
      stacked.push_back(m.new_sequence());
      const int64_t pre = 10 + 20 * s;
      m.advance(*alone.back(), ids.data(), pre);
      m.advance(*stacked.back(), ids.data(), pre);
      want.push_back(m.forward(*alone.back(), ids.data() + pre, 5 + 20 * s));
    }
    std::vector<models::Model::BatchItem> items(3);
    for (int s = 0; s < 3; ++s) {
      const int64_t pre = 10 + 20 * s;
      items[size_t(s)].state = stacked[size_t(s)].get();
      items[size_t(s)].ids = ids.data() + pre;
      items[size_t(s)].n = 5 + 20 * s;
      items[size_t(s)].logits = true;
    }
    m.forward_batch(items);
    for (int s = 0; s < 3; ++s) {
      EXPECT_EQ(items[size_t(s)].out, want[size_t(s)]) << numerics_name(profile) << " " << s;
      EXPECT_TRUE(same(records(*alone[size_t(s)], m), records(*stacked[size_t(s)], m))) << s;
    }
  }
}

TEST_P(Gemma4Presets, PooledStateGivesTheSameLogitsAndHoldsTheLedgersBytes) {
  const Model& m = tiny(GetParam());
  const auto layout = m.model_config().cache_layout({});
  EXPECT_EQ(layout.fixed_bytes(), [&] {  // every non-shared sliding layer's ring: window entries
    int64_t s = 0;
    const Config& c = m.config();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l)
      if (c.sliding(l) && !c.kv_shared(l)) s += c.sliding_window * c.kv_entry_bytes(l);
    return s;
  }());
  cache::CachePool pool(layout, int64_t(16) << 20);
  cache::PoolSeq seq;
  auto owned = m.new_sequence(), pooled = m.new_sequence();
  const auto ids = random_ids(270, 2);
  int64_t at = 0;
  for (int64_t n : {5, 130, 135}) {
    ASSERT_TRUE(pool.reserve(seq, at + n));
    if (at == 0) {
      auto map = pooled->cache_map(layout);
      cache::bind_to_pool(map, pool, seq);
    }
    EXPECT_EQ(m.forward(*owned, ids.data() + at, n), m.forward(*pooled, ids.data() + at, n)) << at;
    at += n;
    EXPECT_EQ(pool.bytes_in_use(), layout.bytes_for(at));
  }
  const auto& st = dynamic_cast<const SequenceState&>(*pooled);
  const uint8_t* slot = pool.slot_data(seq.slot);
  for (const auto& L : st.layers) {
    if (L.kind == LayerState::Kind::full) {
      EXPECT_TRUE(L.kv.bound());
    }
    if (L.kind == LayerState::Kind::sliding) {
      const auto* p = reinterpret_cast<const uint8_t*>(L.ring.data());
      EXPECT_TRUE(p >= slot && p < slot + pool.slot_stride());
    }
  }
  EXPECT_TRUE(same(records(*owned, m), records(*pooled, m)));
}

// A verification pass over M tokens, rolled back to every kept prefix, equals running only
// that prefix, also when the pass wraps the ring (window 32).
TEST_P(Gemma4Presets, RollbackEqualsRunningThePrefix) {
  const Model& m = tiny(GetParam());
  const int64_t P = 125, M = 40;
  const auto ids = random_ids(P + M + 1, 3);
  for (int64_t keep : {int64_t(1), int64_t(7), M}) {
    auto spec = m.new_sequence(), plain = m.new_sequence();
    m.advance(*spec, ids.data(), P);
    m.advance(*plain, ids.data(), P + keep);
    cache::UndoLog undo;
    const auto all = m.forward_all(*spec, ids.data() + P, M, undo);
    m.rollback(*spec, undo, P + keep);
    EXPECT_TRUE(same(records(*spec, m), records(*plain, m))) << keep;
    EXPECT_EQ(m.decode(*spec, 7), m.decode(*plain, 7)) << keep;
    auto one = m.new_sequence();
    m.advance(*one, ids.data(), P);
    for (int64_t i = 0; i < M; ++i) {
      const auto row = m.decode(*one, ids[size_t(P + i)]);
      EXPECT_TRUE(std::equal(row.begin(), row.end(), all.begin() + i * m.vocab_size())) << i;
    }
  }
}

TEST_P(Gemma4Presets, ExportedCachesImportAndDecodeOnIdentically) {
  const Model& m = tiny(GetParam());
  const auto layout = m.model_config().cache_layout({});
  const auto ids = random_ids(80, 4);
  auto a = m.new_sequence();
  m.advance(*a, ids.data(), 75);
  const auto recs = cache::export_caches(a->cache_map(layout), layout);
  auto b = m.new_sequence();
  b->pos = a->pos;
  auto map = b->cache_map(layout);
  cache::import_caches(recs, map, layout);
  EXPECT_EQ(m.forward(*a, ids.data() + 75, 5), m.forward(*b, ids.data() + 75, 5));
}

TEST(Gemma4Model, OutOfVocabularyIdsAreRefusedBeforeAnyStateChanges) {
  const Model& m = tiny("gemma4-tiny");
  auto st = m.new_sequence();
  const std::vector<int64_t> bad = {3, 512};
  EXPECT_THROW(m.forward(*st, bad.data(), 2), Error);
  EXPECT_EQ(st->pos, 0);
}

}  // namespace
}  // namespace strata::gemma4
