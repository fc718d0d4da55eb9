// The engine on Gemma 4 (gemma4-kv-tiny: sliding-window rings in the request's slot beside K=V
// full layers in blocks; gemma4-e-tiny: KV-shared layers): continuous batching, preemption and
// prefix caching (each ring checkpointed at the block boundary, the full layers' blocks shared)
// give every request exactly the tokens it gets alone, and the pool ends holding only what its
// prefix checkpoints account for.
#include <gtest/gtest.h>

#include <thread>

#include "engine/engine.h"
#include "engine/engine_harness.h"
#include "models/gemma4_fixture.h"
#include "models/numerics_profiles.h"

namespace strata::engine {
namespace {

using testing::Collector;
using testing::Outcome;

// The tiny presets' own tokenizer (the same 512 ids for every preset).
const std::shared_ptr<const Tokenizer>& tokenizer() {
  static const auto tok =
      std::make_shared<const Tokenizer>(Tokenizer::load(gemma4::testing::tiny_checkpoint("gemma4-kv-tiny").dir));
  return tok;
}

std::shared_ptr<const models::Model> model(const std::string& preset) {
  return std::shared_ptr<const models::Model>(&gemma4::testing::tiny(preset), [](const models::Model*) {});
}

EngineMetrics check(const std::string& preset, const EngineOptions& opt, std::vector<Request> reqs) {
  const auto m = model(preset);
  std::map<uint64_t, Outcome> expect;
  for (auto& r : reqs) expect[r.id] = testing::run_alone(*m, *tokenizer(), r);
  Collector c;
  Engine eng(m, tokenizer(), opt);
  for (size_t i = 0; i < reqs.size(); ++i) {
    eng.submit(reqs[i], c.callback());
    if (i % 3 == 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  c.wait_all(reqs.size());
  for (auto& r : reqs)
    EXPECT_TRUE(c.out[r.id] == expect[r.id]) << preset << " request " << r.id << ": " << c.out[r.id].error;
  return eng.metrics();
}

int64_t pool_left(const EngineMetrics& m) {
  int64_t left = 0;
  for (auto& [kind, b] : m.pool_bytes_by_kind) left += b;
  return left;
}

TEST(Gemma4Engine, BatchedRequestsEqualEachAlone) {
  for (const char* preset : {"gemma4-kv-tiny", "gemma4-e-tiny"}) {
    EngineOptions opt;
    opt.max_running = 4;
    opt.max_batch_tokens = 24;  // prompts are prefilled in chunks beside other requests' decode tokens
    opt.max_context = 256;
    auto reqs = testing::mixed_requests(9, 500);
    for (auto& r : reqs) r.sampling.max_tokens = *r.sampling.max_tokens + 30, r.sampling.ignore_eos = true;  // past the window
    const auto m = check(preset, opt, reqs);
    EXPECT_EQ(m.finished, 9);
    bool ring = false;
    for (auto& [kind, b] : m.pool_bytes_by_kind) ring |= kind == "sliding_window";
    EXPECT_TRUE(ring) << preset;
  }
}

TEST(Gemma4Engine, PreemptionOnATinyPoolEqualsEachAlone) {
  const auto layout = model("gemma4-kv-tiny")->model_config().cache_layout({});
  EngineOptions opt;
  opt.max_running = 3;
  opt.max_batch_tokens = 32;
  opt.max_context = 256;
  opt.pool_bytes = 3 * layout.bytes_for(128) + layout.block_bytes() / 2;
  opt.prefix_cache = false;
  auto reqs = testing::mixed_requests(4, 500);
  for (auto& r : reqs) r.sampling.max_tokens = 130, r.sampling.ignore_eos = true;
  const auto m = check("gemma4-kv-tiny", opt, reqs);
  EXPECT_GT(m.preempted, 0);
  EXPECT_EQ(pool_left(m), 0);
}

// Requests sharing a prefix start from the checkpoint of its last complete 128-token block: the
// rings copied, the full layers' blocks shared; the output is a cold run's.
TEST(Gemma4Engine, PrefixCacheHitsEqualColdRuns) {
  for (const char* preset : {"gemma4-kv-tiny", "gemma4-e-tiny"}) {
    const auto m = model(preset);
    std::vector<int32_t> base;
    for (int t = 0; t < 300; ++t) base.push_back(int32_t(3 + (t * 7919) % 500));
    auto make = [&](uint64_t id, std::vector<int32_t> prompt, double temp) {
      Request r;
      r.id = id;
      r.prompt = std::move(prompt);
      r.sampling.temperature = temp;
      r.sampling.max_tokens = 6;
      r.sampling.ignore_eos = true;
      return r;
    };
    std::vector<int32_t> fork(base.begin(), base.begin() + 200);
    fork.push_back(77);
    std::vector<Request> reqs = {make(1, base, 0), make(2, base, 0.8), make(3, fork, 0)};
    std::map<uint64_t, Outcome> expect;
    for (auto& r : reqs) expect[r.id] = testing::run_alone(*m, *tokenizer(), r);
    EngineOptions opt;
    opt.max_context = 512;
    opt.max_batch_tokens = 100;  // chunks that do not end on block boundaries
    Collector c;
    Engine eng(m, tokenizer(), opt);
    eng.submit(reqs[0], c.callback());
    c.wait_all(1);
    for (size_t i = 1; i < reqs.size(); ++i) eng.submit(reqs[i], c.callback());
    c.wait_all(reqs.size());
    for (auto& r : reqs) EXPECT_TRUE(c.out[r.id] == expect[r.id]) << preset << " " << r.id;
    EXPECT_EQ(c.out[1].cached_prompt_tokens, 0);
    EXPECT_EQ(c.out[2].cached_prompt_tokens, 256);
    EXPECT_EQ(c.out[3].cached_prompt_tokens, 128);
  }
}

}  // namespace
}  // namespace strata::engine
