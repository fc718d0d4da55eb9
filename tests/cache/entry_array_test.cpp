// EntryArray and FixedRegion: owned storage, moving into pool memory (bind), adopting memory
// that already holds the contents, copies that never alias the pool, and truncation for the
// undo log.
#include "cache/entry_array.h"

#include <gtest/gtest.h>

#include <cstring>

#include "cache/fixed_region.h"
#include "cache/undo_log.h"
#include "core/error.h"

namespace strata::cache {
namespace {

void put(EntryArray& a, uint8_t v) {
  uint8_t* e = a.append();
  std::memset(e, v, size_t(a.entry_bytes()));
}

TEST(EntryArray, BindSpreadsEntriesOverBlocksAtTheOffset) {
  EntryArray a;
  a.init(3);
  for (uint8_t v = 1; v <= 5; ++v) put(a, v);
  // Two entries a block, this cache at offset 4 of each 16-byte block.
  std::vector<uint8_t> mem(3 * 16, 0xee);
  std::vector<uint8_t*> table = {mem.data() + 32, mem.data(), mem.data() + 16};  // any order
  const EntryArray owned = a;
  a.bind(&table, 4, 2);
  EXPECT_TRUE(a.bound());
  EXPECT_EQ(a.size(), 5u);
  EXPECT_TRUE(a == owned);
  EXPECT_EQ(a.entry(0), mem.data() + 32 + 4);
  EXPECT_EQ(a.entry(3), mem.data() + 0 + 4 + 3);
  EXPECT_EQ(mem[16 + 4], 5);      // entry 4: block 2's first
  EXPECT_EQ(mem[32 + 3], 0xee);   // bytes outside the cache's range untouched
  put(a, 6);                      // entry 5: second of block 2
  EXPECT_EQ(mem[16 + 7], 6);
  EXPECT_THROW(put(a, 7), Error);  // block 3 is not in the table
  EXPECT_EQ(a.size(), 6u);

  EntryArray copy = a;  // owned, gathered
  EXPECT_FALSE(copy.bound());
  EXPECT_TRUE(copy == a);
  std::memset(mem.data(), 0, mem.size());
  EXPECT_FALSE(copy == a);
  EXPECT_EQ(copy.to_bytes().size(), 18u);
  EXPECT_EQ(copy.to_bytes()[15], 6);
}

TEST(EntryArray, AdoptAndTruncate) {
  std::vector<uint8_t> mem(8, 0);
  for (int i = 0; i < 8; ++i) mem[size_t(i)] = uint8_t(i);
  std::vector<uint8_t*> table = {mem.data()};
  EntryArray a;
  a.init(2);
  a.adopt(&table, 0, 4, 3);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(a.entry(2)[1], 5);
  UndoLog log;
  save_before_append(&log, 10, a);
  put(a, 9);
  EXPECT_EQ(a.size(), 4u);
  log.rollback(10);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_THROW(a.resize(5), Error);
  EXPECT_THROW(a.adopt(&table, 0, 4, 5), Error);  // one block holds 4
}

TEST(EntryArray, AssignBytesChecksWholeEntries) {
  EntryArray a;
  a.init(4);
  EXPECT_THROW(a.assign_bytes(std::vector<uint8_t>(6)), Error);
  a.assign_bytes(std::vector<uint8_t>(8, 1));
  EXPECT_EQ(a.size(), 2u);
  a.assign_bytes({});
  EXPECT_TRUE(a.empty());
}

TEST(FixedRegion, BindAdoptCopy) {
  FixedRegion<float> r;
  r.assign(4, 1.5f);
  EXPECT_FALSE(r.bound());
  std::vector<float> slot(6, 0.0f);
  r.bind(slot.data() + 1);
  EXPECT_TRUE(r.bound());
  EXPECT_EQ(slot[1], 1.5f);
  EXPECT_EQ(slot[5], 0.0f);
  r[0] = 7.0f;
  EXPECT_EQ(slot[1], 7.0f);
  FixedRegion<float> copy = r;  // owned
  EXPECT_FALSE(copy.bound());
  EXPECT_TRUE(copy == r);
  slot[2] = -1.0f;
  EXPECT_FALSE(copy == r);
  FixedRegion<float> moved = std::move(r);  // keeps the binding
  EXPECT_TRUE(moved.bound());
  EXPECT_EQ(moved.data(), slot.data() + 1);
  FixedRegion<float> other;
  other.assign(4, 0.0f);
  other.adopt(slot.data() + 1);
  EXPECT_EQ(other[0], 7.0f);
}

}  // namespace
}  // namespace strata::cache
