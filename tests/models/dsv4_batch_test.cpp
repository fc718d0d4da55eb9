// forward_batch: sequences at different positions, stacked through one pass, give bitwise the
// logits and states that each gets alone (prefill chunks and decode steps mixed).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "models/dsv4_fixture.h"
#include "models/numerics_profiles.h"

namespace strata::dsv4 {
namespace {

class Dsv4BatchEveryProfile : public ::strata::testing::ProfileTest {};
STRATA_EVERY_PROFILE(Dsv4BatchEveryProfile);

std::vector<int64_t> ids(int64_t n, int64_t salt) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(7 + (i * 131 + salt * 977) % 120000);
  return v;
}

void expect_same_layer(const LayerState& a, const LayerState& b, const std::string& what) {
  EXPECT_EQ(a.ring, b.ring) << what;
  EXPECT_EQ(a.compressor.entries, b.compressor.entries) << what;
  EXPECT_EQ(a.compressor.kv, b.compressor.kv) << what;
  EXPECT_EQ(a.index_keys.entries, b.index_keys.entries) << what;
}

void expect_same_state(const SequenceState& a, const SequenceState& b) {
  ASSERT_EQ(a.pos, b.pos);
  for (size_t L = 0; L < a.layers.size(); ++L) expect_same_layer(a.layers[L], b.layers[L], "layer " + std::to_string(L));
}

TEST_P(Dsv4BatchEveryProfile, StackedSequencesEqualEachAlone) {
  testing::TinyModel tiny;
  const Model& m = *tiny.model;
  // Three sequences with different histories (one crosses the 128-token HCA block).
  std::vector<SequenceState> solo, batch;
  const std::vector<int64_t> warm = {0, 37, 126};
  for (size_t i = 0; i < warm.size(); ++i) {
    solo.push_back(m.new_state());
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

void expect_same_mtp(const SequenceState& a, const SequenceState& b, const std::string& what) {
  ASSERT_EQ(a.mtp_pos, b.mtp_pos) << what;
  for (size_t j = 0; j < a.mtp.size(); ++j) expect_same_layer(a.mtp[j], b.mtp[j], what + " mtp");
}

// The MTP block over stacked sequences (several rows for one, logits for some) equals
// mtp_forward / mtp_advance per sequence: logits, output streams and MTP states bitwise.
TEST_P(Dsv4BatchEveryProfile, StackedMtpEqualsEachAlone) {
  testing::TinyModel tiny;
  const Model& m = *tiny.model;
  ASSERT_EQ(m.n_mtp(), 1);
  const int64_t hcd = m.config().hc_mult * m.config().hidden_size;
  const std::vector<int64_t> warm = {3, 40, 130};
  std::vector<SequenceState> solo, batch;
  std::vector<std::vector<float>> hidden(warm.size());
  std::vector<std::vector<int64_t>> next(warm.size());
  for (size_t i = 0; i < warm.size(); ++i) {
    auto w = ids(warm[i] + 1, int64_t(i) + 5);
    solo.push_back(m.new_state());
    m.advance(solo.back(), w.data(), warm[i], &hidden[i]);
    next[i].assign(w.begin() + 1, w.end());
    batch.push_back(solo.back());
  }
  for (int step = 0; step < 2; ++step) {
    // step 0: the MTP catches up on every position (rows = warm[i]); step 1: one row each
    std::vector<Model::MtpItem> items;
    std::vector<std::vector<float>> h(warm.size());
    std::vector<std::vector<int64_t>> nx(warm.size());
    for (size_t i = 0; i < warm.size(); ++i) {
      const int64_t n = step == 0 ? warm[i] : 1;
      h[i].assign(hidden[i].end() - n * hcd, hidden[i].end());
      nx[i].assign(next[i].end() - n, next[i].end());
      if (step == 1) h[i] = hidden[i], h[i].resize(size_t(hcd)), nx[i] = {int64_t(11 + i)};
      Model::MtpItem it;
      it.state = &batch[i];
      it.hidden = h[i].data();
      it.next_ids = nx[i].data();
      it.n = n;
      it.logits = i != 1 || step == 1;
      items.push_back(std::move(it));
    }
    m.mtp_forward_batch(items);
    for (size_t i = 0; i < warm.size(); ++i) {
      const std::string what = "step " + std::to_string(step) + " seq " + std::to_string(i);
      std::vector<float> streams;
      if (items[i].logits) {
        auto logits = m.mtp_forward(solo[i], h[i].data(), nx[i].data(), items[i].n, 0, nullptr, &streams);
        EXPECT_EQ(items[i].out, logits) << what;
      } else {
        streams = m.mtp_advance(solo[i], h[i].data(), nx[i].data(), items[i].n);
        EXPECT_TRUE(items[i].out.empty()) << what;
      }
      EXPECT_EQ(items[i].streams, streams) << what;
      expect_same_mtp(solo[i], batch[i], what);
    }
  }
  // an id outside the vocabulary in any item: an error, and no state moves
  const auto before = batch;
  std::vector<float> h(size_t(hcd), 0.5f);
  const std::vector<int64_t> good = {1}, bad = {m.config().vocab_size};
  std::vector<Model::MtpItem> items(2);
  items[0].state = &batch[0], items[0].hidden = h.data(), items[0].next_ids = good.data(), items[0].n = 1;
  items[1].state = &batch[1], items[1].hidden = h.data(), items[1].next_ids = bad.data(), items[1].n = 1;
  EXPECT_THROW(m.mtp_forward_batch(items), Error);
  for (size_t i = 0; i < 2; ++i) expect_same_mtp(batch[i], before[i], "after the error");
  items[1].state = &batch[0], items[1].next_ids = good.data();
  EXPECT_THROW(m.mtp_forward_batch(items), Error);  // a sequence twice
}

}  // namespace
}  // namespace strata::dsv4
