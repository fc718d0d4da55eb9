// Resuming a request from the tokens it had already generated (Request::accepted): for several
// cut points, greedy and seeded, with stop strings, penalties, logprobs and a JSON Schema, the
// resumed request's events continue the uninterrupted run's exactly (tokens, text, logprobs,
// finish and usage), the accepted tokens' events can be reported again, and a resume that
// would already be finished or holds a bad id is refused.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/dsv4_engine_fixture.h"
#include "models/dsv4_fixture.h"
#include "text/tokenizer.h"

namespace strata::engine {
namespace {

using testing::shared;

// Every event of every request, as delivered.
struct Events {
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, std::vector<Event>> by_id;
  size_t done = 0;
  EventCallback callback() {
    return [this](const Event& e) {
      std::lock_guard lk(mu);
      by_id[e.request_id].push_back(e);
      if (e.finish != FinishReason::none || e.cancelled || !e.error.empty()) ++done, cv.notify_all();
    };
  }
  void wait(size_t n) {
    std::unique_lock lk(mu);
    ASSERT_TRUE(cv.wait_for(lk, std::chrono::minutes(5), [&] { return done == n; }));
  }
};

std::map<uint64_t, std::vector<Event>> run(const std::vector<Request>& reqs) {
  Events ev;
  EngineOptions opt;
  opt.max_context = 512;
  Engine eng(shared().model, shared().tok, opt);
  for (const auto& r : reqs) eng.submit(r, ev.callback());
  ev.wait(reqs.size());
  return ev.by_id;
}

void expect_same(const Event& a, const Event& b, const std::string& where) {
  EXPECT_EQ(a.token, b.token) << where;
  EXPECT_EQ(a.text, b.text) << where;
  EXPECT_EQ(a.finish, b.finish) << where;
  EXPECT_EQ(a.generated_tokens, b.generated_tokens) << where;
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens) << where;
  ASSERT_EQ(a.logprobs.has_value(), b.logprobs.has_value()) << where;
  if (!a.logprobs) return;
  EXPECT_EQ(a.logprobs->logprob, b.logprobs->logprob) << where;  // bitwise: same float
  EXPECT_EQ(a.logprobs->rank, b.logprobs->rank) << where;
  ASSERT_EQ(a.logprobs->top.size(), b.logprobs->top.size()) << where;
  for (size_t i = 0; i < a.logprobs->top.size(); ++i) {
    EXPECT_EQ(a.logprobs->top[i].token, b.logprobs->top[i].token) << where;
    EXPECT_EQ(a.logprobs->top[i].logprob, b.logprobs->top[i].logprob) << where;
  }
}

Request base(uint64_t id) {
  Request r;
  r.id = id;
  for (int t = 0; t < 40 + int(id); ++t) r.prompt.push_back(int32_t(700 + 29 * t + 3 * int(id)));
  r.sampling.max_tokens = 24;
  r.sampling.ignore_eos = true;
  return r;
}

const char* kSchema = R"({"type":"object","properties":{"answer":{"enum":["yes","no"]},"count":{"type":"integer"}},
  "required":["answer","count"]})";

TEST(Resume, AfterKAcceptedTokensContinuesBitwise) {
  std::vector<Request> reqs;
  {
    Request greedy = base(1);
    greedy.sampling.temperature = 0;
    greedy.sampling.logprobs = 3;
    Request seeded = base(2);
    seeded.sampling.temperature = 0.9;
    seeded.sampling.top_p = 0.9;
    seeded.sampling.seed = 77;
    seeded.sampling.presence_penalty = 0.7;
    seeded.sampling.frequency_penalty = 0.3;
    seeded.sampling.repetition_penalty = 1.2;
    seeded.sampling.logprobs = 2;
    Request json_mode = base(3);
    json_mode.sampling.temperature = 1.0;
    json_mode.sampling.seed = 5;
    json_mode.sampling.ignore_eos = false;
    json_mode.sampling.max_tokens = 200;
    json_mode.sampling.structured = StructuredOutput::schema(kSchema);
    reqs = {greedy, seeded, json_mode};
  }
  // Stop strings taken from the free runs' own text across three tokens (the end of one, the
  // next, the start of the third), so that they match in the middle of the output and are
  // held back, partly matched, at some cuts.
  {
    auto free_run = run(reqs);
    for (uint64_t id : {1, 2}) {
      const auto& evs = free_run[id];
      size_t m = evs.size() / 2;
      while (m + 3 < evs.size() && (evs[m].text.empty() || evs[m + 1].text.empty() || evs[m + 2].text.empty())) ++m;
      ASSERT_LT(m + 3, evs.size()) << id;
      reqs[id - 1].sampling.stop = {evs[m].text.substr(evs[m].text.size() - 1) + evs[m + 1].text + evs[m + 2].text.substr(0, 1),
                                    "never-in-this-output"};
    }
  }
  const auto full = run(reqs);
  for (const auto& r : reqs) {
    ASSERT_TRUE(full.count(r.id));
    ASSERT_GE(full.at(r.id).size(), 4u) << r.id;
    EXPECT_EQ(full.at(r.id).back().finish, FinishReason::stop) << r.id;  // by the stop string / the grammar's end
  }

  // Cuts from 0 to the last token but one, all resumed at once in one engine (batched, their
  // prefills chunked together). Seeded and greedy draws do not depend on the id.
  std::vector<Request> resumed;
  std::map<uint64_t, std::pair<uint64_t, size_t>> cut_of;  // resumed id -> (original id, k)
  for (const auto& r : reqs) {
    const auto& evs = full.at(r.id);
    const size_t n = evs.size();
    for (size_t k = 0; k + 1 < n; ++k) {
      if (r.sampling.structured && k % 7 != 0 && k + 2 != n) continue;  // long: a sample of its cuts
      Request x = r;
      x.id = 1000 * r.id + k;
      for (size_t i = 0; i < k; ++i) x.accepted.push_back(evs[i].token);
      x.report_accepted = k % 2 == 1;
      cut_of[x.id] = {r.id, k};
      resumed.push_back(x);
    }
  }
  const auto got = run(resumed);
  for (const auto& [rid, cut] : cut_of) {
    const auto [id, k] = cut;
    const auto& want = full.at(id);
    auto tail = got.at(rid);
    if (k % 2 == 1) {  // reported again first: the same tokens and text, without logprobs
      ASSERT_EQ(tail.size(), want.size()) << "request " << id << " resumed after " << k;
      for (size_t j = 0; j < k; ++j) {
        EXPECT_EQ(tail[j].token, want[j].token) << id << " " << k << " " << j;
        EXPECT_EQ(tail[j].text, want[j].text) << id << " " << k << " " << j;
        EXPECT_EQ(tail[j].finish, FinishReason::none);
        EXPECT_FALSE(tail[j].logprobs);
      }
      tail.erase(tail.begin(), tail.begin() + long(k));
    }
    ASSERT_EQ(tail.size(), want.size() - k) << "request " << id << " resumed after " << k;
    for (size_t j = 0; j < tail.size(); ++j)
      expect_same(tail[j], want[k + j], "request " + std::to_string(id) + " after " + std::to_string(k) + ", event " +
                                            std::to_string(k + j));
  }
}

TEST(Resume, RefusesTokensThatEndTheRequestOrLeaveTheVocabulary) {
  Request r = base(4);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 6;
  const auto full = run({r});
  ASSERT_EQ(full.at(4).size(), 6u);
  EngineOptions opt;
  opt.max_context = 512;
  Engine eng(shared().model, shared().tok, opt);
  Request done = r;
  for (const auto& e : full.at(4)) done.accepted.push_back(e.token);  // max_tokens reached: nothing to resume
  EXPECT_THROW(eng.submit(done, nullptr), Error);
  Request bad = r;
  bad.accepted = {1, -3};
  EXPECT_THROW(eng.submit(bad, nullptr), Error);
  bad.accepted = {int32_t(shared().model->vocab_size())};
  EXPECT_THROW(eng.submit(bad, nullptr), Error);
  // A stop string completed by the accepted tokens' own text.
  Request stop = r;
  const std::string head = full.at(4)[0].text + full.at(4)[1].text + full.at(4)[2].text;
  ASSERT_FALSE(head.empty());
  stop.sampling.stop = {head};
  stop.accepted = {full.at(4)[0].token, full.at(4)[1].token, full.at(4)[2].token};
  EXPECT_THROW(eng.submit(stop, nullptr), Error);
  // The refused resumes left nothing behind: the same id is free for the real one.
  Request ok = r;
  ok.accepted = {full.at(4)[0].token};
  Events ev;
  eng.submit(ok, ev.callback());
  ev.wait(1);
  EXPECT_EQ(ev.by_id[4].size(), 5u);
}

}  // namespace
}  // namespace strata::engine
