// Model-level invariants of the DeepSeek-V4 forward pass that need no goldens, on a random
// flash-tiny checkpoint (window layers 0-1, CSA 2 and 4, HCA 3 and 5, hash layers 0-2,
// index_topk 32, window 128):
//  * prefill all at once, token by token, and in uneven chunks give bitwise-identical logits
//    (the attention entry order and every reduction order are fixed by design);
//  * logits do not depend on the thread count (bitwise);
//  * out-of-vocab ids and sequences past max_position_embeddings throw strata::Error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "kernels/parallel.h"
#include "models/dsv4_fixture.h"
#include "models/numerics_profiles.h"

namespace strata::dsv4 {
namespace {

class Dsv4ForwardEveryProfile : public ::strata::testing::ProfileTest {};
STRATA_EVERY_PROFILE(Dsv4ForwardEveryProfile);

testing::TinyModel& tiny() {
  static testing::TinyModel m;
  return m;
}

std::vector<int64_t> random_ids(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (auto& i : ids) i = int64_t(rng() % uint32_t(vocab));
  return ids;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// 300 tokens: the 128-window wraps, HCA entries appear (ratio 128, from token 127 on) and the
// CSA indexer becomes selective (more than index_topk = 32 visible entries from token 131 on).
constexpr int64_t kLen = 300;

TEST_P(Dsv4ForwardEveryProfile, PrefillChunksAndDecodeAgreeBitwise) {
  Model& m = *tiny().model;
  auto ids = random_ids(kLen, m.config().vocab_size, 1);

  SequenceState a = m.new_state();
  std::vector<float> all = m.prefill(a, ids);
  ASSERT_EQ(int64_t(all.size()), m.config().vocab_size);
  for (float v : all) ASSERT_TRUE(std::isfinite(v));

  SequenceState b = m.new_state();
  for (int64_t i = 0; i + 1 < kLen; ++i) m.advance(b, &ids[size_t(i)], 1);  // decode steps, logits skipped
  std::vector<float> one = m.decode(b, ids.back());
  EXPECT_TRUE(same_bits(all, one)) << "token-by-token decode differs from one prefill";

  SequenceState c = m.new_state();
  std::vector<float> chunked;
  const int64_t cuts[] = {0, 5, 131, 132, 260, kLen};
  for (int i = 0; i + 1 < 6; ++i) chunked = m.forward(c, ids.data() + cuts[i], cuts[i + 1] - cuts[i]);
  // Decode logits at an intermediate step equal the prefill's at that length.
  SequenceState d = m.new_state();
  m.advance(d, ids.data(), 139);
  auto step = m.decode(d, ids[139]);
  SequenceState e = m.new_state();
  EXPECT_TRUE(same_bits(step, m.forward(e, ids.data(), 140)));
  EXPECT_TRUE(same_bits(all, chunked)) << "chunked prefill differs from one prefill";
  EXPECT_EQ(a.pos, kLen);
  EXPECT_EQ(c.pos, kLen);

  // The states agree too: compressed entries and index keys of every layer, bit for bit.
  for (size_t L = 0; L < a.layers.size(); ++L) {
    EXPECT_EQ(a.layers[L].compressor.entries, b.layers[L].compressor.entries) << "layer " << L;
    EXPECT_EQ(a.layers[L].index_keys.entries, b.layers[L].index_keys.entries) << "layer " << L;
    EXPECT_EQ(a.layers[L].ring, b.layers[L].ring) << "layer " << L;
  }
  EXPECT_EQ(a.layers[3].compressor.n_entries(), kLen / 128);
  EXPECT_EQ(a.layers[2].compressor.n_entries(), kLen / 4);
  EXPECT_EQ(a.layers[2].index_keys.n_entries(), kLen / 4);
}

TEST_P(Dsv4ForwardEveryProfile, LogitsDoNotDependOnThreadCount) {
  Model& m = *tiny().model;
  auto ids = random_ids(140, m.config().vocab_size, 2);
  kernels::set_num_threads(1);
  SequenceState a = m.new_state();
  auto one = m.prefill(a, ids);
  kernels::set_num_threads(3);
  SequenceState b = m.new_state();
  auto three = m.prefill(b, ids);
  kernels::set_num_threads(0);
  EXPECT_TRUE(same_bits(one, three));
}

TEST(Dsv4Forward, LogitsAreNotDegenerate) {
  Model& m = *tiny().model;
  SequenceState st = m.new_state();
  auto lg = m.prefill(st, random_ids(16, m.config().vocab_size, 3));
  double mean = 0, var = 0;
  for (float v : lg) mean += v;
  mean /= double(lg.size());
  for (float v : lg) var += (v - mean) * (v - mean);
  EXPECT_GT(std::sqrt(var / double(lg.size())), 0.1);
  // A different next token changes the logits.
  SequenceState s2 = m.new_state();
  auto a = m.prefill(s2, {1, 2, 3});
  SequenceState s3 = m.new_state();
  auto b = m.prefill(s3, {1, 2, 4});
  EXPECT_FALSE(same_bits(a, b));
}

TEST_P(Dsv4ForwardEveryProfile, MtpChunkedEqualsStepByStep) {
  Model& m = *tiny().model;
  ASSERT_EQ(m.n_mtp(), 1);
  auto ids = random_ids(41, m.config().vocab_size, 4);
  // MTP at position t reads the main streams of token t and the id of token t+1.
  SequenceState a = m.new_state();
  std::vector<float> h;
  m.advance(a, ids.data(), 40, &h);
  auto all = m.mtp_forward(a, h.data(), ids.data() + 1, 40);
  SequenceState b = m.new_state();
  std::vector<float> one;
  for (int64_t t = 0; t < 40; ++t) {
    std::vector<float> ht;
    m.advance(b, &ids[size_t(t)], 1, &ht);
    one = m.mtp_forward(b, ht.data(), &ids[size_t(t + 1)], 1);
  }
  EXPECT_TRUE(same_bits(all, one));
  EXPECT_EQ(a.mtp_pos[0], 40);
  for (float v : all) ASSERT_TRUE(std::isfinite(v));
  EXPECT_THROW(m.mtp_forward(a, h.data(), ids.data(), 1, 1), Error);
}

TEST(Dsv4Forward, RejectsBadInputs) {
  Model& m = *tiny().model;
  SequenceState st = m.new_state();
  const int64_t V = m.config().vocab_size;
  EXPECT_THROW(m.prefill(st, {1, V}), Error);
  EXPECT_THROW(m.prefill(st, {-1}), Error);
  EXPECT_THROW(m.forward(st, nullptr, 0), Error);
  EXPECT_EQ(st.pos, 0) << "a rejected call must leave the state alone";
  st.pos = m.max_positions() - 1;
  EXPECT_THROW(m.prefill(st, {1, 2}), Error);
}

}  // namespace
}  // namespace strata::dsv4

namespace strata::dsv4 {
namespace {

// The fast profile really changes the sums (fp32 in a fixed order instead of exact), and the
// logits stay near the exact ones: the spread printed is what the tolerance stands on.
TEST(Dsv4Forward, FastProfileDiffersFromExactAndStaysClose) {
  Model& m = *tiny().model;
  auto ids = random_ids(40, m.config().vocab_size, 5);
  std::vector<float> exact, fast;
  {
    ScopedNumerics p(Numerics::exact);
    SequenceState s = m.new_state();
    exact = m.prefill(s, ids);
  }
  {
    ScopedNumerics p(Numerics::fast);
    SequenceState s = m.new_state();
    fast = m.prefill(s, ids);
  }
  ASSERT_EQ(exact.size(), fast.size());
  double worst = 0, rms = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    worst = std::max(worst, double(std::fabs(exact[i] - fast[i])));
    rms += double(exact[i]) * exact[i];
  }
  rms = std::sqrt(rms / double(exact.size()));
  std::printf("fast vs exact, 40-token prefill: max |dlogit| %.4g (logit rms %.4g)\n", worst, rms);
  EXPECT_FALSE(same_bits(exact, fast));
  EXPECT_LT(worst, 0.25 * rms);
}

}  // namespace
}  // namespace strata::dsv4
