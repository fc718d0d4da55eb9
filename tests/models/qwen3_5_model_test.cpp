// Qwen3.5 (Gated DeltaNet + gated attention, qwen3.5-tiny) on the cache machinery every
// architecture shares: a sequence gives the same logits bits in any chunking and any
// batch; placed in the pool it gives the same logits and holds exactly the ledger's bytes;
// rolled back through draft slots (no state copied per drafted token) it equals running only
// the kept tokens; exported and imported it decodes on identically.
#include <gtest/gtest.h>

#include <random>

#include "cache/cache_map.h"
#include "cache/cache_records.h"
#include "core/error.h"
#include "models/qwen3_5_fixture.h"
#include "models/numerics_profiles.h"

namespace strata::qwen35 {
namespace {

class Qwen35ModelEveryProfile : public ::strata::testing::ProfileTest {};
STRATA_EVERY_PROFILE(Qwen35ModelEveryProfile);
using testing::tiny;

std::vector<int64_t> random_ids(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = int64_t(rng() % 151000);
  return v;
}

// Every cache of a state as plain records (the export format): equal records, equal state.
std::vector<cache::CacheRecord> records(models::Sequence& st, const models::Model& m) {
  models::CacheOptions all;
  all.include_mtp = true;
  const auto layout = m.model_config().cache_layout(all);
  return cache::export_caches(st.cache_map(layout), layout);
}

bool same(const std::vector<cache::CacheRecord>& a, const std::vector<cache::CacheRecord>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].kind != b[i].kind || a[i].entries != b[i].entries || a[i].bytes != b[i].bytes) return false;
  return true;
}

TEST_P(Qwen35ModelEveryProfile, ChunkingAndBatchingGiveTheSameBits) {
  const Model& m = *tiny().model;
  const auto ids = random_ids(300, 1);
  auto whole = m.new_sequence();
  const auto a = m.forward(*whole, ids.data(), 300);
  // Chunks that end before, on and after the 128-token block boundaries.
  auto chunked = m.new_sequence();
  std::vector<float> b;
  int64_t at = 0;
  for (int64_t n : {1, 126, 129, 44}) b = m.forward(*chunked, ids.data() + at, n), at += n;
  EXPECT_EQ(a, b);
  EXPECT_TRUE(same(records(*whole, m), records(*chunked, m)));
  // Three sequences stacked in one pass, each at its own position.
  std::vector<std::unique_ptr<models::Sequence>> alone, stacked;
  std::vector<std::vector<float>> want;
  for (int s = 0; s < 3; ++s) {
    alone.push_back(m.new_sequence());
    stacked.push_back(m.new_sequence());
    const int64_t pre = 10 + 7 * s;
    m.advance(*alone.back(), ids.data(), pre);
    m.advance(*stacked.back(), ids.data(), pre);
    want.push_back(m.forward(*alone.back(), ids.data() + pre, 5 + s));
  }
  std::vector<models::Model::BatchItem> items(3);
  for (int s = 0; s < 3; ++s) {
    const int64_t pre = 10 + 7 * s;
    items[size_t(s)].state = stacked[size_t(s)].get();
    items[size_t(s)].ids = ids.data() + pre;
    items[size_t(s)].n = 5 + s;
    items[size_t(s)].logits = true;
  }
  m.forward_batch(items);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(items[size_t(s)].out, want[size_t(s)]) << s;
    EXPECT_TRUE(same(records(*alone[size_t(s)], m), records(*stacked[size_t(s)], m))) << s;
  }
}

TEST(Qwen35Model, PooledStateGivesTheSameLogitsAndHoldsTheLedgersBytes) {
  const Model& m = *tiny().model;
  models::CacheOptions o;
  o.draft_tokens = 3;  // draft slots are part of a request's slot, and of the ledger
  const auto layout = m.model_config().cache_layout(o);
  EXPECT_GT(layout.draft_bytes(), 0);
  EXPECT_EQ(layout.draft_bytes(), 3 * (layout.fixed_bytes() - layout.draft_bytes()));
  cache::CachePool pool(layout, int64_t(16) << 20);
  cache::PoolSeq seq;
  auto owned = m.new_sequence(o), pooled = m.new_sequence(o);
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
    if (!L.linear) {
      EXPECT_TRUE(L.kv.bound());
      continue;
    }
    for (const void* p : {static_cast<const void*>(L.state.data()), static_cast<const void*>(L.conv.data())})
      EXPECT_TRUE(p >= slot && p < slot + pool.slot_stride());
    const uint8_t* unit = pool.draft_data(seq.draft);
    for (const void* p : {static_cast<const void*>(L.state_drafts.data()), static_cast<const void*>(L.conv_drafts.data())})
      EXPECT_TRUE(p >= unit && p < unit + pool.draft_stride());
  }
  EXPECT_TRUE(same(records(*owned, m), records(*pooled, m)));
}

// A verification pass over M tokens, rolled back to every kept prefix, equals running only
// that prefix; the undo log copies no state bytes (the recurrent state goes through draft
// slots, the K/V appends are undone by truncation).
TEST_P(Qwen35ModelEveryProfile, RollbackThroughDraftSlotsEqualsRunningThePrefix) {
  const Model& m = *tiny().model;
  models::CacheOptions o;
  o.draft_tokens = 4;
  const int64_t P = 125, M = 5;  // the pass crosses the 128-token block boundary
  const auto ids = random_ids(P + M + 1, 3);
  for (int64_t keep = 1; keep <= M; ++keep) {
    auto spec = m.new_sequence(o), plain = m.new_sequence(o);
    m.advance(*spec, ids.data(), P);
    m.advance(*plain, ids.data(), P + keep);
    cache::UndoLog undo;
    const auto all = m.forward_all(*spec, ids.data() + P, M, undo);
    EXPECT_EQ(undo.saved_bytes(), 0u);
    m.rollback(*spec, undo, P + keep);
    EXPECT_TRUE(same(records(*spec, m), records(*plain, m))) << keep;
    EXPECT_EQ(m.decode(*spec, 7), m.decode(*plain, 7)) << keep;
    // every verified row is the row one-by-one decoding gives
    auto one = m.new_sequence(o);
    m.advance(*one, ids.data(), P);
    for (int64_t i = 0; i < M; ++i) {
      const auto row = m.decode(*one, ids[size_t(P + i)]);
      EXPECT_TRUE(std::equal(row.begin(), row.end(), all.begin() + i * m.vocab_size())) << i;
    }
  }
  // More drafted tokens than draft slots: refused before any state is touched.
  auto st = m.new_sequence(o);
  m.advance(*st, ids.data(), P);
  const auto before = records(*st, m);
  cache::UndoLog undo;
  EXPECT_THROW(m.forward_all(*st, ids.data() + P, 6, undo), Error);
  EXPECT_EQ(st->pos, P);
  EXPECT_TRUE(same(records(*st, m), before));
}

TEST(Qwen35Model, ExportedCachesImportAndDecodeOnIdentically) {
  const Model& m = *tiny().model;
  models::CacheOptions all;
  all.include_mtp = true;
  const auto layout = m.model_config().cache_layout(all);
  const auto ids = random_ids(50, 4);
  auto a = m.new_sequence();
  m.advance(*a, ids.data(), 45);
  const auto recs = cache::export_caches(a->cache_map(layout), layout);
  auto b = m.new_sequence();
  b->pos = a->pos;
  b->mtp_pos = a->mtp_pos;
  auto map = b->cache_map(layout);
  cache::import_caches(recs, map, layout);
  EXPECT_EQ(m.forward(*a, ids.data() + 45, 5), m.forward(*b, ids.data() + 45, 5));
  // Records of another position do not fit.
  auto c = m.new_sequence();
  c->pos = 44;
  auto cmap = c->cache_map(layout);
  EXPECT_THROW(cache::import_caches(recs, cmap, layout), Error);
}

}  // namespace
}  // namespace strata::qwen35
