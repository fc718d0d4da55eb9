// Speculative decoding: exact rollback of every kind of state after a partial acceptance,
// drafts that leave the MTP untouched, generate() with speculation bitwise equal to plain
// decoding (greedy and sampled, MTP drafts and forced drafts with injected rejections, on
// Flash- and Pro-shaped models, across 4- and 128-token blocks and the indexer's top-k),
// rejection sampling preserving the target distribution, and the adaptive draft length.
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>

#include "cache/undo_log.h"
#include "core/error.h"
#include "engine/reference_generation.h"
#include "models/dsv4_fixture.h"
#include "text/tokenizer.h"

namespace strata {
namespace {

void expect_layer_equal(const dsv4::LayerState& a, const dsv4::LayerState& b, const std::string& what) {
  EXPECT_EQ(a.ring, b.ring) << what << ": window ring";
  EXPECT_EQ(a.compressor.kv, b.compressor.kv) << what << ": compressor kv slots";
  EXPECT_EQ(a.compressor.score, b.compressor.score) << what << ": compressor score slots";
  EXPECT_EQ(a.compressor.entries, b.compressor.entries) << what << ": compressed entries";
  EXPECT_EQ(a.index_keys.kv, b.index_keys.kv) << what << ": indexer compressor kv slots";
  EXPECT_EQ(a.index_keys.score, b.index_keys.score) << what << ": indexer compressor score slots";
  EXPECT_EQ(a.index_keys.entries, b.index_keys.entries) << what << ": indexer keys";
}

void expect_main_equal(const dsv4::SequenceState& a, const dsv4::SequenceState& b, const std::string& what) {
  ASSERT_EQ(a.pos, b.pos) << what;
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t L = 0; L < a.layers.size(); ++L) expect_layer_equal(a.layers[L], b.layers[L], what + " layer " + std::to_string(L));
}

void expect_mtp_equal(const dsv4::SequenceState& a, const dsv4::SequenceState& b, const std::string& what) {
  ASSERT_EQ(a.mtp_pos, b.mtp_pos) << what;
  for (size_t j = 0; j < a.mtp.size(); ++j) expect_layer_equal(a.mtp[j], b.mtp[j], what + " mtp");
  EXPECT_EQ(a.mtp_hidden, b.mtp_hidden) << what;
}

std::vector<int64_t> random_ids(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = int64_t(rng() % uint64_t(vocab));
  return v;
}

// One checkpoint per preset for the whole binary (writing one takes a while under ASan).
const dsv4::Model& tiny_model(const std::string& preset) {
  static std::map<std::string, std::unique_ptr<dsv4::testing::TinyModel>> models;
  auto& m = models[preset];
  if (!m) m = std::make_unique<dsv4::testing::TinyModel>(preset);
  return *m->model;
}

const Tokenizer& tokenizer() {
  static const Tokenizer tok = Tokenizer::load(std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3");
  return tok;
}

class SpeculativeModel : public ::testing::TestWithParam<const char*> {};

// After a prompt ending just before a 128-token boundary (every compressor ratio completes a
// block inside the verified tokens), forward_all over m tokens then rollback to each prefix
// equals running only that prefix; its logits rows equal one-by-one decoding.
TEST_P(SpeculativeModel, RollbackToEveryPrefixEqualsRunningThePrefix) {
  const auto& m = tiny_model(GetParam());
  const int64_t V = m.config().vocab_size, P = 122, M = 8;  // positions 122..129: block 127 completes
  auto ids = random_ids(P + M, 128000, 11);
  auto base = m.new_state();
  m.advance(base, ids.data(), P);

  auto one = base;
  std::vector<std::vector<float>> rows;
  for (int64_t i = 0; i < M; ++i) rows.push_back(m.decode(one, ids[size_t(P + i)]));

  for (int64_t keep : {0, 1, 5, 6, 8}) {  // 5: just before the block completes, 6: just after
    auto spec = base;
    cache::UndoLog undo;
    std::vector<float> hidden;
    auto all = m.forward_all(spec, ids.data() + P, M, undo, &hidden);
    ASSERT_EQ(int64_t(all.size()), M * V);
    ASSERT_EQ(int64_t(hidden.size()), M * m.config().hc_mult * m.config().hidden_size);
    if (keep == 0)
      for (int64_t i = 0; i < M; ++i)
        EXPECT_TRUE(std::equal(rows[size_t(i)].begin(), rows[size_t(i)].end(), all.begin() + i * V)) << "row " << i;
    m.rollback(spec, undo, P + keep);
    auto plain = base;
    if (keep > 0) m.advance(plain, ids.data() + P, keep);
    expect_main_equal(spec, plain, "keep " + std::to_string(keep));
    // and the rolled-back state decodes on exactly as the plain one
    EXPECT_EQ(m.decode(spec, 5), m.decode(plain, 5)) << "keep " << keep;
  }
  cache::UndoLog undo;
  auto st = base;
  EXPECT_THROW(m.rollback(st, undo, P + 1), Error);  // not behind the state
}

TEST_P(SpeculativeModel, DraftingLeavesTheMtpStateUntouched) {
  const auto& m = tiny_model(GetParam());
  auto ids = random_ids(140, 128000, 12);
  auto st = m.new_state();
  std::vector<float> hidden;
  m.forward(st, ids.data(), 140, &hidden);
  MtpDrafter drafter(m);
  drafter.sync(st, ids.data(), 140, hidden.data());
  EXPECT_EQ(st.mtp_pos[0], 139);  // one position behind the main layers
  const auto before = st;
  auto d1 = drafter.draft(st, 42, 6, 128000);
  ASSERT_EQ(d1.size(), 6u);
  for (auto t : d1) EXPECT_LT(t, 128000);
  expect_mtp_equal(st, before, "after drafting");
  EXPECT_EQ(drafter.draft(st, 42, 6, 128000), d1);  // deterministic
  // the first draft is the MTP's prediction from the synced state alone
  auto probe = st;
  auto logits = m.mtp_forward(probe, st.mtp_hidden.data(), std::vector<int64_t>{42}.data(), 1);
  EXPECT_EQ(int64_t(std::max_element(logits.begin(), logits.begin() + 128000) - logits.begin()), d1[0]);
}

// Several requests drafting at once (different lengths, one not drafting, one whose MTP is out
// of step) get bitwise the drafts each gets alone, and every MTP state is left as it was;
// sync_batch leaves each state as sync alone does.
TEST_P(SpeculativeModel, DraftBatchEqualsDraftingAlone) {
  const auto& m = tiny_model(GetParam());
  const std::vector<int64_t> lengths = {140, 9, 33, 20};
  std::vector<dsv4::SequenceState> states, alone;
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<float>> hidden(lengths.size());
  MtpDrafter drafter(m);
  std::vector<MtpDrafter::SyncJob> syncs;
  states.reserve(lengths.size());  // the jobs point into it
  for (size_t i = 0; i < lengths.size(); ++i) {
    ids.push_back(random_ids(lengths[i], 128000, 20 + i));
    states.push_back(m.new_state());
    m.forward(states.back(), ids.back().data(), lengths[i], &hidden[i]);
    alone.push_back(states.back());
    if (i != 3) syncs.push_back({&states.back(), ids.back().data(), lengths[i], hidden[i].data()});  // 3: never synced
  }
  drafter.sync_batch(syncs);
  for (size_t i = 0; i < 3; ++i) {
    drafter.sync(alone[i], ids[i].data(), lengths[i], hidden[i].data());
    expect_mtp_equal(states[i], alone[i], "sync " + std::to_string(i));
  }
  const std::vector<int> ks = {5, 2, 0, 3};
  std::vector<MtpDrafter::DraftJob> jobs;
  for (size_t i = 0; i < ks.size(); ++i) jobs.push_back({&states[i], int64_t(100 + i), ks[i], {}});
  const auto before = states;
  drafter.draft_batch(jobs, 128000);
  for (size_t i = 0; i < ks.size(); ++i) {
    const std::string what = "request " + std::to_string(i);
    EXPECT_EQ(jobs[i].drafts, drafter.draft(alone[i], int64_t(100 + i), ks[i], 128000)) << what;
    expect_mtp_equal(states[i], before[i], what);
  }
  EXPECT_EQ(jobs[0].drafts.size(), 5u);
  EXPECT_EQ(jobs[1].drafts.size(), 2u);
  EXPECT_TRUE(jobs[2].drafts.empty());  // k = 0
  EXPECT_TRUE(jobs[3].drafts.empty());  // its MTP is not in step
}

struct GenRun {
  GenerationStats stats;
  dsv4::SequenceState state;
  std::string text;
};

GenRun run(const dsv4::Model& m, const Tokenizer& tok, const std::vector<int32_t>& prompt, const SamplingParams& p,
        const SpeculativeOptions& spec) {
  GenRun r;
  r.state = m.new_state();
  r.stats = generate(const_cast<dsv4::Model&>(m), r.state, tok, prompt, p, 9, [&](const GenerationEvent& e) {
    r.text += e.text;
    return true;
  }, spec);
  return r;
}

// Plain decoding against speculation in every mode; 110 prompt tokens + 40 generated cross
// the 128-token block (4 and 128 both complete there), and CSA's top-32 selection of the
// compressed entries becomes sparse from 132 tokens on.
TEST_P(SpeculativeModel, GenerateWithSpeculationEqualsPlainDecoding) {
  const auto& m = tiny_model(GetParam());
  const Tokenizer& tok = tokenizer();
  std::vector<int32_t> prompt;
  for (auto x : random_ids(110, 128000, 13)) prompt.push_back(int32_t(x));
  const int64_t N = 40;
  for (bool sampled : {false, true}) {
    SamplingParams p;
    p.max_tokens = N;
    p.ignore_eos = true;
    if (sampled) p.temperature = 0.9, p.top_k = 40, p.seed = 5, p.presence_penalty = 0.3;
    const GenRun plain = run(m, tok, prompt, p, {});
    ASSERT_EQ(plain.stats.generated_tokens, N);

    auto check = [&](const SpeculativeOptions& o, const std::string& what) {
      GenRun s = run(m, tok, prompt, p, o);
      EXPECT_EQ(s.stats.tokens, plain.stats.tokens) << what;
      EXPECT_EQ(s.text, plain.text) << what;
      EXPECT_EQ(s.stats.finish, plain.stats.finish) << what;
      expect_main_equal(s.state, plain.state, what);
      EXPECT_EQ(s.stats.spec.emitted, N - 1) << what;  // the first token comes from the prefill
      return s.stats.spec;
    };
    const std::string mode = sampled ? "sampled" : "greedy";
    std::vector<int32_t> forced = plain.stats.tokens;
    SpeculativeOptions f;
    f.max_draft = 4;
    f.adaptive = false;
    if (!sampled) {
      SpeculativeOptions o;
      o.max_draft = 2;
      o.adaptive = false;
      check(o, mode + " MTP drafts k=2");
      // forced acceptance: the target's own continuation is always accepted
      f.forced = &forced;
      auto fs = check(f, mode + " forced");
      EXPECT_EQ(fs.accepted, fs.drafted) << mode;
      EXPECT_EQ(fs.rounds, (N - 1 + 4) / 5) << mode;
    }
    // injected rejections at varying offsets inside the drafts
    std::vector<int32_t> bent = forced;
    for (size_t i = 0; i < bent.size(); i += 1 + i % 5) bent[i] = (bent[i] + 1) % 128000;
    f.forced = &bent;
    auto bs = check(f, mode + " forced with rejections");
    EXPECT_LT(bs.accepted, bs.drafted) << mode;
    EXPECT_GT(bs.accepted, 0) << mode;
    if (!sampled) {  // adaptive length
      SpeculativeOptions a;
      a.max_draft = 3;
      check(a, mode + " adaptive");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, SpeculativeModel, ::testing::Values("flash-tiny", "pro-tiny"));

// A long generation from a short prompt: drafts with rejections at every offset cross the
// window wrap (128), two HCA entries (128, 256), 70 CSA blocks and the top-32 threshold.
TEST(Speculative, LongGenerationWithRejectionsEqualsPlainDecoding) {
  const auto& m = tiny_model("flash-tiny");
  std::vector<int32_t> prompt;
  for (auto x : random_ids(20, 128000, 14)) prompt.push_back(int32_t(x));
  SamplingParams p;
  p.max_tokens = 280;
  p.ignore_eos = true;
  const GenRun plain = run(m, tokenizer(), prompt, p, {});
  std::vector<int32_t> bent = plain.stats.tokens;
  for (size_t i = 2; i < bent.size(); i += 2 + i % 4) bent[i] = (bent[i] + 7) % 128000;
  SpeculativeOptions f;
  f.max_draft = 4;
  f.adaptive = false;
  f.forced = &bent;
  const GenRun s = run(m, tokenizer(), prompt, p, f);
  EXPECT_EQ(s.stats.tokens, plain.stats.tokens);
  EXPECT_EQ(s.text, plain.text);
  expect_main_equal(s.state, plain.state, "long");
  EXPECT_GT(s.stats.spec.accepted, 0);
  EXPECT_LT(s.stats.spec.accepted, s.stats.spec.drafted);
}

// A chat turn after a speculative one keeps the MTP in step and still equals plain decoding.
TEST(Speculative, SecondTurnOnTheSameState) {
  const auto& m = tiny_model("flash-tiny");
  const Tokenizer& tok = tokenizer();
  SamplingParams p;
  p.max_tokens = 20;
  p.ignore_eos = true;
  std::vector<int32_t> t1{1, 2, 3, 4, 5}, t2{9, 8, 7};
  auto plain = m.new_state(), spec = m.new_state();
  SpeculativeOptions o;
  o.max_draft = 2;
  auto cb = [](const GenerationEvent&) { return true; };
  auto& mm = const_cast<dsv4::Model&>(m);
  auto a1 = generate(mm, plain, tok, t1, p, 1, cb), b1 = generate(mm, spec, tok, t1, p, 1, cb, o);
  EXPECT_EQ(a1.tokens, b1.tokens);
  EXPECT_EQ(spec.mtp_pos[0], spec.pos - 1);
  auto a2 = generate(mm, plain, tok, t2, p, 2, cb), b2 = generate(mm, spec, tok, t2, p, 2, cb, o);
  EXPECT_EQ(a2.tokens, b2.tokens);
  expect_main_equal(spec, plain, "second turn");
  // a state decoded without speculation restarts the MTP: still exact
  auto c2 = generate(mm, plain, tok, t2, p, 3, cb, o);
  EXPECT_EQ(c2.generated_tokens, 20);
}

// Rejection sampling: d ~ q, accept with min(1, p/q), else resample from (p − q)+. The result
// follows p: a chi-square test over 200,000 draws on six tokens (critical value at 0.1%: 20.5
// for 5 degrees of freedom; the stream is seeded, so the test is deterministic), and the
// acceptance rate is Σ min(p, q).
TEST(Speculative, RejectionSamplingPreservesTheTargetDistribution) {
  const std::vector<float> p{0.05f, 0.30f, 0.10f, 0.25f, 0.20f, 0.10f}, q{0.30f, 0.05f, 0.20f, 0.25f, 0.0f, 0.20f};
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::discrete_distribution<int> draw_q(q.begin(), q.end());
  const int N = 200000;
  std::vector<int> count(p.size(), 0);
  int accepted = 0;
  for (int i = 0; i < N; ++i) {
    const int d = draw_q(rng);
    auto c = speculative_accept(p, q, d, u(rng), u(rng));
    ++count[size_t(c.token)];
    accepted += c.accepted;
  }
  double chi2 = 0, overlap = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = N * double(p[i]);
    chi2 += (count[i] - e) * (count[i] - e) / e;
    overlap += std::min(p[i], q[i]);
  }
  EXPECT_LT(chi2, 20.5);
  EXPECT_NEAR(double(accepted) / N, overlap, 0.005);
  // a draft q never proposes gets no mass; identical distributions always accept
  EXPECT_TRUE(speculative_accept(p, p, 2, 0.999, 0.5).accepted);
  EXPECT_THROW(speculative_accept(p, q, 7, 0.5, 0.5), Error);
}

TEST(Speculative, DraftLengthFollowsAcceptanceAndCost) {
  DraftLength good(6), bad(6);
  EXPECT_GE(good.next(), 1);  // the prior (acceptance 1/2, cost 0.1) drafts
  for (int i = 0; i < 30; ++i) {
    const int k = good.next();
    good.observe(k, k);
  }
  EXPECT_EQ(good.next(), 6);
  EXPECT_LE(good.next(50.0), good.next());  // heavy load: drafting costs more
  // Nothing accepted: drafting stops, except one probe draft every kProbe rounds.
  int drafted = 0;
  for (int i = 0; i < 40; ++i) {
    const int k = bad.next();
    bad.observe(k, 0);
    drafted += k;
  }
  EXPECT_LE(drafted, 4 + 40 / DraftLength::kProbe + 1);  // a few rounds to learn, then probes
  EXPECT_GE(drafted, 40 / DraftLength::kProbe);
  int probes = 0;
  for (int i = 0; i < DraftLength::kProbe; ++i) probes += bad.next();
  EXPECT_EQ(probes, 1);
  // Measured cost: an extra row as dear as a whole step makes drafting pay only for very high
  // acceptance.
  DraftLength timed(4);
  timed.observe_time(1, 0.010);
  timed.observe_time(4, 0.040);
  EXPECT_NEAR(timed.cost_per_token(), 1.0, 1e-9);
  EXPECT_EQ(timed.next(), 0);  // acceptance prior 1/2: (1 + 1/2) / (1 + 1) < 1
  EXPECT_EQ(DraftLength(0).next(), 0);
}

}  // namespace
}  // namespace strata
