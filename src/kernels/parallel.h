// Splits [0, n) into contiguous ranges run on worker threads. Callers give each index an
// independent piece of output (an output row, a head), so results never depend on the split:
// the thread count changes speed, not bits. STRATA_THREADS overrides the thread count.
#pragma once
#include <cstdint>
#include <functional>

namespace strata::kernels {

int num_threads();
void set_num_threads(int n);  // 0 = hardware concurrency

// Runs fn(begin, end) over chunks; below min_per_thread items per thread it runs inline.
void parallel_for(int64_t n, int64_t min_per_thread, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace strata::kernels
