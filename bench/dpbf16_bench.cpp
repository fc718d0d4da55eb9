// vdpbf16ps against its emulations (kernels/dpbf16.h): dpbf16_accumulate on 64 lanes (4 AVX-512
// accumulators, 8 AVX2 ones) over 64 steps of bf16 pairs (16 KB per operand, L1-resident), ordinary
// values (no Inf/NaN, nothing at 2^-126: the AVX2 emulation's vector path throughout).
// Counter: bf16 products per second (a lane-step is 2, each product 2 flops). Beside them, for
// scale, the exact profile's canonical fp64 dot (kernels/dot.h) on each ISA over as many products.
// Run: build/<dir>/bench/dpbf16_bench (one thread).
#include <benchmark/benchmark.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/cpu.h"
#include "kernels/dot.h"
#include "kernels/dpbf16.h"

namespace {

using namespace strata;

constexpr int64_t kLanes = 64, kSteps = 64;

struct Inputs {
  std::vector<uint16_t> a, b;
  std::vector<float> acc;
  Inputs() : a(size_t(2 * kLanes * kSteps)), b(a.size()), acc(size_t(kLanes)) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    for (size_t k = 0; k < a.size(); ++k) {
      a[k] = uint16_t(std::bit_cast<uint32_t>(nd(rng)) >> 16);
      b[k] = uint16_t(std::bit_cast<uint32_t>(nd(rng)) >> 16);
    }
  }
};

// range(0): the ISA (0 the scalar emulation, 1 the AVX2 one, 2 the instruction).
void BM_Dpbf16Accumulate(benchmark::State& st) {
  const Isa isa = Isa(st.range(0));
  if (int(isa) > int(detected_isa())) {
    st.SkipWithError("the CPU lacks this ISA");
    return;
  }
  st.SetLabel(std::string(isa_name(isa)));
  static Inputs in;
  const kernels::Dpbf16AccumulateFn f = kernels::dpbf16_accumulate_fn(isa);
  for (auto _ : st) {
    f(in.acc.data(), in.a.data(), in.b.data(), kLanes, kSteps);
    benchmark::DoNotOptimize(in.acc.data());
  }
  st.counters["products/s"] = benchmark::Counter(double(2 * kLanes * kSteps), benchmark::Counter::kIsIterationInvariantRate);
}

// range(0): the ISA; the same number of products as above, fp32 inputs.
void BM_ExactDot(benchmark::State& st) {
  const Isa isa = Isa(st.range(0));
  if (int(isa) > int(detected_isa())) {
    st.SkipWithError("the CPU lacks this ISA");
    return;
  }
  st.SetLabel(std::string(isa_name(isa)));
  constexpr int64_t n = 2 * kLanes * kSteps;
  static const std::vector<float> x = [] {
    std::mt19937 rng(2);
    std::normal_distribution<float> nd;
    std::vector<float> v(size_t(2 * n));
    for (float& e : v) e = nd(rng);
    return v;
  }();
  const kernels::DotFn f = kernels::dot_fn(isa);
  for (auto _ : st) benchmark::DoNotOptimize(f(x.data(), x.data() + n, n));
  st.counters["products/s"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_Dpbf16Accumulate)->DenseRange(0, 2);
BENCHMARK(BM_ExactDot)->DenseRange(0, 2);

BENCHMARK_MAIN();
