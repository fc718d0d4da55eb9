// The cache kinds' policies acted on through a cache map, with no model: a toy state of one
// slot kind with draft copies (a recurrent state), one plain slot kind (a window ring) and one
// block kind (K/V entries). Binding moves every byte into the request's slot and blocks; a
// restored checkpoint adopts them; complete blocks stop at an unfinished one; the slot-state
// copy leaves draft copies behind; records export and import bit-exactly and refuse what does
// not fit; draft-slot rollback restores the kept token's state with one copy.
#include "cache/cache_map.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "cache/cache_records.h"
#include "cache/draft_slots.h"
#include "cache/kind_policy.h"
#include "core/error.h"

namespace strata::cache {
namespace {

constexpr int64_t kState = 6, kRing = 10, kEntry = 8, kDrafts = 2;

CacheLayout layout(int64_t drafts = kDrafts) {
  CacheLayout L;
  L.block_tokens = 4;
  CacheSpec rec{CacheKind::linear_state, 0, kState * 4, 1, 1, "fp32 x6"};
  rec.draft_copies = drafts;
  L.specs.push_back(rec);
  L.specs.push_back({CacheKind::sliding_window, 1, kRing, 1, 1, "10 bytes"});
  L.specs.push_back({CacheKind::full_attention, 1, kEntry, 0, 1, "8 bytes"});
  return L;
}

struct Toy {
  int64_t pos = 0;
  FixedRegion<float> state, drafts;
  FixedRegion<uint8_t> ring;
  EntryArray kv;
  Toy() {
    state.assign(kState, 0.0f);
    drafts.assign(kState * kDrafts, 0.0f);
    ring.assign(kRing, 0);
    kv.init(kEntry);
  }
  CacheMap map(const CacheLayout& L) {
    CacheMap m(3);
    m[0].regions = {state};
    if (L.specs[0].draft_copies) m[0].drafts = {drafts};
    m[1].regions = {ring};
    m[2].entries = &kv;
    m[2].tokens = pos;
    return m;
  }
  void run(int64_t n) {  // each token writes the state, a ring slot and one K/V entry
    for (int64_t t = 0; t < n; ++t, ++pos) {
      for (int64_t i = 0; i < kState; ++i) state[size_t(i)] = state[size_t(i)] * 0.5f + float(pos + i);
      ring[size_t(pos % kRing)] = uint8_t(pos);
      uint8_t* e = kv.append();
      for (int64_t i = 0; i < kEntry; ++i) e[i] = uint8_t(pos * 3 + i);
    }
  }
};

TEST(CacheMap, PoliciesSayWhereEachKindLives) {
  EXPECT_EQ(policy(CacheKind::linear_state).rollback, Rollback::draft_slots);
  EXPECT_EQ(policy(CacheKind::sliding_window).rollback, Rollback::undo_records);
  EXPECT_EQ(policy(CacheKind::full_attention).storage, Storage::blocks);
  EXPECT_EQ(policy(CacheKind::mla_latent).checkpoint, Checkpoint::share_blocks);
  const auto L = layout();
  EXPECT_EQ(L.fixed_bytes(), (kState * 4) * (1 + kDrafts) + kRing);
  EXPECT_EQ(L.draft_bytes(), kState * 4 * kDrafts);
}

TEST(CacheMap, BindAdoptAndCompleteBlocks) {
  const auto L = layout();
  CachePool pool(L, 1 << 20, false, 0, /*draft_units=*/3);
  Toy a;
  a.run(6);
  PoolSeq seq;
  ASSERT_TRUE(pool.reserve(seq, 6));
  auto m = a.map(L);
  const auto before = export_caches(m, L);
  bind_to_pool(m, pool, seq);
  EXPECT_TRUE(a.state.bound() && a.drafts.bound() && a.ring.bound() && a.kv.bound());
  const uint8_t* slot = pool.slot_data(seq.slot);
  EXPECT_EQ(reinterpret_cast<uint8_t*>(a.drafts.data()), pool.draft_data(seq.draft) + pool.draft_offset(0));
  EXPECT_TRUE(reinterpret_cast<uint8_t*>(a.state.data()) >= slot &&
              reinterpret_cast<uint8_t*>(a.ring.data()) < slot + pool.slot_stride());
  // the request holds the ledger's bytes: its slot, its draft unit and its blocks
  EXPECT_EQ(pool.bytes_in_use(), L.bytes_for(6));
  EXPECT_EQ(export_caches(a.map(L), L).size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(export_caches(a.map(L), L)[i].bytes, before[i].bytes) << i;
  // 6 tokens in blocks of 4: one complete block.
  EXPECT_EQ(complete_blocks(a.map(L), L, 6), 1);
  EXPECT_EQ(complete_blocks(a.map(L), L, 4), 1);
  // A checkpoint: the slot state copied, the blocks shared, adopted; it holds no draft unit.
  a.drafts[0] = 99.0f;
  PoolSeq ck;
  ASSERT_TRUE(pool.take_slot(ck));
  EXPECT_LT(ck.draft, 0);
  pool.share(ck, seq.blocks, seq.blocks.size());
  copy_slot_state(pool, seq.slot, ck.slot);
  Toy b;
  b.pos = 6;
  auto bm = b.map(L);
  EXPECT_THROW(adopt_from_pool(bm, pool, ck), Error);  // a state with draft copies needs a draft unit
  ASSERT_TRUE(pool.take_draft(ck));
  adopt_from_pool(bm, pool, ck);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(export_caches(b.map(L), L)[i].bytes, before[i].bytes) << i;
  EXPECT_NE(b.drafts[0], 99.0f);  // draft copies are scratch: in another draft unit, not checkpointed
  // A state that does not match its spec, or no slot: refused.
  Toy c;
  c.ring.assign(kRing - 1, 0);
  PoolSeq s2;
  ASSERT_TRUE(pool.reserve(s2, 1));
  auto cm = c.map(L);
  EXPECT_THROW(bind_to_pool(cm, pool, s2), Error);
  Toy d;
  PoolSeq none;
  auto dm = d.map(L);
  EXPECT_THROW(bind_to_pool(dm, pool, none), Error);
}

TEST(CacheMap, RecordsImportExactlyAndRefuseWhatDoesNotFit) {
  const auto L = layout(0);
  Toy a;
  a.run(9);
  const auto recs = export_caches(a.map(L), L);
  Toy b;
  b.pos = 9;
  auto bm = b.map(L);
  import_caches(recs, bm, L);
  EXPECT_EQ(b.state, a.state);
  EXPECT_EQ(b.ring, a.ring);
  EXPECT_EQ(b.kv, a.kv);
  auto bad = recs;
  bad[2].entries -= 1;
  Toy c;
  c.pos = 9;
  auto cm = c.map(L);
  EXPECT_THROW(import_caches(bad, cm, L), Error);
  bad = recs;
  bad[0].format = "bf16 x6";
  EXPECT_THROW(import_caches(bad, cm, L), Error);
  bad = recs;
  bad[1].bytes.push_back(0);
  EXPECT_THROW(import_caches(bad, cm, L), Error);
  bad = recs;
  bad.pop_back();
  EXPECT_THROW(import_caches(bad, cm, L), Error);
}

// Three verified tokens through draft slots: rolling back to any kept count leaves the live
// state as after that many tokens, with at most one restore applied per rollback.
TEST(CacheMap, DraftSlotRollbackRestoresTheKeptToken) {
  std::vector<float> want[4];
  for (int keep = 1; keep <= 3; ++keep) {
    std::vector<float> live(4, 1.0f), drafts(4 * 2, -1.0f);
    UndoLog undo;
    for (int64_t i = 0; i < 3; ++i) {
      auto s = draft_step<float>(live.data(), drafts.data(), 4, 2, i, 3, 10, &undo);
      for (int j = 0; j < 4; ++j) s.out[j] = s.in[j] * 2.0f + float(i);
      if (keep == 1) want[i + 1].assign(s.out, s.out + 4);
    }
    EXPECT_EQ(undo.saved_bytes(), 0u);
    undo.rollback(10 + keep);
    EXPECT_EQ(live, want[keep]) << keep;
  }
  std::vector<float> live(4), drafts(4);
  UndoLog undo;
  EXPECT_THROW(draft_step<float>(live.data(), drafts.data(), 4, 1, 0, 3, 0, &undo), Error);  // 2 drafts, 1 slot
  auto s = draft_step<float>(live.data(), drafts.data(), 4, 1, 0, 3, 0, nullptr);            // no log: in place
  EXPECT_EQ(s.in, live.data());
  EXPECT_EQ(s.out, live.data());
}

}  // namespace
}  // namespace strata::cache
