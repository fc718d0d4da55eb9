#include "kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace strata::kernels {

namespace {
std::atomic<int> g_threads{0};
int default_threads() {
  if (const char* e = std::getenv("STRATA_THREADS")) {
    int v = std::atoi(e);
    if (v > 0) return v;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}
}  // namespace

int num_threads() {
  int t = g_threads.load();
  if (t <= 0) {
    t = default_threads();
    g_threads.store(t);
  }
  return t;
}

void set_num_threads(int n) { g_threads.store(n > 0 ? n : int(std::max(1u, std::thread::hardware_concurrency()))); }

void parallel_for(int64_t n, int64_t min_per_thread, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int64_t t = std::min<int64_t>(num_threads(), n / std::max<int64_t>(1, min_per_thread));
  if (t <= 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> workers;
  const int64_t chunk = (n + t - 1) / t;
  for (int64_t i = 1; i < t; ++i) {
    int64_t b = i * chunk, e = std::min(n, b + chunk);
    if (b < e) workers.emplace_back([&fn, b, e] { fn(b, e); });
  }
  fn(0, std::min(n, chunk));
  for (auto& w : workers) w.join();
}

}  // namespace strata::kernels
