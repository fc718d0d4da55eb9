// The long-context benchmark's synthetic state has the shape of a real one at that position
// (ring full, pos/ratio entries, pos/4 index keys) and decodes to finite logits; and the
// indexer's chunked scoring (keys in the weight role of one product per 2048 keys) equals the
// per-key definition bit for bit across chunk boundaries, in a scratch of any number of parts.
#include "models/deepseek_v4/synthetic_state.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/dot.h"
#include "kernels/quant.h"
#include "models/deepseek_v4/indexer.h"
#include "models/deepseek_v4/indexer_scratch.h"
#include "models/dsv4_fixture.h"

namespace strata::dsv4 {
namespace {

TEST(Dsv4SyntheticState, ShapedLikeAStateAtThatPosition) {
  testing::TinyModel tm;
  const int64_t pos = 1024;
  SequenceState st = synthetic_state(*tm.model, pos, 5);
  EXPECT_EQ(st.pos, pos);
  std::vector<float> e(size_t(tm.model->config().head_dim));
  for (const auto& L : st.layers) {
    for (int64_t p = 0; p < L.window; ++p) {
      L.codec.unpack(L.window_entry(p), e.data());
      for (float v : e) ASSERT_TRUE(std::isfinite(v));
    }
    if (L.compressor.ratio > 0) EXPECT_EQ(L.compressor.n_entries(), pos / L.compressor.ratio);
    if (L.index_keys.ratio > 0) EXPECT_EQ(L.index_keys.n_entries(), pos / 4);
  }
  auto logits = tm.model->decode(st, 3);
  EXPECT_EQ(st.pos, pos + 1);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  EXPECT_THROW(synthetic_state(*tm.model, 1000, 5), Error);
}

TEST(Dsv4Indexer, ChunkedScoresEqualPerKeyDefinition) {
  IndexerSpec s;
  s.heads = 8;
  s.head_dim = 128;
  CompressorState keys;
  keys.init(4, EntryCodec::index(s.head_dim, IndexKeyFormat::fp8));
  const int64_t n = 4100;  // three chunks of 2048, the last partial
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> kf(size_t(n * s.head_dim));
  for (auto& v : kf) v = round_bf16(nd(rng));
  kernels::fake_quant_fp4(kf.data(), n * s.head_dim, 32);  // as the indexer's compressor leaves them
  for (int64_t t = 0; t < n; ++t) keys.codec.pack(kf.data() + t * s.head_dim, keys.entries.append());
  std::vector<float> q(size_t(s.heads * s.head_dim)), w(size_t(s.heads));
  for (auto& v : q) v = round_bf16(nd(rng));
  for (auto& v : w) v = round_bf16(nd(rng));
  auto got = indexer_scores(s, q.data(), w.data(), keys, n);
  ASSERT_EQ(int64_t(got.size()), n);
  for (int64_t t = 0; t < n; ++t) {
    float acc = 0.0f;
    for (int64_t h = 0; h < s.heads; ++h) {
      const float z = round_bf16(kernels::dot(q.data() + h * s.head_dim, kf.data() + t * s.head_dim, s.head_dim));
      acc += round_bf16(std::max(z, 0.0f) * w[size_t(h)]);
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(got[size_t(t)]), std::bit_cast<uint32_t>(round_bf16(acc))) << t;
  }
}

// The scratch's parts (one per thread) split the keys; every split gives the same scores, on
// both paths (FP4 queries: integer products straight from FP8 or FP4 key codes; other queries:
// keys unpacked, canonical dots), and the selection is the same. A scratch too small for the
// query, or shaped for other heads, is refused with an error, not overrun.
TEST(Dsv4Indexer, ScratchPartsSplitTheKeysWithoutChangingAScore) {
  IndexerSpec s;
  s.heads = 8;
  s.head_dim = 128;
  s.topk = 64;
  std::mt19937 rng(4);
  std::normal_distribution<float> nd;
  for (IndexKeyFormat f : {IndexKeyFormat::fp8, IndexKeyFormat::fp4}) {
    CompressorState keys;
    keys.init(4, EntryCodec::index(s.head_dim, f));
    const int64_t n = 4100;
    std::vector<float> kf(size_t(n * s.head_dim));
    for (auto& v : kf) v = round_bf16(nd(rng));
    kernels::fake_quant_fp4(kf.data(), n * s.head_dim, 32);
    for (int64_t t = 0; t < n; ++t) keys.codec.pack(kf.data() + t * s.head_dim, keys.entries.append());
    std::vector<float> w(size_t(s.heads));
    for (auto& v : w) v = round_bf16(nd(rng));
    for (bool fp4_queries : {true, false}) {
      std::vector<float> q(size_t(s.heads * s.head_dim));
      for (auto& v : q) v = round_bf16(nd(rng));
      if (fp4_queries) kernels::fake_quant_fp4(q.data(), int64_t(q.size()), 32);
      for (int64_t visible : {int64_t(37), int64_t(700), n}) {
        const std::vector<float> want = indexer_scores(s, q.data(), w.data(), keys, visible);
        const auto want_sel = indexer_select(s, q.data(), w.data(), keys, visible);
        for (int64_t parts : {1, 2, 3}) {
          IndexerScratch scratch(s.heads, s.head_dim, n, parts);
          const float* got = indexer_scores(s, q.data(), w.data(), keys, visible, scratch);
          for (int64_t t = 0; t < visible; ++t)
            ASSERT_EQ(std::bit_cast<uint32_t>(got[t]), std::bit_cast<uint32_t>(want[size_t(t)]))
                << "parts " << parts << " visible " << visible << " key " << t << " fp4 queries " << fp4_queries;
          EXPECT_EQ(indexer_select(s, q.data(), w.data(), keys, visible, &scratch), want_sel);
        }
      }
      IndexerScratch small(s.heads, s.head_dim, 100, 2);
      EXPECT_THROW(indexer_scores(s, q.data(), w.data(), keys, 101, small), Error);
      IndexerScratch other_heads(s.heads * 2, s.head_dim, n, 2);
      EXPECT_THROW(indexer_scores(s, q.data(), w.data(), keys, 50, other_heads), Error);
    }
  }
}

// A view needs room for its whole layout, 64-byte aligned; its regions do not overlap.
TEST(Dsv4Indexer, ScratchViewChecksItsMemory) {
  const int64_t heads = 4, dim = 128, visible = 1000, parts = 3;
  const int64_t bytes = IndexerScratch::bytes_for(heads, dim, visible, parts);
  kernels::AlignedBuffer<uint8_t> mem(size_t(bytes + 64));
  EXPECT_THROW(IndexerScratch(mem.data(), bytes - 1, heads, dim, visible, parts), Error);
  EXPECT_THROW(IndexerScratch(mem.data() + 8, bytes, heads, dim, visible, parts), Error);
  IndexerScratch v(mem.data(), bytes, heads, dim, visible, parts);
  std::vector<std::pair<const uint8_t*, int64_t>> regions = {
      {reinterpret_cast<const uint8_t*>(v.scores()), visible * 4},
      {reinterpret_cast<const uint8_t*>(v.unpacked()), IndexerScratch::kChunk * dim * 4}};
  for (int64_t p = 0; p < parts; ++p) {
    regions.push_back({reinterpret_cast<const uint8_t*>(v.products(p)), heads * IndexerScratch::kChunk * 4});
    regions.push_back({reinterpret_cast<const uint8_t*>(v.keys(p)), IndexerScratch::kChunk * 8});
  }
  for (size_t i = 0; i < regions.size(); ++i) {
    EXPECT_GE(regions[i].first, mem.data());
    EXPECT_LE(regions[i].first + regions[i].second, mem.data() + bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(regions[i].first) % 64, 0u);
    for (size_t j = 0; j < i; ++j)
      EXPECT_TRUE(regions[i].first + regions[i].second <= regions[j].first ||
                  regions[j].first + regions[j].second <= regions[i].first)
          << i << " overlaps " << j;
  }
}

}  // namespace
}  // namespace strata::dsv4
