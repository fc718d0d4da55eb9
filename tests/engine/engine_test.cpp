// The batching engine against generate(): many requests with staggered arrival, chunked
// prefill, a small running set and a tiny cache budget (preemption) give each request exactly
// the tokens and text it gets alone; cancellation, the bounded queue, validation and shutdown.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "cache/pool.h"
#include "core/error.h"
#include "engine/request_snapshot.h"
#include "engine/engine_harness.h"
#include "kernels/parallel.h"
#include "models/deepseek_v4/cache_layout.h"
#include "models/deepseek_v4/indexer_scratch.h"
#include "engine/dsv4_engine_fixture.h"
#include "models/dsv4_fixture.h"
#include "text/tokenizer.h"
#include "models/numerics_profiles.h"

namespace strata::engine {
namespace {

class EngineEveryProfile : public ::strata::testing::ProfileTest {};
STRATA_EVERY_PROFILE(EngineEveryProfile);
using testing::Collector;
using testing::mixed_requests;
using testing::Outcome;

using testing::shared;

Outcome run_alone(const Request& r) { return testing::run_alone(*shared().model, *shared().tok, r); }

// Submits requests in waves (later ones arrive while earlier ones decode) and checks each
// against generate(). Returns the engine's metrics at the end.
EngineMetrics check_against_generate(EngineOptions opt, int count, int threads_engine, int threads_ref) {
  auto& s = shared();
  auto reqs = mixed_requests(count);
  kernels::set_num_threads(threads_ref);
  std::map<uint64_t, Outcome> expect;
  for (auto& r : reqs) expect[r.id] = run_alone(r);
  kernels::set_num_threads(threads_engine);
  Collector c;
  Engine eng(s.model, s.tok, opt);
  for (size_t i = 0; i < reqs.size(); ++i) {
    eng.submit(reqs[i], c.callback());
    if (i % 3 == 2) std::this_thread::sleep_for(std::chrono::milliseconds(30 * (i % 4)));  // staggered arrival
  }
  c.wait_all(reqs.size());
  for (auto& r : reqs) {
    const Outcome& got = c.out[r.id];
    EXPECT_TRUE(got == expect[r.id]) << "request " << r.id << ": " << got.tokens.size() << " vs "
                                     << expect[r.id].tokens.size() << " tokens, text '" << got.text << "' vs '"
                                     << expect[r.id].text << "'";
    EXPECT_EQ(got.prompt_tokens, int64_t(r.prompt.size()));
    EXPECT_EQ(got.generated_tokens, int64_t(got.tokens.size()));
  }
  EngineMetrics m = eng.metrics();
  EXPECT_EQ(m.finished, count);
  // the indexer's scratch: the pool's workspace, for the engine's threads and longest context
  const int64_t max_context = opt.max_context > 0 ? std::min(opt.max_context, s.model->max_positions())
                                                  : s.model->max_positions();
  EXPECT_EQ(m.pool_workspace_bytes,
            dsv4::indexer_scratch_bytes(s.model->config(), max_context, kernels::num_threads()));
  EXPECT_GT(m.pool_workspace_bytes, 0);
  EXPECT_EQ(m.running, 0);
  EXPECT_EQ(m.waiting, 0);
  for (auto& [kind, b] : m.pool_bytes_by_kind) EXPECT_EQ(b, 0) << kind;
  // Every token's latency is in the histograms, folded into fixed buckets as it came (memory
  // that stays bounded whether or not anyone reads the metrics); reading consumes nothing.
  EXPECT_EQ(m.ttft.count, uint64_t(count));
  EXPECT_EQ(m.ttft.count + m.itl.count, uint64_t(m.generated_tokens));
  EXPECT_EQ(eng.metrics().itl.count, m.itl.count);
  kernels::set_num_threads(0);
  return m;
}

TEST_P(EngineEveryProfile, StaggeredRequestsEqualGenerateAlone) {
  EngineOptions opt;
  opt.max_running = 4;
  opt.max_batch_tokens = 16;  // prompts are prefilled in chunks mixed with decode tokens
  opt.max_context = 256;
  auto m = check_against_generate(opt, 9, 2, 1);
  EXPECT_GT(m.generated_tokens, 0);
  EXPECT_EQ(m.preempted, 0);
}

TEST(Engine, TinyPoolPreemptsAndStillEqualsGenerate) {
  auto& s = shared();
  const auto layout = dsv4::cache_layout(s.model->config());
  EngineOptions opt;
  opt.max_running = 4;
  opt.max_batch_tokens = 8;
  opt.max_context = 256;
  // Room for two short requests only: blocks are 128 tokens, so a third request (or growth
  // past a block) forces the newest out.
  opt.pool_bytes = 2 * layout.bytes_for(1) + layout.block_bytes() / 2;
  auto reqs_m = check_against_generate(opt, 6, 1, 2);
  (void)reqs_m;
}

// The load test: 50 requests at once on a pool with room for 4 of them: they queue,
// every one completes with its full length and nothing is left in the pool; every fifth is
// checked against generate() alone (all of them cost minutes under the sanitizers; the
// equality itself is what the other tests here check).
TEST(Engine, FiftyConcurrentRequestsOnASmallPoolAllComplete) {
  auto& s = shared();
  const auto layout = dsv4::cache_layout(s.model->config());
  EngineOptions opt;
  opt.max_running = 50;
  opt.max_batch_tokens = 64;
  opt.max_context = 256;
  opt.pool_bytes = 4 * layout.bytes_for(128) + layout.block_bytes() / 2;
  auto reqs = mixed_requests(50);
  for (auto& r : reqs) r.sampling.ignore_eos = true;
  Collector c;
  Engine eng(s.model, s.tok, opt);
  for (auto& r : reqs) eng.submit(r, c.callback());
  c.wait_all(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Outcome& got = c.out[reqs[i].id];
    EXPECT_TRUE(got.error.empty()) << got.error;
    EXPECT_EQ(got.generated_tokens, *reqs[i].sampling.max_tokens) << reqs[i].id;
    if (i % 5 == 0) {
      EXPECT_TRUE(got == run_alone(reqs[i])) << reqs[i].id;
    }
  }
  const auto m = eng.metrics();
  EXPECT_EQ(m.finished, 50);
  EXPECT_EQ(m.errored, 0);
  for (auto& [kind, b] : m.pool_bytes_by_kind) EXPECT_EQ(b, 0) << kind;
}

// The engine's layout: the MTP block's window is pooled too when it drafts.
cache::CacheLayout layout_for(int spec_tokens) {
  dsv4::CacheLayoutOptions o;
  o.include_mtp = spec_tokens > 0;
  return dsv4::cache_layout(shared().model->config(), o);
}

EngineMetrics preemption_across_blocks(int spec_tokens) {
  auto& s = shared();
  const auto layout = layout_for(spec_tokens);
  std::vector<Request> reqs;
  for (int i = 0; i < 3; ++i) {
    Request r;
    r.id = 7 + uint64_t(i);
    for (int t = 0; t < 120 + 5 * i; ++t) r.prompt.push_back(int32_t(1000 + 17 * t + i));
    r.sampling.temperature = 0.7;
    r.sampling.max_tokens = 12;  // crosses the 128-token block boundary while decoding
    reqs.push_back(r);
  }
  std::map<uint64_t, Outcome> expect;
  for (auto& r : reqs) expect[r.id] = run_alone(r);
  EngineOptions opt;
  opt.max_running = 3;
  opt.max_batch_tokens = 64;
  opt.max_context = 512;
  opt.pool_bytes = 2 * layout.bytes_for(128) + layout.block_bytes() / 2;  // three at 128, not two at 129+
  opt.spec_tokens = spec_tokens;
  Collector c;
  Engine eng(s.model, s.tok, opt);
  for (auto& r : reqs) eng.submit(r, c.callback());
  c.wait_all(reqs.size());
  for (auto& r : reqs) EXPECT_TRUE(c.out[r.id] == expect[r.id]) << r.id;
  auto m = eng.metrics();
  EXPECT_GT(m.preempted, 0);
  EXPECT_GT(m.recomputed_tokens, 0);
  EXPECT_EQ(m.finished, 3);
  // What is left in the pool is the prefix checkpoints': a slot each and the blocks they share.
  int64_t left = 0;
  for (auto& [kind, b] : m.pool_bytes_by_kind) left += b;
  EXPECT_EQ(left, m.prefix_checkpoints * layout.fixed_bytes() + m.prefix_blocks * layout.block_bytes());
  return m;
}

TEST(Engine, PreemptionAcrossBlocksEqualsGenerate) { preemption_across_blocks(0); }

// The pool refuses what the byte budget allows when freed blocks sit below a block still in
// use: they can only become blocks, not the slot a new request needs. A (blocks 0, 1, then 5)
// outlives B (blocks 2-4); C and D then fit the budget, but D's slot does not fit above block 5.
// D must wait for C (put back, like a preempted request), not end in "out of cache memory"
// (the soak test's 500s under load).
TEST(Engine, FragmentedPoolPutsTheNewestBackInsteadOfFailingIt) {
  auto& s = shared();
  const auto layout = dsv4::cache_layout(s.model->config());
  const cache::CachePool probe(layout, int64_t(1) << 30);
  const int64_t S = probe.slot_stride(), b = probe.block_stride();
  ASSERT_GT(S, b);  // the peak (two slots, six blocks) fits the budget below
  auto make = [](uint64_t id, int len, int64_t max_tokens) {
    Request r;
    r.id = id;
    for (int t = 0; t < len; ++t) r.prompt.push_back(int32_t(2000 + 31 * t + 7 * int(id)));
    r.sampling.temperature = 0;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = max_tokens;
    return r;
  };
  const Request a = make(1, 240, 140), b_req = make(2, 300, 40), c_req = make(3, 10, 10), d = make(4, 10, 10);
  std::map<uint64_t, Outcome> expect;
  for (const Request* r : {&a, &b_req, &c_req, &d}) expect[r->id] = run_alone(*r);
  EngineOptions opt;
  opt.max_running = 4;
  opt.max_batch_tokens = 512;  // B's prompt in one chunk: its three blocks before A's third
  opt.max_context = 512;
  opt.prefix_cache = false;    // no checkpoint slots: the geometry is the requests' alone
  opt.pool_bytes = 3 * S + 5 * b + b / 2;
  Collector c;
  Engine eng(s.model, s.tok, opt);
  std::promise<void> a_started;
  bool started = false;
  auto inner = c.callback();
  eng.submit(a, [&](const Event& e) {
    inner(e);
    if (!std::exchange(started, true)) a_started.set_value();
  });
  a_started.get_future().wait();
  eng.submit(b_req, c.callback());
  c.wait_all(1);  // B done, A still decoding with its third block above B's freed ones
  {
    std::lock_guard lk(c.mu);
    ASSERT_FALSE(c.out[a.id].done);
  }
  eng.submit(c_req, c.callback());
  eng.submit(d, c.callback());
  c.wait_all(4);
  for (const Request* r : {&a, &b_req, &c_req, &d})
    EXPECT_TRUE(c.out[r->id] == expect[r->id]) << r->id << ": " << c.out[r->id].error;
  const auto m = eng.metrics();
  EXPECT_EQ(m.errored, 0);
  EXPECT_EQ(m.finished, 4);
  EXPECT_GT(m.preempted, 0);  // D, put back while C held the slot room
  for (auto& [kind, bytes] : m.pool_bytes_by_kind) EXPECT_EQ(bytes, 0) << kind;
}

// Speculative decoding inside continuous batching: MTP drafts verified in the same
// forward_batch as other requests' prefill chunks and decode tokens, rolled back on
// rejection; with preemption, prefix checkpoints and block boundaries every request still
// equals generate() alone, and the pool ends empty (rejected tokens' blocks given back).
TEST_P(EngineEveryProfile, SpeculativeDecodingEqualsGenerateAlone) {
  EngineOptions opt;
  opt.max_running = 4;
  opt.max_batch_tokens = 16;
  opt.max_context = 256;
  opt.spec_tokens = 3;
  opt.spec_adaptive = false;
  auto m = check_against_generate(opt, 9, 2, 1);
  EXPECT_GT(m.spec_rounds, 0);
  EXPECT_EQ(m.spec_emitted, m.spec_rounds + m.spec_accepted);
  EXPECT_GE(m.spec_drafted, m.spec_rounds);
}

TEST(Engine, SpeculationWithPreemptionAcrossBlocksEqualsGenerate) {
  auto m = preemption_across_blocks(4);
  EXPECT_GT(m.spec_rounds, 0);
}

// Requests sharing a prefix start from its checkpoint (a multiple of 128 tokens, never the
// whole prompt) and still produce what a cold run produces.
TEST(Engine, PrefixCacheHitsEqualColdRuns) {
  auto& s = shared();
  std::vector<int32_t> base;
  for (int t = 0; t < 300; ++t) base.push_back(int32_t(500 + (t * 7919) % 100000));
  auto make = [&](uint64_t id, std::vector<int32_t> prompt, double temp) {
    Request r;
    r.id = id;
    r.prompt = std::move(prompt);
    r.sampling.temperature = temp;
    r.sampling.max_tokens = 6;
    return r;
  };
  std::vector<int32_t> fork = base;
  fork.resize(200);
  fork.push_back(77);
  std::vector<int32_t> exact256(base.begin(), base.begin() + 256);
  std::vector<Request> reqs = {make(1, base, 0), make(2, base, 0.8), make(3, fork, 0), make(4, exact256, 0.5)};
  std::map<uint64_t, Outcome> expect;
  for (auto& r : reqs) expect[r.id] = run_alone(r);
  EngineOptions opt;
  opt.max_context = 1024;
  opt.max_batch_tokens = 100;  // chunks that do not end on block boundaries
  Collector c;
  Engine eng(s.model, s.tok, opt);
  eng.submit(reqs[0], c.callback());
  c.wait_all(1);  // the first one leaves checkpoints at 128 and 256
  for (size_t i = 1; i < reqs.size(); ++i) eng.submit(reqs[i], c.callback());
  c.wait_all(reqs.size());
  for (auto& r : reqs) EXPECT_TRUE(c.out[r.id] == expect[r.id]) << r.id;
  EXPECT_EQ(c.out[1].cached_prompt_tokens, 0);
  EXPECT_EQ(c.out[2].cached_prompt_tokens, 256);
  EXPECT_EQ(c.out[3].cached_prompt_tokens, 128);
  EXPECT_EQ(c.out[4].cached_prompt_tokens, 128);  // the last token is always computed
  auto m = eng.metrics();
  EXPECT_EQ(m.prefix_lookup_tokens, 300 + 300 + 201 + 256);
  EXPECT_EQ(m.prefix_hit_tokens, 256 + 128 + 128);
}

// The unaligned example: two prompts share 1,000 tokens. The second reuses the 7
// complete blocks (in an HCA layer 7 entries, in a CSA layer 224 entries and index keys) by
// reference and rebuilds the 104-token tail of the shared part plus its own suffix; its output
// equals a cold run's. Its own checkpoint at 1,024 references the same 7 blocks plus one new
// one: 8 blocks in the pool for 8 checkpoints, not 15.
TEST(Engine, PrefixSharedAcrossAnUnalignedBoundaryReusesBlocks) {
  auto& s = shared();
  std::vector<int32_t> base;
  for (int t = 0; t < 1000; ++t) base.push_back(int32_t(300 + (t * 104729) % 90000));
  auto make = [&](uint64_t id, int suffix, int32_t salt) {
    Request r;
    r.id = id;
    r.prompt = base;
    for (int t = 0; t < suffix; ++t) r.prompt.push_back(int32_t(40 + t + salt));
    r.sampling.temperature = 0.6;
    r.sampling.max_tokens = 4;
    return r;
  };
  std::vector<Request> reqs = {make(1, 10, 0), make(2, 30, 5000)};
  const Outcome expect = run_alone(reqs[1]);  // the hit's cold run (the first is cold anyway)
  EngineOptions opt;
  opt.max_context = 1100;
  opt.max_batch_tokens = 256;
  Collector c;
  Engine eng(s.model, s.tok, opt);
  eng.submit(reqs[0], c.callback());
  c.wait_all(1);
  eng.submit(reqs[1], c.callback());
  c.wait_all(2);
  EXPECT_TRUE(c.out[2] == expect);
  EXPECT_EQ(c.out[2].cached_prompt_tokens, 896);
  const auto m = eng.metrics();
  EXPECT_EQ(m.prefix_hit_tokens, 896);
  EXPECT_EQ(m.prefix_checkpoints, 8);
  EXPECT_EQ(m.prefix_blocks, 8);
}

Request long_request(uint64_t id, int64_t max_tokens) {
  Request r;
  r.id = id;
  r.prompt = {11, 12, 13, 14};
  r.sampling.temperature = 1.0;
  r.sampling.seed = 1;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = max_tokens;
  return r;
}

TEST(Engine, CancelEndsTheRequestAndFreesItsCache) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_context = 512;
  Engine eng(s.model, s.tok, opt);
  std::promise<void> first;
  std::atomic<int> tokens{0};
  Collector c;
  auto inner = c.callback();
  const uint64_t id = eng.submit(long_request(0, 400), [&](const Event& e) {
    inner(e);
    if (tokens.fetch_add(1) == 0) first.set_value();
  });
  first.get_future().wait();
  eng.cancel(id);
  eng.cancel(987654);  // unknown ids are ignored
  c.wait_all(1);
  const Outcome& o = c.out[id];
  EXPECT_TRUE(o.cancelled);
  EXPECT_LT(o.tokens.size(), 400u);
  auto m = eng.metrics();
  EXPECT_EQ(m.cancelled, 1);
  EXPECT_EQ(m.running, 0);
  for (auto& [kind, b] : m.pool_bytes_by_kind) EXPECT_EQ(b, 0) << kind;
  eng.cancel(id);  // finished ids are ignored
}

TEST(Engine, CancelWhileWaiting) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_running = 1;
  opt.max_context = 512;
  Engine eng(s.model, s.tok, opt);
  std::promise<void> release;
  auto released = release.get_future().share();
  Collector c;
  auto inner = c.callback();
  const uint64_t a = eng.submit(long_request(0, 3), [&, released](const Event& e) {
    released.wait();  // holds the engine thread so that b stays queued
    inner(e);
  });
  const uint64_t b = eng.submit(long_request(0, 3), c.callback());
  eng.cancel(b);
  release.set_value();
  c.wait_all(2);
  EXPECT_FALSE(c.out[a].cancelled);
  EXPECT_EQ(c.out[a].tokens.size(), 3u);
  EXPECT_TRUE(c.out[b].cancelled);
  EXPECT_TRUE(c.out[b].tokens.empty());
}

// A cancellation that lands while a stop string's prefix is held back releases that text on
// the last event, as a length finish would: the events' text is everything generated.
TEST(Engine, CancelReleasesTheTextHeldForAStopString) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_context = 512;
  Engine eng(s.model, s.tok, opt);
  Request r = long_request(0, 6);
  Collector first;
  const uint64_t first_id = eng.submit(r, first.callback());
  first.wait_all(1);
  const Outcome alone = first.out[first_id];
  ASSERT_EQ(alone.tokens.size(), 6u);
  std::string first3;
  for (size_t i = 0; i < 3; ++i) first3 += alone.texts[i];
  ASSERT_FALSE(first3.empty());
  // Every prefix of the six tokens' text is a prefix of the stop string: the matcher holds it all.
  r.sampling.stop = {alone.text + "\x01"};
  r.sampling.max_tokens = 400;
  Collector c;
  auto inner = c.callback();
  std::atomic<int> tokens{0};
  uint64_t id = 0;
  std::promise<uint64_t> id_known;
  auto known = id_known.get_future().share();
  id = eng.submit(r, [&, known](const Event& e) {
    inner(e);
    // After the third token, before the next step samples a fourth.
    if (e.kind == EventKind::token && tokens.fetch_add(1) == 2) eng.cancel(known.get());
  });
  id_known.set_value(id);
  c.wait_all(1);
  const Outcome& o = c.out[id];
  ASSERT_TRUE(o.cancelled);
  ASSERT_GE(o.tokens.size(), 3u);
  ASSERT_LT(o.tokens.size(), 6u);
  EXPECT_EQ(o.tokens, std::vector<int32_t>(alone.tokens.begin(), alone.tokens.begin() + long(o.tokens.size())));
  EXPECT_EQ(o.text.rfind(first3, 0), 0u) << o.text;
  EXPECT_EQ(alone.text.rfind(o.text, 0), 0u) << o.text;
}

// replay(): a run's events from its tokens alone — a finished run's (its finish, usage and
// flushed text), and a cancelled run's, ended by a cancelled event releasing the held text.
TEST(Engine, ReplayGivesTheEventsOfARun) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_context = 512;
  Engine eng(s.model, s.tok, opt);
  Request r = long_request(0, 6);
  r.sampling.stop = {"zzzz-never"};
  Collector c;
  std::vector<Event> ran;
  auto inner = c.callback();
  const uint64_t id = eng.submit(r, [&](const Event& e) {
    ran.push_back(e);
    inner(e);
  });
  c.wait_all(1);
  ASSERT_EQ(ran.size(), 6u);
  auto same = [](const std::vector<Event>& a, const std::vector<Event>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].token, b[i].token) << i;
      EXPECT_EQ(a[i].text, b[i].text) << i;
      EXPECT_EQ(a[i].finish, b[i].finish) << i;
      EXPECT_EQ(a[i].cancelled, b[i].cancelled) << i;
      EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens) << i;
      EXPECT_EQ(a[i].generated_tokens, b[i].generated_tokens) << i;
    }
  };
  Request again = r;
  again.accepted = c.out[id].tokens;
  same(eng.replay(again), ran);
  EXPECT_EQ(ran.back().finish, FinishReason::length);

  // Four of the six: what a cancellation after the fourth token delivers.
  again.sampling.stop = {c.out[id].text + "\x01"};
  again.accepted.resize(4);
  const std::vector<Event> cut = eng.replay(again);
  ASSERT_EQ(cut.size(), 5u);
  EXPECT_TRUE(cut.back().cancelled);
  EXPECT_EQ(cut.back().generated_tokens, 4);
  std::string text, want;
  for (const Event& e : cut) text += e.text;
  for (size_t i = 0; i < 4; ++i) want += ran[i].text;
  EXPECT_EQ(text.rfind(want, 0), 0u) << text;
  EXPECT_EQ(cut[0].text, "");  // held for the stop string until the end

  again.accepted = c.out[id].tokens;
  again.accepted.push_back(again.accepted.back());  // one past max_tokens
  again.sampling.stop = {};
  EXPECT_THROW(eng.replay(again), Error);
  again.prompt.clear();
  EXPECT_THROW(eng.replay(again), Error);
}

TEST(Engine, QueueFullBeyondMaxQueue) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_running = 1;
  opt.max_queue = 2;
  opt.max_context = 512;
  Engine eng(s.model, s.tok, opt);
  std::promise<void> started, release;
  auto released = release.get_future().share();
  std::atomic<bool> once{false};
  Collector c;
  auto inner = c.callback();
  eng.submit(long_request(0, 2), [&, released](const Event& e) {
    if (!once.exchange(true)) started.set_value(), released.wait();
    inner(e);
  });
  started.get_future().wait();  // the first request runs; the engine thread is held
  eng.submit(long_request(0, 2), c.callback());
  eng.submit(long_request(0, 2), c.callback());
  EXPECT_THROW(eng.submit(long_request(0, 2), c.callback()), QueueFull);
  EXPECT_EQ(eng.metrics().waiting, 2);
  release.set_value();
  c.wait_all(3);
  EXPECT_NO_THROW(eng.submit(long_request(0, 2), c.callback()));
  c.wait_all(4);
}

TEST(Engine, SubmitValidates) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_context = 64;
  Engine eng(s.model, s.tok, opt);
  auto cb = [](const Event&) {};
  Request r;
  EXPECT_THROW(eng.submit(r, cb), Error);  // empty
  r.prompt = {1, int32_t(s.model->config().vocab_size)};
  EXPECT_THROW(eng.submit(r, cb), Error);  // out of vocab
  r.prompt = {1, -3};
  EXPECT_THROW(eng.submit(r, cb), Error);
  r.prompt = std::vector<int32_t>(60, 5);
  r.sampling.max_tokens = 5;
  try {
    eng.submit(r, cb);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the context of 64"), std::string::npos) << e.what();
  }
  r.prompt = std::vector<int32_t>(64, 5);
  r.sampling.max_tokens.reset();
  EXPECT_THROW(eng.submit(r, cb), Error);  // no room at all
  r.prompt = {1, 2};
  r.sampling.temperature = 5;
  EXPECT_THROW(eng.submit(r, cb), Error);  // bad sampling params
  r.sampling.temperature = 1;
  r.sampling.max_tokens = 1;
  r.id = 5;
  std::promise<void> hold;
  auto held = hold.get_future().share();
  eng.submit(r, [held](const Event&) { held.wait(); });
  EXPECT_THROW(eng.submit(r, cb), Error);  // id 5 is in use
  hold.set_value();
}

TEST(Engine, ShutdownDrainFinishesEverything) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_running = 2;
  opt.max_context = 512;
  Collector c;
  Engine eng(s.model, s.tok, opt);
  for (int i = 0; i < 4; ++i) eng.submit(long_request(0, 5), c.callback());
  eng.shutdown(true);
  ASSERT_EQ(c.out.size(), 4u);
  for (auto& [id, o] : c.out) {
    EXPECT_TRUE(o.done);
    EXPECT_FALSE(o.cancelled);
    EXPECT_EQ(o.finish, FinishReason::length);
    EXPECT_EQ(o.tokens.size(), 5u);
  }
  EXPECT_THROW(eng.submit(long_request(0, 5), c.callback()), Error);
  eng.shutdown(true);  // idempotent
}

TEST(Engine, ShutdownWithoutDrainCancels) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_running = 1;
  opt.max_context = 512;
  Collector c;
  std::promise<void> started;
  std::atomic<bool> once{false};
  auto inner = c.callback();
  {
    Engine eng(s.model, s.tok, opt);
    eng.submit(long_request(0, 300), [&](const Event& e) {
      inner(e);
      if (!once.exchange(true)) started.set_value();
    });
    for (int i = 0; i < 3; ++i) eng.submit(long_request(0, 300), c.callback());
    started.get_future().wait();
    eng.shutdown(false);
    EXPECT_EQ(eng.metrics().cancelled, 4);
  }
  ASSERT_EQ(c.out.size(), 4u);
  for (auto& [id, o] : c.out) {
    EXPECT_TRUE(o.done);
    EXPECT_TRUE(o.cancelled);
  }
}

// A shutdown that lands inside a step, after its cancellations were taken (here: while a
// cancelled request's last event is being delivered), still ends every other request.
TEST(Engine, ShutdownDuringAStepStillCancelsEveryRequest) {
  auto& s = shared();
  EngineOptions opt;
  opt.max_running = 1;
  opt.max_context = 512;
  Collector c;
  Engine eng(s.model, s.tok, opt);
  std::thread stopper;
  std::promise<void> stopping;
  const uint64_t first = eng.submit(long_request(0, 300), [&](const Event& e) {
    if (!e.cancelled) return;
    stopper = std::thread([&] { eng.shutdown(false); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the shutdown lands meanwhile
    stopping.set_value();
  });
  for (int i = 0; i < 2; ++i) eng.submit(long_request(0, 300), c.callback());
  eng.cancel(first);
  stopping.get_future().wait();
  stopper.join();
  EXPECT_EQ(eng.metrics().cancelled, 3);
  ASSERT_EQ(c.out.size(), 2u);
  for (auto& [id, o] : c.out) {
    EXPECT_TRUE(o.done);
    EXPECT_TRUE(o.cancelled);
  }
}

}  // namespace
}  // namespace strata::engine

namespace strata::engine {
namespace {

// A shutdown with snapshots writes one for each request its callback names, after the last
// step: the snapshot holds exactly the tokens the request's events carried, and imported into a
// fresh engine the request goes on as if never stopped. Requests it names no file for get none.
TEST(Engine, ShutdownWithSnapshotsLeavesTheNamedRequestsWhereTheyStopped) {
  auto& s = shared();
  Request r;
  r.id = 77;
  for (int t = 0; t < 40; ++t) r.prompt.push_back(int32_t(2000 + 7 * t));
  r.sampling.temperature = 0.8;
  r.sampling.seed = 5;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 40;
  const Outcome expect = run_alone(r);
  ASSERT_EQ(expect.tokens.size(), 40u);

  const std::string dir = std::filesystem::temp_directory_path() / ("strata_shutdown_snap_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/named";
  EngineOptions opt;
  opt.max_context = 512;
  Collector c;
  std::vector<std::string> asked;
  {
    Engine eng(s.model, s.tok, opt);
    std::promise<void> five;
    int seen = 0;
    eng.submit(r, [&, cb = c.callback()](const Event& e) {
      cb(e);
      if (e.kind == EventKind::token && ++seen == 5) five.set_value();
    });
    Request other = r;
    other.id = 78;
    eng.submit(other, c.callback());
    five.get_future().wait();
    eng.shutdown_with_snapshots([&](uint64_t id) {
      asked.push_back(std::to_string(id));
      return id == r.id ? path : std::string();
    });
  }
  EXPECT_EQ(asked.size(), 2u);
  ASSERT_EQ(c.out.size(), 2u);
  const Outcome& a = c.out[r.id];
  EXPECT_TRUE(a.cancelled);
  ASSERT_GE(a.tokens.size(), 5u);
  ASSERT_LT(a.tokens.size(), 40u);
  const RequestSnapshot snap = read_snapshot(path);
  std::vector<int32_t> carried = r.prompt;
  carried.insert(carried.end(), a.tokens.begin(), a.tokens.end());
  EXPECT_EQ(snap.tokens, carried);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);

  Collector second;
  {
    Engine eng(s.model, s.tok, opt);
    eng.import_request(path, second.callback());
    second.wait_all(1);
  }
  ASSERT_EQ(second.out.size(), 1u);
  const Outcome& b = second.out.begin()->second;
  std::vector<int32_t> tokens = a.tokens;
  tokens.insert(tokens.end(), b.tokens.begin(), b.tokens.end());
  EXPECT_EQ(tokens, expect.tokens);
  EXPECT_EQ(b.finish, FinishReason::length);
  std::filesystem::remove_all(dir);
}

// Export mid-generation, cancel, import into a fresh engine: the first engine's tokens up to
// the snapshot followed by the restored request's tokens equal generate() alone.
TEST(Engine, ExportImportContinuesIdentically) {
  auto& s = shared();
  Request r;
  r.id = 4242;
  for (int t = 0; t < 150; ++t) r.prompt.push_back(int32_t(3000 + 13 * t));
  r.sampling.temperature = 0.9;
  r.sampling.top_p = 0.9;
  r.sampling.presence_penalty = 0.5;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 24;
  r.sampling.stop = {"zzzz-never"};
  const Outcome expect = run_alone(r);
  ASSERT_EQ(expect.tokens.size(), 24u);

  const std::string path = std::filesystem::temp_directory_path() / ("strata_snapshot_" + std::to_string(::getpid()));
  EngineOptions opt;
  opt.max_context = 512;
  const Outcome a = testing::export_after_five(s.model, s.tok, opt, r, path, [&](Engine& eng) {
    EXPECT_THROW(eng.export_request(r.id, path + ".x"), Error);  // finished
  });
  RequestSnapshot snap = read_snapshot(path);
  const size_t k = snap.tokens.size() - r.prompt.size();
  ASSERT_GE(k, 5u);
  ASSERT_LT(k, 24u);
  EXPECT_TRUE(snap.has_state);
  EXPECT_EQ(snap.pos + 1, int64_t(snap.tokens.size()));  // the last sampled token is not yet in the cache

  Collector second;
  {
    kernels::set_num_threads(1);
    Engine eng(s.model, s.tok, opt);
    EXPECT_EQ(eng.import_request(path, second.callback()), r.id);
    second.wait_all(1);
    kernels::set_num_threads(0);
  }
  const Outcome& b = second.out[r.id];
  std::vector<int32_t> tokens(a.tokens.begin(), a.tokens.begin() + long(k));
  tokens.insert(tokens.end(), b.tokens.begin(), b.tokens.end());
  EXPECT_EQ(tokens, expect.tokens);
  std::string text;
  for (size_t i = 0; i < k; ++i) text += a.texts[i];
  EXPECT_EQ(text + b.text, expect.text);
  EXPECT_EQ(b.finish, FinishReason::length);
  EXPECT_EQ(b.generated_tokens, 24);
  EXPECT_EQ(b.prompt_tokens, 150);

  { std::ofstream(path + ".bad") << "not a snapshot"; }
  Engine eng(s.model, s.tok, opt);
  EXPECT_THROW(eng.import_request(path + ".bad", second.callback()), Error);
  // A well-formed snapshot whose state does not fit the model (a truncated window ring, an
  // index key missing, the other index-key format, a cache missing, another architecture) is
  // refused, not run.
  for (int bad = 0; bad < 5; ++bad) {
    RequestSnapshot wrong = snap;
    auto is = [](const char* kind) { return [kind](const cache::CacheRecord& r) { return r.kind == kind; }; };
    auto& ring = *std::find_if(wrong.caches.rbegin(), wrong.caches.rend(), is("sliding_window"));
    auto& keys = *std::find_if(wrong.caches.begin(), wrong.caches.end(), is("indexer_keys"));
    if (bad == 0) ring.bytes.pop_back();
    if (bad == 1) keys.entries -= 1, keys.bytes.resize(keys.bytes.size() - keys.bytes.size() / size_t(keys.entries + 1));
    if (bad == 2) keys.format = "128 e2m1 + 4 e8m0";
    if (bad == 3) wrong.caches.pop_back();
    if (bad == 4) wrong.model_type = "qwen3_5";
    write_snapshot(path + ".bad", wrong);
    EXPECT_THROW(eng.import_request(path + ".bad", second.callback()), Error) << bad;
  }
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".bad");
}

}  // namespace
}  // namespace strata::engine
