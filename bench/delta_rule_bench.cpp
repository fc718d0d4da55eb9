// The gated delta rule's two forms on one prefill of Qwen3.5-0.8B's linear-attention shape (512
// tokens, 16 value heads, dk = dv = 128): the recurrent contract (gated_delta_step, token by
// token, as the model runs it; built for baseline x86-64 like all of models/) and the chunked WY
// form (chunked_delta_rule) on each ISA's build of it, at chunks of 64 and, on AVX-512, 32 and
// 16. Counter: tokens/s through all 16 heads.
// Run: STRATA_THREADS=1 build/<dir>/bench/delta_rule_bench (the chunked form's heads run on the
// worker threads; the recurrent loop here is one thread).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "models/layers/chunked_delta_rule.h"
#include "models/layers/gated_delta_rule.h"

namespace {

using namespace strata;

constexpr int64_t kTokens = 512, kHeads = 16, kDk = 128, kDv = 128;

struct Inputs {
  std::vector<float> q, k, v, g, beta, state, out;
  Inputs() {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    for (auto* x : {&q, &k}) {
      x->resize(size_t(kTokens * kHeads * kDk));
      for (float& e : *x) e = normal(rng);
    }
    for (int64_t r = 0; r < kTokens * kHeads; ++r) models::prepare_delta_qk(&q[size_t(r * kDk)], &k[size_t(r * kDk)], kDk);
    v.resize(size_t(kTokens * kHeads * kDv));
    for (float& e : v) e = normal(rng);
    for (int64_t r = 0; r < kTokens * kHeads; ++r) {
      float gg, bb;
      models::delta_gates(2 * normal(rng), 2 * normal(rng), std::log(1 + 15 * unit(rng)), normal(rng), &gg, &bb);
      g.push_back(gg);
      beta.push_back(bb);
    }
    state.resize(size_t(kHeads * kDk * kDv));
    for (float& e : state) e = 0.3f * normal(rng);
    out.resize(size_t(kTokens * kHeads * kDv));
  }
};

Inputs& inputs() {
  static Inputs in;
  return in;
}

void finish(benchmark::State& st) {
  st.counters["tokens/s"] = benchmark::Counter(double(kTokens), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Recurrent(benchmark::State& st) {
  Inputs& in = inputs();
  std::vector<float> S = in.state;
  for (auto _ : st) {
    for (int64_t t = 0; t < kTokens; ++t)
      for (int64_t h = 0; h < kHeads; ++h) {
        const int64_t r = t * kHeads + h;
        float* s = S.data() + h * kDk * kDv;
        models::gated_delta_step(s, s, &in.q[size_t(r * kDk)], &in.k[size_t(r * kDk)], &in.v[size_t(r * kDv)],
                                 in.g[size_t(r)], in.beta[size_t(r)], kDk, kDv, &in.out[size_t(r * kDv)]);
      }
    benchmark::DoNotOptimize(in.out.data());
  }
  finish(st);
}

// range(0): the ISA (0 scalar, 1 AVX2, 2 AVX-512); range(1): the chunk size.
void BM_Chunked(benchmark::State& st) {
  const Isa isa = Isa(st.range(0));
  if (int(isa) > int(detected_isa())) {
    st.SkipWithError("the CPU lacks this ISA");
    return;
  }
  st.SetLabel(std::string(isa_name(isa)));
  Inputs& in = inputs();
  std::vector<float> S = in.state;
  for (auto _ : st) {
    models::chunked_delta_rule(isa, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), kTokens,
                               kHeads, kDk, kDv, S.data(), in.out.data(), st.range(1));
    benchmark::DoNotOptimize(in.out.data());
  }
  finish(st);
}

}  // namespace

BENCHMARK(BM_Recurrent)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Chunked)
    ->ArgsProduct({{0, 1, 2}, {64}})
    ->Args({2, 32})
    ->Args({2, 16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
