// UndoLog: rolling back to a position restores every recorded region and vector size to what
// it was after the earlier positions, even when positions interleave (layers run their
// tokens in order one layer after another) and regions overlap.
#include "cache/undo_log.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace strata::cache {
namespace {

// A toy "model": two layers, each with a ring of 4 slots and a growing entry list; a token at
// position p writes slot p % 4 of every layer in layer order, and every second token appends an
// entry and rewrites (overlapping) slots 0..1.
struct Toy {
  std::vector<float> ring[2];
  std::vector<float> entries[2];
  Toy() {
    for (auto& r : ring) r.assign(8, 0.0f);
  }
  void run(int64_t pos0, int64_t n, UndoLog* log) {
    for (int L = 0; L < 2; ++L)
      for (int64_t p = pos0; p < pos0 + n; ++p) {
        float* slot = ring[L].data() + (p % 4) * 2;
        save_before_write(log, p, slot, 2);
        slot[0] = float(p * 10 + L), slot[1] = float(-p);
        if (p % 2 == 1) {
          save_before_write(log, p, ring[L].data(), 4);
          ring[L][0] += 0.5f, ring[L][3] = float(L + p);
          save_before_append(log, p, entries[L]);
          entries[L].push_back(float(p));
        }
      }
  }
  bool operator==(const Toy& o) const {
    return ring[0] == o.ring[0] && ring[1] == o.ring[1] && entries[0] == o.entries[0] && entries[1] == o.entries[1];
  }
};

TEST(UndoLog, RollbackToEveryPositionEqualsRunningOnlyThePrefix) {
  for (int64_t start : {0, 3, 6})
    for (int64_t n : {1, 2, 5, 9})
      for (int64_t keep = 0; keep <= n; ++keep) {
        Toy a, b;
        a.run(0, start, nullptr);
        b.run(0, start, nullptr);
        UndoLog log;
        a.run(start, n, &log);
        log.rollback(start + keep);
        b.run(start, keep, nullptr);
        EXPECT_TRUE(a == b) << "start " << start << " n " << n << " keep " << keep;
      }
}

TEST(UndoLog, RollbackInStagesAndClear) {
  Toy a, b;
  UndoLog log;
  a.run(0, 10, &log);
  log.rollback(7);
  log.rollback(4);  // a second rollback, to an earlier position, over what is left
  b.run(0, 4, nullptr);
  EXPECT_TRUE(a == b);
  // Running on from there and rolling back again still works with the older records kept.
  a.run(4, 3, &log);
  b.run(4, 1, nullptr);
  log.rollback(5);
  EXPECT_TRUE(a == b);
  log.rollback(5);  // nothing left at or after 5: no change
  EXPECT_TRUE(a == b);
  log.clear();
  EXPECT_EQ(log.records(), 0u);
  EXPECT_EQ(log.saved_bytes(), 0u);
  log.rollback(0);  // an empty log undoes nothing
  EXPECT_TRUE(a == b);
}

TEST(UndoLog, NoLogMeansNoRecords) {
  Toy a;
  a.run(0, 5, nullptr);  // the normal path: the helpers are no-ops
  UndoLog log;
  a.run(5, 1, &log);
  EXPECT_GT(log.records(), 0u);
  EXPECT_GT(log.saved_bytes(), 0u);
}

}  // namespace
}  // namespace strata::cache
