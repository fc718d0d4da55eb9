// Cache entries in their storage formats (entry_codec.h): lossless for every value the forward
// pass can store, sized as the ledger says, and a state holds exactly the ledger's bytes.
#include "models/deepseek_v4/entry_codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/quant.h"
#include "models/deepseek_v4/cache_layout.h"
#include "models/dsv4_fixture.h"

namespace strata::dsv4 {
namespace {

// bf16 noise whose magnitude jumps by up to 2^±20 from one 32-value block to the next (one
// f32 scale per entry could not hold these exactly; one e8m0 per block can).
std::vector<float> wide_noise(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::uniform_int_distribution<int> ex(-20, 20);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t b = 0; b < n; b += 32) {
    const float s = std::ldexp(1.0f, ex(rng));
    for (int64_t i = b; i < std::min(n, b + 32); ++i) x[size_t(i)] = round_bf16(nd(rng) * s);
  }
  return x;
}

void expect_round_trip(const EntryCodec& c, const std::vector<float>& x) {
  std::vector<uint8_t> packed(size_t(c.bytes()));
  std::vector<float> back(x.size());
  c.pack(x.data(), packed.data());
  c.unpack(packed.data(), back.data());
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(x[i])) << i << ": " << x[i] << " vs " << back[i];
}

TEST(Dsv4EntryCodec, SizesAreTheLedgersFormats) {
  EXPECT_EQ(EntryCodec::kv(512, 64).bytes(), 584);  // 448 e4m3 + 7 e8m0 + pad + 64 bf16
  EXPECT_EQ(EntryCodec::index(128, IndexKeyFormat::fp8).bytes(), 132);
  EXPECT_EQ(EntryCodec::index(128, IndexKeyFormat::fp4).bytes(), 68);
}

TEST(Dsv4EntryCodec, KvEntriesRoundTripBitwise) {
  const EntryCodec c = EntryCodec::kv(512, 64);
  for (uint32_t seed = 0; seed < 50; ++seed) {
    auto x = wide_noise(512, seed);
    kernels::fake_quant_fp8(x.data(), 448, 64);  // what finish_window_entry / the compressor store
    if (seed == 1) std::fill(x.begin(), x.begin() + 64, 0.0f);  // an all-zero block
    if (seed == 2) x[5] = -0.0f, x[500] = -0.0f;                 // signed zeros survive
    if (seed == 3) std::fill(x.begin() + 64, x.begin() + 128, 1e-7f), kernels::fake_quant_fp8(x.data(), 448, 64);
    expect_round_trip(c, x);
  }
}

TEST(Dsv4EntryCodec, IndexKeysRoundTripBitwiseInBothFormats) {
  for (IndexKeyFormat f : {IndexKeyFormat::fp8, IndexKeyFormat::fp4}) {
    const EntryCodec c = EntryCodec::index(128, f);
    for (uint32_t seed = 0; seed < 50; ++seed) {
      auto x = wide_noise(128, 100 + seed);
      kernels::fake_quant_fp4(x.data(), 128, 32);  // the indexer compressor's keys
      expect_round_trip(c, x);
    }
  }
}

TEST(Dsv4EntryCodec, ValuesTheForwardPassCannotMakeAreRejected) {
  std::vector<uint8_t> out(584);
  std::vector<float> x(512, 0.0f);
  x[3] = 0.1f;  // not an e4m3 code times its block's power of two (0.1 is not FP8-quantized)
  EXPECT_THROW(EntryCodec::kv(512, 64).pack(x.data(), out.data()), Error);
  x[3] = 0.0f;
  x[460] = 1.0f + 1.0f / 1024;  // a RoPE dim that is not bf16
  EXPECT_THROW(EntryCodec::kv(512, 64).pack(x.data(), out.data()), Error);
  std::vector<float> k(128, 0.0f);
  k[0] = 2.5f;  // not an e2m1 value under any power of two shared with 3.0
  k[1] = 3.0f;
  EXPECT_THROW(EntryCodec::index(128, IndexKeyFormat::fp4).pack(k.data(), out.data()), Error);
}

// The bytes a sequence state holds (window ring, compressed entries, index keys, compressor
// slots) equal the ledger's exact prediction for its context, in both index-key formats.
int64_t held_bytes(const CompressorState& c) {
  return c.entries.bytes() + int64_t(c.kv.size() + c.score.size()) * int64_t(sizeof(float));
}

TEST(Dsv4EntryCodec, StateHoldsTheLedgersBytes) {
  testing::TinyModel tm;
  const Config& cfg = tm.model->config();
  std::vector<int64_t> ids(300);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(i * 7 % size_t(cfg.vocab_size));
  for (IndexKeyFormat f : {IndexKeyFormat::fp8, IndexKeyFormat::fp4}) {
    SequenceState st = tm.model->new_state(f);
    tm.model->prefill(st, ids);
    int64_t held = 0;
    for (const auto& L : st.layers) held += int64_t(L.ring.size()) + held_bytes(L.compressor) + held_bytes(L.index_keys);
    CacheLayoutOptions o;
    o.index_keys = f;
    EXPECT_EQ(held, cache_layout(cfg, o).bytes_exact(st.pos)) << (f == IndexKeyFormat::fp4 ? "fp4" : "fp8");
  }
}

// The index-key format changes storage only: logits are bitwise the same.
TEST(Dsv4EntryCodec, IndexKeyFormatLeavesLogitsUnchanged) {
  testing::TinyModel tm;
  std::vector<int64_t> ids(200);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t((i * 13 + 5) % size_t(tm.model->config().vocab_size));
  SequenceState a = tm.model->new_state(IndexKeyFormat::fp8), b = tm.model->new_state(IndexKeyFormat::fp4);
  auto la = tm.model->prefill(a, ids), lb = tm.model->prefill(b, ids);
  ASSERT_EQ(la.size(), lb.size());
  EXPECT_EQ(0, std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)));
  la = tm.model->decode(a, 11), lb = tm.model->decode(b, 11);
  EXPECT_EQ(0, std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)));
}

}  // namespace
}  // namespace strata::dsv4
