// The engine on Qwen3.5 (qwen3.5-tiny: recurrent Gated DeltaNet layers beside a gated attention
// layer, cache kinds linear_state and full_attention): continuous batching,
// preemption, prefix caching (the recurrent state checkpointed at block boundaries), MTP
// speculative decoding (rejected drafts rolled back through draft slots) and request
// export/import each give every request exactly the tokens it gets alone, and the pool ends
// holding only what its prefix checkpoints account for.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <thread>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/engine_harness.h"
#include "engine/request_snapshot.h"
#include "engine/speculative.h"
#include "kernels/parallel.h"
#include "models/qwen3_5_fixture.h"
#include "models/numerics_profiles.h"

namespace strata::engine {
namespace {

class Qwen35EngineEveryProfile : public ::strata::testing::ProfileTest {};
STRATA_EVERY_PROFILE(Qwen35EngineEveryProfile);
using testing::Collector;
using testing::Outcome;

struct Shared {
  std::shared_ptr<const models::Model> model = qwen35::testing::tiny().model;
  std::shared_ptr<const Tokenizer> tok =
      std::make_shared<const Tokenizer>(Tokenizer::load(std::string(STRATA_SHARED_DIR) + "/tokenizers/qwen3"));
};

Shared& shared() {
  static Shared s;
  return s;
}

Outcome run_alone(const Request& r) { return testing::run_alone(*shared().model, *shared().tok, r); }

std::vector<Request> requests(int count) { return testing::mixed_requests(count, 150000); }

// Runs reqs through one engine (staggered) and checks each against its run alone.
EngineMetrics check(const EngineOptions& opt, std::vector<Request> reqs) {
  auto& s = shared();
  std::map<uint64_t, Outcome> expect;
  for (auto& r : reqs) expect[r.id] = run_alone(r);
  Collector c;
  Engine eng(s.model, s.tok, opt);
  for (size_t i = 0; i < reqs.size(); ++i) {
    eng.submit(reqs[i], c.callback());
    if (i % 3 == 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  c.wait_all(reqs.size());
  for (auto& r : reqs) {
    EXPECT_TRUE(c.out[r.id] == expect[r.id]) << "request " << r.id << ": '" << c.out[r.id].text << "' vs '"
                                             << expect[r.id].text << "'" << c.out[r.id].error;
  }
  return eng.metrics();
}

int64_t pool_left(const EngineMetrics& m) {
  int64_t left = 0;
  for (auto& [kind, b] : m.pool_bytes_by_kind) left += b;
  return left;
}

TEST_P(Qwen35EngineEveryProfile, BatchedRequestsEqualEachAlone) {
  EngineOptions opt;
  opt.max_running = 4;
  opt.max_batch_tokens = 24;  // prompts are prefilled in chunks beside other requests' decode tokens
  opt.max_context = 256;
  const auto m = check(opt, requests(9));
  EXPECT_EQ(m.finished, 9);
  bool linear = false;
  for (auto& [kind, b] : m.pool_bytes_by_kind) linear |= kind == "linear_state";
  EXPECT_TRUE(linear);
}

TEST(Qwen35Engine, PreemptionOnATinyPoolEqualsEachAlone) {
  const auto layout = shared().model->model_config().cache_layout({});
  EngineOptions opt;
  opt.max_running = 3;
  opt.max_batch_tokens = 32;
  opt.max_context = 256;
  // Room for three requests within one 128-token block each, not for three past it: growing
  // across the block boundary forces the newest out.
  opt.pool_bytes = 3 * layout.bytes_for(128) + layout.block_bytes() / 2;
  opt.prefix_cache = false;
  auto reqs = requests(4);
  for (auto& r : reqs) r.sampling.max_tokens = 130, r.sampling.ignore_eos = true;
  const auto m = check(opt, reqs);
  EXPECT_GT(m.preempted, 0);
  EXPECT_EQ(pool_left(m), 0);
}

// MTP drafts verified inside the batch; random weights reject nearly every draft, and forced
// drafts (the request's own continuation, some made wrong) are accepted up to the wrong one:
// both paths roll the recurrent state back through its draft slots.
TEST_P(Qwen35EngineEveryProfile, SpeculativeDecodingEqualsEachAlone) {
  auto reqs = requests(8);
  for (auto& r : reqs) {
    r.sampling.max_tokens = 12;
    r.sampling.ignore_eos = true;
  }
  for (size_t i = 0; i < reqs.size(); i += 2) {
    reqs[i].forced_drafts = run_alone(reqs[i]).tokens;
    if (reqs[i].forced_drafts.size() > 5) reqs[i].forced_drafts[5] ^= 1;  // a rejection mid-way
  }
  EngineOptions opt;
  opt.max_running = 4;
  opt.max_batch_tokens = 32;
  opt.max_context = 256;
  opt.spec_tokens = 3;
  opt.spec_adaptive = false;
  const auto m = check(opt, reqs);
  EXPECT_GT(m.spec_rounds, 0);
  EXPECT_GT(m.spec_accepted, 0);
  EXPECT_LT(m.spec_accepted, m.spec_drafted);
  // Left in the pool: the prefix checkpoints' slots (the live state only: draft slots belong to
  // running requests) and the blocks they share.
  models::CacheOptions o;
  o.include_mtp = true;
  o.draft_tokens = 3;
  const auto layout = shared().model->model_config().cache_layout(o);
  EXPECT_GT(layout.draft_bytes(), 0);
  EXPECT_EQ(pool_left(m), m.prefix_checkpoints * (layout.fixed_bytes() - layout.draft_bytes()) +
                              m.prefix_blocks * layout.block_bytes());
}

// logit_bias is sampling: the request's own Sampler applies it in plain decoding and in
// speculative verification, so batched and speculative runs equal the reference loop alone.
// The drafter biases its drafts too: with a token forced by +100, every draft is accepted.
TEST(Qwen35Engine, LogitBiasWithSpeculationEqualsEachAlone) {
  auto reqs = requests(6);
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto& r = reqs[i];
    r.sampling.max_tokens = 10;
    r.sampling.ignore_eos = true;
    const Outcome plain = run_alone(r);
    // Ban the first two tokens the request makes unbiased, lift two others a little.
    r.sampling.logit_bias = {{plain.tokens[0], -100}, {plain.tokens[1], -100}, {1000 + int32_t(i), 4.5},
                             {2000 + int32_t(i), 2}};
    const Outcome biased = run_alone(r);
    EXPECT_NE(biased.tokens, plain.tokens) << r.id;
    for (int32_t t : biased.tokens) EXPECT_TRUE(t != plain.tokens[0] && t != plain.tokens[1]) << r.id;
    if (i % 2 == 0) reqs[i].forced_drafts = biased.tokens;  // drafts accepted through the bias
  }
  EngineOptions opt;
  opt.max_running = 3;
  opt.max_batch_tokens = 32;
  opt.max_context = 256;
  opt.spec_tokens = 3;
  opt.spec_adaptive = false;
  const auto m = check(opt, reqs);
  EXPECT_GT(m.spec_accepted, 0);
  opt.spec_tokens = 0;
  check(opt, reqs);

  Request forced = requests(1)[0];
  forced.sampling.temperature = 0;
  forced.sampling.max_tokens = 12;
  forced.sampling.ignore_eos = true;
  forced.sampling.logit_bias = {{4242, 100}};
  opt.spec_tokens = 3;
  Collector c;
  Engine eng(shared().model, shared().tok, opt);
  eng.submit(forced, c.callback());
  c.wait_all(1);
  EXPECT_EQ(c.out[forced.id].tokens, std::vector<int32_t>(12, 4242));
  EXPECT_TRUE(c.out[forced.id] == run_alone(forced));
  const auto fm = eng.metrics();
  EXPECT_GT(fm.spec_drafted, 0);
  EXPECT_EQ(fm.spec_accepted, fm.spec_drafted);
}

// Requests sharing a prefix start from the checkpoint of its last complete 128-token block:
// the recurrent state and conv tail copied, the K/V blocks shared; the output is a cold run's.
TEST(Qwen35Engine, PrefixCacheHitsEqualColdRuns) {
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
  std::vector<int32_t> fork(base.begin(), base.begin() + 200);
  fork.push_back(77);
  std::vector<Request> reqs = {make(1, base, 0), make(2, base, 0.8), make(3, fork, 0)};
  std::map<uint64_t, Outcome> expect;
  for (auto& r : reqs) expect[r.id] = run_alone(r);
  for (int spec : {0, 2}) {
    EngineOptions opt;
    opt.max_context = 512;
    opt.max_batch_tokens = 100;  // chunks that do not end on block boundaries
    opt.spec_tokens = spec;
    Collector c;
    Engine eng(s.model, s.tok, opt);
    eng.submit(reqs[0], c.callback());
    c.wait_all(1);
    for (size_t i = 1; i < reqs.size(); ++i) eng.submit(reqs[i], c.callback());
    c.wait_all(reqs.size());
    for (auto& r : reqs) EXPECT_TRUE(c.out[r.id] == expect[r.id]) << r.id << " spec " << spec;
    EXPECT_EQ(c.out[1].cached_prompt_tokens, 0);
    EXPECT_EQ(c.out[2].cached_prompt_tokens, 256);
    EXPECT_EQ(c.out[3].cached_prompt_tokens, 128);
  }
}

// A request exported mid-generation continues in another engine (another thread count,
// speculation on there) exactly as it would have.
TEST(Qwen35Engine, ExportImportContinuesIdentically) {
  auto& s = shared();
  Request r;
  r.id = 5;
  for (int t = 0; t < 140; ++t) r.prompt.push_back(int32_t(1000 + 37 * t));
  r.sampling.temperature = 0.8;
  r.sampling.seed = 3;
  r.sampling.max_tokens = 20;
  r.sampling.ignore_eos = true;
  const Outcome expect = run_alone(r);
  const std::string path = (std::filesystem::temp_directory_path() / ("strata_qwen35_req_" + std::to_string(::getpid()))).string();
  EngineOptions opt;
  opt.max_context = 256;
  const Outcome first = testing::export_after_five(s.model, s.tok, opt, r, path);
  const RequestSnapshot snap = read_snapshot(path);
  EXPECT_EQ(snap.model_type, "qwen3_5_text");
  const size_t k = snap.tokens.size() - r.prompt.size();
  Collector second;
  {
    EngineOptions o2 = opt;
    o2.spec_tokens = 2;
    kernels::set_num_threads(1);
    Engine eng(s.model, s.tok, o2);
    EXPECT_EQ(eng.import_request(path, second.callback()), r.id);
    second.wait_all(1);
    kernels::set_num_threads(0);
  }
  std::vector<int32_t> tokens(first.tokens.begin(), first.tokens.begin() + long(k));
  tokens.insert(tokens.end(), second.out[r.id].tokens.begin(), second.out[r.id].tokens.end());
  EXPECT_EQ(tokens, expect.tokens);
  // A recurrent state of the wrong size is refused.
  RequestSnapshot wrong = snap;
  for (auto& c : wrong.caches)
    if (c.kind == "linear_state") c.bytes.resize(c.bytes.size() - 4);
  write_snapshot(path + ".bad", wrong);
  Engine eng(s.model, s.tok, opt);
  EXPECT_THROW(eng.import_request(path + ".bad", second.callback()), Error);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".bad");
}

// The MTP drafter is the model's block behind the generic interface: several requests drafting
// at once get the drafts each gets alone, and drafting leaves every MTP state as it was.
TEST(Qwen35Engine, BatchedDraftsEqualDraftingAlone) {
  const auto& m = *shared().model;
  MtpDrafter drafter(m);
  std::vector<std::unique_ptr<models::Sequence>> states, alone;
  std::vector<int64_t> lengths = {140, 9, 33};
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::vector<int64_t> ids;
    for (int64_t t = 0; t < lengths[i]; ++t) ids.push_back(100 + 13 * t + int64_t(i));
    for (auto* v : {&states, &alone}) {
      v->push_back(m.new_sequence());
      std::vector<float> hidden;
      m.forward(*v->back(), ids.data(), int64_t(ids.size()), &hidden);
      drafter.sync(*v->back(), ids.data(), int64_t(ids.size()), hidden.data());
    }
  }
  std::vector<MtpDrafter::DraftJob> jobs;
  for (size_t i = 0; i < states.size(); ++i) jobs.push_back({states[i].get(), 42 + int64_t(i), int(2 + i), {}});
  drafter.draft_batch(jobs, 151000);
  for (size_t i = 0; i < states.size(); ++i) {
    EXPECT_EQ(jobs[i].drafts, drafter.draft(*alone[i], 42 + int64_t(i), int(2 + i), 151000)) << i;
    EXPECT_EQ(jobs[i].drafts.size(), 2 + i);
    EXPECT_EQ(states[i]->mtp_pos, alone[i]->mtp_pos);
  }
}

}  // namespace
}  // namespace strata::engine
