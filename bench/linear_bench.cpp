// Linear-layer throughput per weight format, from memory (weights rotate through copies that
// together exceed the last-level cache, as a decode step's weights do): weight GB/s and fp64
// multiply-adds per second, for one activation row (decode GEMV) and several (batched decode,
// verification, prefill). Shapes are V4-Flash's: routed expert w1 (2048 × 4096, FP4), attention
// wq_b (32768 × 1024, FP8), a prefill's widest FP8 product (4096 × 8192) and a narrow one
// (512 × 4096), the bf16 head slice (16384 × 4096), Qwen3.5-0.8B's
// bf16 gate/up projection (3584 × 1024, 7 MB: a small matrix read once a step; its L2 slice; a
// 32768-row slice of its tied head, against an fp32 activation), and two few-output products that
// prefill runs over many rows (mHC's f32 24 × 16384 mixes, the indexer's bf16 64 × 4096 head weights).
// The *L2 cases hold one copy that fits L2: the kernel's compute rate without the memory.
// Run: build/<dir>/bench/linear_bench [--benchmark_filter=...]; STRATA_THREADS sets threads,
// STRATA_NUMERICS=exact|fast the numerics profile (core/numerics.h).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/huge_buffer.h"
#include "core/numerics.h"
#include "core/numfmt.h"
#include "kernels/linear.h"
#include "kernels/quant.h"

namespace {

using strata::kernels::LinearWeight;
using strata::kernels::WeightFormat;

struct Copies {
  std::vector<std::vector<uint8_t>> data, scale;
  std::vector<LinearWeight> w;
  int64_t bytes = 0;
};

// cached: one copy (a shape that fits L2 measures the kernel's compute rate, not the memory's)
Copies make(WeightFormat f, int64_t out, int64_t in, bool cached) {
  Copies c;
  const int64_t wb = f == WeightFormat::fp4   ? out * in / 2
                     : f == WeightFormat::fp8 ? out * in
                     : f == WeightFormat::f32 ? out * in * 4
                                              : out * in * 2;
  const int64_t sb = f == WeightFormat::fp4 ? out * in / 32 : f == WeightFormat::fp8 ? ((out + 127) / 128) * (in / 128) : 0;
  const int copies = cached ? 1 : int(std::max<int64_t>(2, (int64_t(256) << 20) / wb));
  std::mt19937 rng(1);
  for (int i = 0; i < copies; ++i) {
    std::vector<uint8_t> d(static_cast<size_t>(wb)), s(static_cast<size_t>(sb));
    for (auto& b : d) b = uint8_t(rng() & 0x3F);  // finite codes, modest magnitudes
    if (f == WeightFormat::f32)  // finite values of either sign
      for (size_t k = 0; k < d.size(); k += 4) {
        const float v = float(int(rng() % 2001) - 1000) / 4096.0f;
        std::memcpy(&d[k], &v, 4);
      }
    for (auto& b : s) b = uint8_t(120 + rng() % 8);
    c.data.push_back(std::move(d));
    c.scale.push_back(std::move(s));
  }
  for (int i = 0; i < copies; ++i)
    c.w.push_back({f, c.data[size_t(i)].data(), sb ? c.scale[size_t(i)].data() : nullptr, out, in});
  c.bytes = wb + sb;
  return c;
}

// fp8_x: the activation FP8-quantized in 1 x 128 blocks, as the model's linear layers get it
// (the FP4 integer route needs that form; normal floats take the fp64 decoder). bf16_x: rounded
// to bf16, as Qwen3.5's projections get it (the fast profile's bf16 route).
void run(benchmark::State& st, WeightFormat f, int64_t out, int64_t in, bool fp8_x = false, bool cached = false,
         bool bf16_x = false) {
  const int64_t rows = st.range(0);
  static const bool profile_set = [] {
    if (auto n = strata::numerics_from_env()) strata::set_numerics(*n);
    return true;
  }();
  (void)profile_set;
  static Copies c;
  static WeightFormat made = WeightFormat::f32;
  static int64_t made_out = 0, made_in = 0;
  static bool made_cached = false;
  if (made_out != out || made_in != in || made != f || made_cached != cached)
    c = make(f, out, in, cached), made = f, made_out = out, made_in = in, made_cached = cached;
  std::vector<float> x(size_t(rows * in)), y(size_t(rows * out));
  std::mt19937 rng(2);
  std::normal_distribution<float> nd;
  for (auto& v : x) v = nd(rng);
  if (fp8_x) strata::kernels::quant_fp8(x.data(), rows * in, strata::kernels::kActBlock, x.data());
  if (bf16_x)
    for (auto& v : x) v = strata::round_bf16(v);
  size_t i = 0;
  for (auto _ : st) {
    strata::kernels::linear(c.w[i++ % c.w.size()], x.data(), rows, y.data(), true);
    benchmark::DoNotOptimize(y.data());
  }
  st.counters["weight_GB/s"] = benchmark::Counter(double(c.bytes), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GMAC/s"] = benchmark::Counter(double(out * in * rows) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// Activations of normal floats (not FP8-quantized): the FP4 integer route refuses them, and the
// fp64 decoder runs, one activation row at a time.
void BM_Fp4Expert(benchmark::State& st) { run(st, WeightFormat::fp4, 2048, 4096); }
// FP8-quantized activations, as the model's experts get them: the exact integer route, from
// memory and from L2 (256 rows, 512 KB: the route's compute rate alone).
void BM_Fp4ExpertInt(benchmark::State& st) { run(st, WeightFormat::fp4, 2048, 4096, true); }
void BM_Fp4ExpertIntL2(benchmark::State& st) { run(st, WeightFormat::fp4, 256, 4096, true, true); }
void BM_Fp8Wqb(benchmark::State& st) { run(st, WeightFormat::fp8, 32768, 1024); }
// FP8 wq_a's shape (1024 x 4096) from memory and a 128-row slice of it from L2
void BM_Fp8Wqa(benchmark::State& st) { run(st, WeightFormat::fp8, 1024, 4096); }
void BM_Fp8WqaL2(benchmark::State& st) { run(st, WeightFormat::fp8, 128, 4096, false, true); }
// A prefill's widest FP8 product (4096 x 8192) and a narrow one (512 x 4096), many rows
void BM_Fp8Wide(benchmark::State& st) { run(st, WeightFormat::fp8, 4096, 8192); }
void BM_Fp8Narrow(benchmark::State& st) { run(st, WeightFormat::fp8, 512, 4096); }
void BM_Bf16Head(benchmark::State& st) { run(st, WeightFormat::bf16, 16384, 4096); }
void BM_Bf16HeadL2(benchmark::State& st) { run(st, WeightFormat::bf16, 64, 4096, false, true); }
// Few outputs over many activation rows: mHC's 24 mixes of the flattened streams (f32, hc·d
// wide) and the indexer's head weights (bf16, 64 outputs), as a prefill runs them.
void BM_Bf16QwenGateUp(benchmark::State& st) { run(st, WeightFormat::bf16, 3584, 1024, false, false, true); }
void BM_Bf16QwenGateUpL2(benchmark::State& st) { run(st, WeightFormat::bf16, 256, 1024, false, true, true); }
// A slice of Qwen3.5-0.8B's tied head (248320 x 1024 bf16 against the fp32 final norm's output)
void BM_Bf16QwenHead(benchmark::State& st) { run(st, WeightFormat::bf16, 32768, 1024); }
void BM_F32HcMix(benchmark::State& st) { run(st, WeightFormat::f32, 24, 16384); }
void BM_Bf16IndexerHeads(benchmark::State& st) { run(st, WeightFormat::bf16, 64, 4096); }

}  // namespace

BENCHMARK(BM_Fp4Expert)->Arg(1)->Arg(2)->Arg(4)->Arg(16)->Arg(128)->UseRealTime();
BENCHMARK(BM_Fp4ExpertInt)->Arg(1)->Arg(2)->Arg(4)->Arg(6)->Arg(8)->Arg(12)->Arg(16)->Arg(64)->Arg(256)->UseRealTime();
BENCHMARK(BM_Fp4ExpertIntL2)->Arg(1)->Arg(4)->Arg(6)->Arg(8)->Arg(16)->Arg(256)->UseRealTime();
BENCHMARK(BM_Fp8Wqb)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Arg(16)->Arg(128)->UseRealTime();
BENCHMARK(BM_Fp8Wqa)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Arg(8)->Arg(16)->Arg(256)->UseRealTime();
BENCHMARK(BM_Fp8WqaL2)->Arg(1)->Arg(4)->Arg(16)->Arg(32)->Arg(256)->UseRealTime();
BENCHMARK(BM_Fp8Wide)->Arg(256)->UseRealTime();
BENCHMARK(BM_Fp8Narrow)->Arg(256)->UseRealTime();
BENCHMARK(BM_Bf16Head)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->Arg(128)->UseRealTime();
BENCHMARK(BM_Bf16HeadL2)->Arg(1)->Arg(4)->Arg(8)->Arg(32)->UseRealTime();
BENCHMARK(BM_Bf16QwenGateUp)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(64)->Arg(256)->UseRealTime();
BENCHMARK(BM_Bf16QwenGateUpL2)->Arg(1)->Arg(4)->UseRealTime();
BENCHMARK(BM_Bf16QwenHead)->Arg(1)->Arg(4)->UseRealTime();
BENCHMARK(BM_F32HcMix)->Arg(4)->Arg(64)->Arg(256)->Arg(512)->UseRealTime();
BENCHMARK(BM_Bf16IndexerHeads)->Arg(64)->Arg(512)->UseRealTime();

// Scratch as the strata binary gets it (cli/main.cpp): blocks below 32 MB reused from the heap,
// not mapped and faulted in afresh each call.
int main(int argc, char** argv) {
  mallopt(M_MMAP_THRESHOLD, int(strata::kHeapKeptBelow));
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
