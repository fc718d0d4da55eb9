// Cache entry unpacking (models/deepseek_v4/entry_codec.h), per entry: a V4 kv entry (584 B →
// 512 floats: every attended window / compressed entry) and an index key in both formats
// (132 / 68 B → 128 floats: every key a CSA layer's indexer scans), beside the indexer scan
// of the same keys (heads × keys canonical dots) that it feeds.
// Run: build/<dir>/bench/entry_codec_bench [--benchmark_filter=...].
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/numfmt.h"
#include "kernels/quant.h"
#include "models/deepseek_v4/compressor.h"
#include "models/deepseek_v4/indexer.h"

namespace {

using strata::dsv4::EntryCodec;
using strata::dsv4::IndexKeyFormat;

// n packed entries of fake-quantized noise, as the model stores them.
std::vector<uint8_t> entries(const EntryCodec& c, int64_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(c.head_dim));
  std::vector<uint8_t> out(static_cast<size_t>(n * c.bytes()));
  for (int64_t e = 0; e < n; ++e) {
    for (auto& v : x) v = nd(rng);
    if (c.kind == EntryCodec::Kind::kv) {
      strata::kernels::fake_quant_fp8(x.data(), c.head_dim - c.rope_dim, 64);
      for (int64_t i = c.head_dim - c.rope_dim; i < c.head_dim; ++i) x[size_t(i)] = strata::round_bf16(x[size_t(i)]);
    } else {
      strata::kernels::fake_quant_fp4(x.data(), c.head_dim, 32);
    }
    c.pack(x.data(), out.data() + e * c.bytes());
  }
  return out;
}

void unpack(benchmark::State& state, EntryCodec c) {
  const int64_t n = 32768;  // the index keys of a 128K context
  const auto packed = entries(c, n);
  std::vector<float> x(static_cast<size_t>(c.head_dim));
  int64_t e = 0;
  for (auto _ : state) {
    c.unpack(packed.data() + e * c.bytes(), x.data());
    benchmark::DoNotOptimize(x.data());
    e = (e + 1) % n;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(unpack, kv_entry_584B, EntryCodec::kv(512, 64));
BENCHMARK_CAPTURE(unpack, index_key_fp8_132B, EntryCodec::index(128, IndexKeyFormat::fp8));
BENCHMARK_CAPTURE(unpack, index_key_fp4_68B, EntryCodec::index(128, IndexKeyFormat::fp4));

// The whole indexer scan of a 128K context (32768 keys, V4-Flash's 64 heads), unpacking included.
void indexer_scan(benchmark::State& state, IndexKeyFormat f) {
  strata::dsv4::IndexerSpec s;
  s.heads = 64;
  s.head_dim = 128;
  strata::dsv4::CompressorState keys;
  keys.init(4, EntryCodec::index(128, f));
  const int64_t n = 32768;
  keys.entries.assign_bytes(entries(keys.codec, n));
  std::vector<float> q(static_cast<size_t>(s.heads * s.head_dim), 0.25f), w(static_cast<size_t>(s.heads), 0.5f);
  for (auto _ : state) benchmark::DoNotOptimize(strata::dsv4::indexer_scores(s, q.data(), w.data(), keys, n));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK_CAPTURE(indexer_scan, fp8_keys, IndexKeyFormat::fp8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(indexer_scan, fp4_keys, IndexKeyFormat::fp4)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
