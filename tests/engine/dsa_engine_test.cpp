// The engine on the DSA family (deepseek-v3.2-tiny, glm5-tiny: cache kinds mla_latent and
// indexer_keys, in 64-token blocks): continuous batching, preemption, prefix caching (latent and
// index-key blocks shared, nothing recomputed), MTP speculative decoding (rejected drafts undone
// by truncation) and request export/import each give every request exactly the tokens it gets
// alone. Prompts run past index_topk (64), so the indexer really selects.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "engine/engine.h"
#include "engine/engine_harness.h"
#include "engine/request_snapshot.h"
#include "kernels/parallel.h"
#include "models/dsa_fixture.h"
#include "models/numerics_profiles.h"

namespace strata::engine {
namespace {

class DsaEngineEveryProfile : public ::strata::testing::ProfileTest {};
STRATA_EVERY_PROFILE(DsaEngineEveryProfile);
using testing::Collector;
using testing::Outcome;

std::shared_ptr<const Tokenizer> tok() {
  static std::shared_ptr<const Tokenizer> t =
      std::make_shared<const Tokenizer>(Tokenizer::load(std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3"));
  return t;
}
const Tokenizer& tokenizer() { return *tok(); }

std::vector<std::shared_ptr<const models::Model>> models_under_test() {
  return {dsa::testing::tiny_v32().model, dsa::testing::tiny_glm5().model};
}

// Mixed requests whose prompts start with 60 more tokens: past the top-64 selection.
std::vector<Request> requests(int count) {
  auto rs = testing::mixed_requests(count, 120000);
  for (auto& r : rs) {
    std::vector<int32_t> head;
    for (int t = 0; t < 60; ++t) head.push_back(int32_t(2000 + (int(r.id) * 31 + t * 977) % 90000));
    r.prompt.insert(r.prompt.begin(), head.begin(), head.end());
  }
  return rs;
}

EngineMetrics check(const std::shared_ptr<const models::Model>& m, const EngineOptions& opt, std::vector<Request> reqs) {
  std::map<uint64_t, Outcome> expect;
  for (auto& r : reqs) expect[r.id] = testing::run_alone(*m, tokenizer(), r);
  Collector c;
  Engine eng(m, tok(), opt);
  for (size_t i = 0; i < reqs.size(); ++i) {
    eng.submit(reqs[i], c.callback());
    if (i % 3 == 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  c.wait_all(reqs.size());
  for (auto& r : reqs)
    EXPECT_TRUE(c.out[r.id] == expect[r.id]) << m->facts().model_type << " request " << r.id << ": '" << c.out[r.id].text
                                             << "' vs '" << expect[r.id].text << "'" << c.out[r.id].error;
  return eng.metrics();
}

int64_t pool_left(const EngineMetrics& m) {
  int64_t left = 0;
  for (auto& [kind, b] : m.pool_bytes_by_kind) left += b;
  return left;
}

TEST_P(DsaEngineEveryProfile, BatchedRequestsEqualEachAlone) {
  for (const auto& m : models_under_test()) {
    EngineOptions opt;
    opt.max_running = 4;
    opt.max_batch_tokens = 40;  // prompts are prefilled in chunks beside other requests' decode tokens
    opt.max_context = 256;
    const auto met = check(m, opt, requests(7));
    EXPECT_EQ(met.finished, 7);
    bool latent = false, keys = false;
    for (auto& [kind, b] : met.pool_bytes_by_kind) latent |= kind == "mla_latent", keys |= kind == "indexer_keys";
    EXPECT_TRUE(latent && keys);
  }
}

TEST(DsaEngine, PreemptionOnATinyPoolEqualsEachAlone) {
  const auto m = dsa::testing::tiny_v32().model;
  const auto layout = m->model_config().cache_layout({});
  EngineOptions opt;
  opt.max_running = 3;
  opt.max_batch_tokens = 32;
  opt.max_context = 256;
  // Room for three requests within two 64-token blocks each, not for three past them.
  opt.pool_bytes = 3 * layout.bytes_for(128) + layout.block_bytes() / 2;
  opt.prefix_cache = false;
  auto reqs = requests(4);
  for (auto& r : reqs) r.sampling.max_tokens = 90, r.sampling.ignore_eos = true;
  const auto met = check(m, opt, reqs);
  EXPECT_GT(met.preempted, 0);
  EXPECT_EQ(pool_left(met), 0);
}

// MTP drafts verified inside the batch; random weights reject nearly every draft, and forced
// drafts (the request's own continuation, one made wrong) are accepted up to the wrong one.
TEST_P(DsaEngineEveryProfile, SpeculativeDecodingEqualsEachAlone) {
  for (const auto& m : models_under_test()) {
    auto reqs = requests(6);
    for (auto& r : reqs) r.sampling.max_tokens = 12, r.sampling.ignore_eos = true;
    for (size_t i = 0; i < reqs.size(); i += 2) {
      reqs[i].forced_drafts = testing::run_alone(*m, tokenizer(), reqs[i]).tokens;
      if (reqs[i].forced_drafts.size() > 5) reqs[i].forced_drafts[5] ^= 1;
    }
    EngineOptions opt;
    opt.max_running = 4;
    opt.max_batch_tokens = 32;
    opt.max_context = 256;
    opt.spec_tokens = 3;
    opt.spec_adaptive = false;
    const auto met = check(m, opt, reqs);
    EXPECT_GT(met.spec_rounds, 0);
    EXPECT_GT(met.spec_accepted, 0);
    EXPECT_LT(met.spec_accepted, met.spec_drafted);
  }
}

// Requests sharing a prefix start from its last complete 64-token block: the latent and
// index-key blocks shared, nothing recomputed; the output is a cold run's.
TEST(DsaEngine, PrefixCacheHitsEqualColdRuns) {
  for (const auto& m : models_under_test()) {
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
    std::vector<int32_t> fork(base.begin(), base.begin() + 200);
    fork.push_back(77);
    std::vector<Request> reqs = {make(1, base, 0), make(2, base, 0.8), make(3, fork, 0)};
    std::map<uint64_t, Outcome> expect;
    for (auto& r : reqs) expect[r.id] = testing::run_alone(*m, tokenizer(), r);
    for (int spec : {0, 2}) {
      EngineOptions opt;
      opt.max_context = 512;
      opt.max_batch_tokens = 100;  // chunks that do not end on block boundaries
      opt.spec_tokens = spec;
      Collector c;
      Engine eng(m, tok(), opt);
      eng.submit(reqs[0], c.callback());
      c.wait_all(1);
      for (size_t i = 1; i < reqs.size(); ++i) eng.submit(reqs[i], c.callback());
      c.wait_all(reqs.size());
      for (auto& r : reqs) EXPECT_TRUE(c.out[r.id] == expect[r.id]) << r.id << " spec " << spec;
      EXPECT_EQ(c.out[1].cached_prompt_tokens, 0);
      EXPECT_EQ(c.out[2].cached_prompt_tokens, 256);
      EXPECT_EQ(c.out[3].cached_prompt_tokens, 192);
    }
  }
}

// A request exported mid-generation continues in another engine (another thread count,
// speculation on there) exactly as it would have.
TEST(DsaEngine, ExportImportContinuesIdentically) {
  const auto m = dsa::testing::tiny_glm5().model;
  Request r;
  r.id = 5;
  for (int t = 0; t < 140; ++t) r.prompt.push_back(int32_t(1000 + 37 * t));
  r.sampling.temperature = 0.8;
  r.sampling.seed = 3;
  r.sampling.max_tokens = 20;
  r.sampling.ignore_eos = true;
  const Outcome expect = testing::run_alone(*m, tokenizer(), r);
  const std::string path = (std::filesystem::temp_directory_path() / ("strata_dsa_req_" + std::to_string(::getpid()))).string();
  EngineOptions opt;
  opt.max_context = 256;
  const Outcome first = testing::export_after_five(m, tok(), opt, r, path);
  const RequestSnapshot snap = read_snapshot(path);
  EXPECT_EQ(snap.model_type, "glm_moe_dsa");
  const size_t k = snap.tokens.size() - r.prompt.size();
  Collector second;
  {
    EngineOptions o2 = opt;
    o2.spec_tokens = 2;
    kernels::set_num_threads(1);
    Engine eng(m, tok(), o2);
    EXPECT_EQ(eng.import_request(path, second.callback()), r.id);
    second.wait_all(1);
    kernels::set_num_threads(0);
  }
  std::vector<int32_t> tokens(first.tokens.begin(), first.tokens.begin() + long(k));
  tokens.insert(tokens.end(), second.out[r.id].tokens.begin(), second.out[r.id].tokens.end());
  EXPECT_EQ(tokens, expect.tokens);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace strata::engine
