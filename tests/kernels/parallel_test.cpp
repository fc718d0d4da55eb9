// parallel_for on the persistent worker pool: every index runs exactly once for any thread
// count (resizing the pool between calls), nested and concurrent callers run inline instead of
// deadlocking, and an exception from any chunk propagates only after the other chunks are done.
// parallel_for_dynamic: the same, in chunks of at most its grain, and a slow thread takes fewer.
#include "kernels/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace strata::kernels {
namespace {

TEST(ParallelFor, EveryIndexOnceAtAnyThreadCount) {
  for (int threads : {1, 2, 3, 5, 2}) {
    set_num_threads(threads);
    for (int64_t n : {1, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << threads << " " << n << " " << i;
    }
  }
  set_num_threads(0);
}

TEST(ParallelFor, NestedAndConcurrentCallersRunInline) {
  set_num_threads(2);
  std::atomic<int64_t> sum{0};
  auto job = [&] {
    for (int rep = 0; rep < 200; ++rep)
      parallel_for(8, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          parallel_for(4, 1, [&](int64_t b2, int64_t e2) { sum.fetch_add(e2 - b2); });
      });
  };
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) callers.emplace_back(job);
  for (auto& c : callers) c.join();
  EXPECT_EQ(sum.load(), 3 * 200 * 8 * 4);
  set_num_threads(0);
}

// An exception from any chunk, on the calling thread or on a worker (where, escaping, it would
// end the process), reaches the caller, and only once no chunk is still running (a chunk left
// running would write into the caller's freed buffers).
TEST(ParallelFor, ExceptionFromAnyChunkReachesTheCallerAfterTheOthersFinish) {
  set_num_threads(2);
  for (int64_t thrower : {0, 1}) {  // chunk 0 runs on the caller, chunk 1 on the worker
    std::atomic<int> done{0};
    EXPECT_THROW(parallel_for(2, 1,
                              [&](int64_t b, int64_t) {
                                if (b == thrower) throw std::runtime_error("chunk");
                                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                done.fetch_add(1);
                              }),
                 std::runtime_error);
    EXPECT_EQ(done.load(), 1) << thrower;  // the other chunk finished before the throw left parallel_for
  }
  // and the pool still works
  std::atomic<int> again{0};
  parallel_for(2, 1, [&](int64_t b, int64_t e) { again.fetch_add(int(e - b)); });
  EXPECT_EQ(again.load(), 2);
  set_num_threads(0);
}

TEST(ParallelForDynamic, EveryIndexOnceInChunksOfTheGrain) {
  for (int threads : {1, 2, 3, 2}) {
    set_num_threads(threads);
    for (int64_t n : {1, 7, 64, 1000})
      for (int64_t grain : {1, 3, 64, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int> too_long{0};
        parallel_for_dynamic(n, 1, grain, [&](int64_t b, int64_t e) {
          if (e - b > grain || b % grain != 0) too_long.fetch_add(1);
          for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << threads << " " << n << " " << grain << " " << i;
        if (threads > 1) {
          EXPECT_EQ(too_long.load(), 0);  // (one thread: fn(0, n) in one call)
        }
        // a static call after a dynamic one still splits in halves (the pool's mode is per call)
        std::atomic<int> calls{0};
        parallel_for(n, 1, [&](int64_t, int64_t) { calls.fetch_add(1); });
        EXPECT_EQ(calls.load(), int(std::min<int64_t>(threads, n)));
      }
  }
  set_num_threads(0);
}

// The point of it: the thread whose chunk is slow takes no more while the other works through
// the rest (a fixed split would give each thread half the chunks).
TEST(ParallelForDynamic, ASlowThreadTakesFewerChunks) {
  set_num_threads(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> on_caller{0}, total{0};
  parallel_for_dynamic(16, 1, 1, [&](int64_t, int64_t) {
    total.fetch_add(1);
    if (std::this_thread::get_id() != caller) return;
    // the caller's first chunk, whichever it is (the worker may take chunk 0)
    if (on_caller.fetch_add(1) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  EXPECT_EQ(total.load(), 16);
  EXPECT_LE(on_caller.load(), 2);  // its slow one, and at most one taken as the worker finished
  set_num_threads(0);
}

TEST(ParallelForDynamic, ExceptionReachesTheCallerAfterTheOtherChunks) {
  set_num_threads(2);
  std::atomic<int> done{0};
  EXPECT_THROW(parallel_for_dynamic(8, 1, 1,
                                    [&](int64_t b, int64_t) {
                                      if (b == 3) throw std::runtime_error("chunk");
                                      std::this_thread::sleep_for(std::chrono::milliseconds(5));
                                      done.fetch_add(1);
                                    }),
               std::runtime_error);
  EXPECT_EQ(done.load(), 7);  // every other chunk ran, and finished before the throw left
  set_num_threads(0);
}

}  // namespace
}  // namespace strata::kernels
