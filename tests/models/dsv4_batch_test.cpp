// forward_batch: sequences at different positions, stacked through one pass, give bitwise the
// logits and states that each gets alone (prefill chunks and decode steps mixed).
#include <gtest/gtest.h>

#include "core/error.h"
#include "models/dsv4_fixture.h"

namespace strata::dsv4 {
namespace {

std::vector<int64_t> ids(int64_t n, int64_t salt) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(7 + (i * 131 + salt * 977) % 120000);
  return v;
}

void expect_same_state(const SequenceState& a, const SequenceState& b) {
  ASSERT_EQ(a.pos, b.pos);
  for (size_t L = 0; L < a.layers.size(); ++L) {
    EXPECT_EQ(a.layers[L].ring, b.layers[L].ring) << L;
    EXPECT_EQ(a.layers[L].compressor.entries, b.layers[L].compressor.entries) << L;
    EXPECT_EQ(a.layers[L].compressor.kv, b.layers[L].compressor.kv) << L;
    EXPECT_EQ(a.layers[L].index_keys.entries, b.layers[L].index_keys.entries) << L;
  }
}

TEST(Dsv4Batch, StackedSequencesEqualEachAlone) {
  testing::TinyModel tiny;
  const Model& m = *tiny.model;
  // Three sequences with different histories (one crosses the 128-token HCA block).
  std::vector<SequenceState> solo, batch;
  const std::vector<int64_t> warm = {0, 37, 126};
  for (size_t i = 0; i < warm.size(); ++i) {
    solo.push_back(m.new_sequence());
    if (warm[i]) {
      auto w = ids(warm[i], int64_t(i));
      m.advance(solo.back(), w.data(), warm[i]);
    }
    batch.push_back(solo.back());
  }
  for (int step = 0; step < 3; ++step) {
    const std::vector<int64_t> n = {step == 0 ? 20 : 1, 1, step == 1 ? 9 : 1};
    std::vector<std::vector<int64_t>> chunk;
    std::vector<Model::BatchItem> items;
    for (size_t i = 0; i < solo.size(); ++i) chunk.push_back(ids(n[i], 100 * step + int64_t(i)));
    for (size_t i = 0; i < solo.size(); ++i)
      items.push_back({&batch[i], chunk[i].data(), n[i], i != 1 || step == 2, {}});
    m.forward_batch(items);
    for (size_t i = 0; i < solo.size(); ++i) {
      auto logits = m.forward(solo[i], chunk[i].data(), n[i]);
      if (items[i].logits) EXPECT_EQ(items[i].out, logits) << "step " << step << " seq " << i;
      expect_same_state(solo[i], batch[i]);
    }
  }
  const std::vector<int64_t> one = ids(1, 0);  // must outlive the items that point into it
  std::vector<Model::BatchItem> dup = {{&batch[0], one.data(), 1, false, {}}, {&batch[0], one.data(), 1, false, {}}};
  EXPECT_THROW(m.forward_batch(dup), Error);
}

}  // namespace
}  // namespace strata::dsv4
