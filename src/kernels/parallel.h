// Splits [0, n) into contiguous ranges run on worker threads. Callers give each index an
// independent piece of output (an output row, a head), so results never depend on the split:
// the thread count changes speed, not bits. STRATA_THREADS overrides the thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace strata::kernels {

int num_threads();
void set_num_threads(int n);  // 0 = hardware concurrency

// Pins worker i (and the thread that starts the pool, as worker 0) to the i-th CPU the process
// may run on, so a worker keeps its caches and the OS does not migrate it between steps.
// Off by default (a shared machine may prefer the scheduler's choice); STRATA_PIN_THREADS=1
// turns it on. Takes effect when the pool is next (re)built. Results never change.
void set_pin_threads(bool on);
bool pin_threads();
// The CPUs worker i is pinned to when pinning is on: the process's allowed set, in order.
std::vector<int> allowed_cpus();

// Runs fn(begin, end) over chunks; below min_per_thread items per thread it runs inline.
void parallel_for(int64_t n, int64_t min_per_thread, const std::function<void(int64_t, int64_t)>& fn);

// The same, but [0, n) is cut into chunks of `grain` items that the threads take from a shared
// counter as they finish the previous one: a thread that is woken late, or whose memory is
// slower, does less. Which thread runs a chunk varies from run to run, so fn must give each
// index its own output (it may not accumulate across a thread's chunks). Run inline (one
// thread, or too little work) it is one call fn(0, n), as parallel_for's.
void parallel_for_dynamic(int64_t n, int64_t min_per_thread, int64_t grain,
                          const std::function<void(int64_t, int64_t)>& fn);

}  // namespace strata::kernels
