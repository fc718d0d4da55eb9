// Thread pinning: with it on, chunk i of a parallel_for runs on the i-th allowed CPU (the
// calling thread is worker 0); results never change; turning it off lets the caller run
// anywhere again.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <vector>

#include "kernels/parallel.h"

namespace strata::kernels {
namespace {

TEST(ParallelPin, WorkersRunOnTheirCpus) {
  const auto cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  {  // a sandbox that refuses affinity changes leaves pinning a no-op: nothing to check
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) GTEST_SKIP() << "affinity changes refused";
  }
  set_num_threads(2);
  set_pin_threads(true);
  EXPECT_TRUE(pin_threads());
  for (int round = 0; round < 20; ++round) {
    std::vector<int> where(2, -1);
    parallel_for(2, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) where[size_t(i)] = sched_getcpu();
    });
    EXPECT_EQ(where[0], cpus[0]);
    EXPECT_EQ(where[1], cpus[1 % cpus.size()]);
  }
  set_pin_threads(false);
  EXPECT_FALSE(pin_threads());
  parallel_for(2, 1, [](int64_t, int64_t) {});  // rebuilt unpinned: the caller is let go
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(CPU_COUNT(&set), int(cpus.size()));
  set_num_threads(0);
}

}  // namespace
}  // namespace strata::kernels
