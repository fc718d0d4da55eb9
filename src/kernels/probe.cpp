#include "kernels/probe.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "core/cpu.h"
#include "kernels/probe_impl.h"

namespace strata::kernels {
namespace {

using clock_t_ = std::chrono::steady_clock;

// Runs body(thread, iterations) on `threads` threads; returns seconds of the slowest thread.
double timed(int threads, const std::function<void(int, uint64_t)>& body, uint64_t iters) {
  std::vector<std::thread> ts;
  std::vector<double> secs(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      auto a = clock_t_::now();
      body(t, iters);
      secs[size_t(t)] = std::chrono::duration<double>(clock_t_::now() - a).count();
    });
  for (auto& t : ts) t.join();
  return *std::max_element(secs.begin(), secs.end());
}

// Calibrates the iteration count to about `seconds`, then returns work/second of the best of 3.
double rate(int threads, double seconds, double work_per_iter_per_thread, const std::function<void(int, uint64_t)>& body) {
  uint64_t iters = 1;
  double s = 0;
  while ((s = timed(threads, body, iters)) < seconds / 8) iters *= 2;
  iters = std::max<uint64_t>(1, uint64_t(double(iters) * seconds / 3 / s));
  double best = 0;
  for (int k = 0; k < 3; ++k) best = std::max(best, work_per_iter_per_thread * double(iters) * threads / timed(threads, body, iters));
  return best;
}

}  // namespace

ProbeResult probe_read_bandwidth(size_t bytes, int threads, double seconds) {
  bytes = bytes / (64 * size_t(threads)) * 64 * size_t(threads);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return {0, "mmap failed"};
  ::madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 1, bytes);  // populate every page before timing
  const size_t per = bytes / size_t(threads);
  const bool simd = active_isa() == Isa::avx512;
  volatile uint64_t sink = 0;
  double r = rate(threads, seconds, double(per), [&](int t, uint64_t iters) {
    const uint8_t* base = static_cast<const uint8_t*>(p) + per * size_t(t);
    uint64_t s = 0;
    for (uint64_t i = 0; i < iters; ++i) s += simd ? avx512::sum_bytes(base, per) : scalar::sum_bytes(base, per);
    sink += s;
  });
  ::munmap(p, bytes);
  return {r / 1e9, simd ? "avx512 streaming sum" : "scalar streaming sum"};
}

namespace {
// A register-only loop's rate on AVX-512, or the scalar fp32 FMA loop where AVX-512 is not active.
ProbeResult peak(int threads, double seconds, double work_per_iter, void (*loop)(uint64_t), const char* method,
                 const char* fallback) {
  if (active_isa() != Isa::avx512) {
    double r = rate(threads, seconds, scalar::kFmaFlopsPerIter, [](int, uint64_t n) { scalar::fma_loop(n); });
    return {r / 1e9, fallback};
  }
  double r = rate(threads, seconds, work_per_iter, [loop](int, uint64_t n) { loop(n); });
  return {r / 1e9, method};
}
}  // namespace

ProbeResult probe_bf16_peak(int threads, double seconds) {
  return peak(threads, seconds, avx512::kBf16FlopsPerIter, avx512::bf16_dot_loop, "vdpbf16ps zmm",
              "fp32 fma (no AVX512-BF16)");
}

ProbeResult probe_int8_peak(int threads, double seconds) {
  return peak(threads, seconds, avx512::kInt8OpsPerIter, avx512::int8_dot_loop, "vpdpbusd zmm",
              "fp32 fma (no AVX512-VNNI)");
}

ProbeResult probe_fp64_peak(int threads, double seconds) {
  return peak(threads, seconds, avx512::kFp64FlopsPerIter, avx512::fp64_fma_loop, "vfmadd231pd zmm",
              "fp32 fma (no AVX-512)");
}

}  // namespace strata::kernels
