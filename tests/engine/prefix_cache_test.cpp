// PrefixCache: hash-chain lookup of the longest checkpointed prefix, LRU eviction, and the
// measurement behind choosing checkpoints over the zero-SWA rebuild.
#include "engine/prefix_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "kernels/parallel.h"
#include "models/dsv4_fixture.h"

namespace strata::engine {
namespace {

dsv4::SequenceState at(int64_t pos) {
  dsv4::SequenceState s;
  s.pos = pos;
  return s;
}

std::vector<int32_t> ids(int64_t n, int32_t salt = 0) {
  std::vector<int32_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(int32_t(i * 31 + salt));
  return v;
}

TEST(PrefixCache, LongestMatchingBlockPrefix) {
  PrefixCache pc(4);
  auto t = ids(13);
  pc.insert(t, at(4), 10);
  pc.insert(t, at(8), 20);
  pc.insert(t, at(6), 99);  // not a block boundary: ignored
  EXPECT_EQ(pc.size(), 2u);
  EXPECT_EQ(pc.bytes(), 30);
  dsv4::SequenceState out;
  EXPECT_EQ(pc.lookup(t, 13, out), 8);
  EXPECT_EQ(out.pos, 8);
  EXPECT_EQ(pc.lookup(t, 7, out), 4);  // limit: at most 7 tokens may come from the cache
  auto u = t;
  u[5] = 12345;  // second block differs
  EXPECT_EQ(pc.lookup(u, 13, out), 4);
  u[0] = 1;  // first block differs: the chain differs everywhere
  EXPECT_EQ(pc.lookup(u, 13, out), 0);
}

TEST(PrefixCache, EvictsLeastRecentlyUsed) {
  PrefixCache pc(4);
  auto a = ids(8, 1), b = ids(8, 2);
  pc.insert(a, at(4), 10);
  pc.insert(b, at(4), 10);
  dsv4::SequenceState out;
  EXPECT_EQ(pc.lookup(a, 8, out), 4);  // a is now the most recent
  ASSERT_TRUE(pc.evict_one());
  EXPECT_EQ(pc.lookup(b, 8, out), 0);
  EXPECT_EQ(pc.lookup(a, 8, out), 4);
  ASSERT_TRUE(pc.evict_one());
  EXPECT_FALSE(pc.evict_one());
  EXPECT_EQ(pc.bytes(), 0);
}

// The measurement: restoring a checkpoint (a state copy) against the zero-SWA rebuild, which
// recomputes the last window (128) tokens through every layer. Prints both; the copy must be
// the cheaper one for the engine's choice to hold.
TEST(PrefixCache, CheckpointCopyIsCheaperThanWindowRecompute) {
  dsv4::testing::TinyModel tiny;
  auto& model = *tiny.model;
  kernels::set_num_threads(1);
  const int64_t window = model.config().sliding_window;
  std::vector<int64_t> prompt;
  for (int64_t i = 0; i < 4 * window; ++i) prompt.push_back(100 + (i * 7) % 5000);
  auto st = model.new_sequence();
  model.advance(st, prompt.data(), 3 * window);
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  dsv4::SequenceState copy;
  for (int i = 0; i < 10; ++i) copy = st;
  const double copy_s = std::chrono::duration<double>(clock::now() - t0).count() / 10;
  auto base = st;
  t0 = clock::now();
  model.advance(base, prompt.data() + 3 * window, window);
  const double recompute_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::printf("flash-tiny at %lld tokens: checkpoint copy %.3f ms, recompute of %lld window tokens %.1f ms\n",
              (long long)(3 * window), copy_s * 1e3, (long long)window, recompute_s * 1e3);
  EXPECT_LT(copy_s, recompute_s);
  kernels::set_num_threads(0);
}

}  // namespace
}  // namespace strata::engine
