// The long-context benchmark's synthetic state has the shape of a real one at that position
// (ring full, pos/ratio entries, pos/4 index keys) and decodes to finite logits; and the
// indexer's chunked scoring (keys in the weight role of one product per 2048 keys) equals the
// per-key definition bit for bit across chunk boundaries.
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

}  // namespace
}  // namespace strata::dsv4
