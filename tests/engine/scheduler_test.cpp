// The step planner: decode tokens first, prefill chunks in arrival order within the token
// budget, newest requests preempted until the step's cache fits.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

namespace strata::engine {
namespace {

// 100 bytes of fixed state + 10 per started block of 4 tokens.
int64_t bytes(int64_t ctx) { return 100 + 10 * ((ctx + 3) / 4); }

TEST(Scheduler, DecodeFirstThenPrefillInArrivalOrder) {
  std::vector<SchedSeq> s = {{0, 0, 20}, {1, 10, 1}, {2, 0, 5}, {3, 7, 1}};
  auto p = plan_step(s, 8, 1 << 30, bytes);
  EXPECT_EQ(p.chunk, (std::vector<int64_t>{6, 1, 0, 1}));
  EXPECT_TRUE(p.preempt.empty());
  p = plan_step(s, 100, 1 << 30, bytes);
  EXPECT_EQ(p.chunk, (std::vector<int64_t>{20, 1, 5, 1}));
}

TEST(Scheduler, BudgetSmallerThanDecodersServesTheOldest) {
  std::vector<SchedSeq> s = {{0, 3, 1}, {1, 3, 1}, {2, 3, 1}};
  auto p = plan_step(s, 2, 1 << 30, bytes);
  EXPECT_EQ(p.chunk, (std::vector<int64_t>{1, 1, 0}));
}

TEST(Scheduler, PreemptsTheNewestUntilItFits) {
  // Each at context 4 decoding one token grows into a second block: 120 bytes each.
  std::vector<SchedSeq> s = {{0, 4, 1}, {1, 4, 1}, {2, 4, 1}};
  auto p = plan_step(s, 16, 250, bytes);
  EXPECT_EQ(p.preempt, (std::vector<size_t>{2}));
  EXPECT_EQ(p.chunk, (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(p.bytes, 240);
  p = plan_step(s, 16, 130, bytes);
  EXPECT_EQ(p.preempt, (std::vector<size_t>{2, 1}));
  EXPECT_EQ(p.bytes, 120);
  // The oldest stays even when it alone does not fit (submit() prevents that case).
  p = plan_step(s, 16, 10, bytes);
  EXPECT_EQ(p.preempt, (std::vector<size_t>{2, 1}));
  EXPECT_EQ(p.chunk[0], 1);
}

}  // namespace
}  // namespace strata::engine
