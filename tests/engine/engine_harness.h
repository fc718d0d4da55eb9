// What the engine tests share: a request's outcome, a collector of engine events that lets a
// test wait for requests to end, a mix of requests (lengths, sampling modes, logprobs), and a
// request run alone through the tests' reference decode loop.
#pragma once
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/reference_generation.h"
#include "models/model.h"
#include "text/tokenizer.h"

namespace strata::engine::testing {

struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<std::string> texts;  // per event
  std::string text;
  FinishReason finish = FinishReason::none;
  bool cancelled = false, done = false;
  std::string error;
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_prompt_tokens = 0;
  bool operator==(const Outcome& o) const {
    return tokens == o.tokens && text == o.text && finish == o.finish && cancelled == o.cancelled && error == o.error;
  }
};

// Collects events per request and lets a test wait for all of them to end.
struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, Outcome> out;
  EventCallback callback() {
    return [this](const Event& e) {
      std::lock_guard lk(mu);
      auto& o = out[e.request_id];
      ASSERT_FALSE(o.done) << "event after the last one";
      if (e.kind == EventKind::token) o.tokens.push_back(e.token);
      o.texts.push_back(e.text);
      o.text += e.text;
      const bool last = e.finish != FinishReason::none || e.cancelled || !e.error.empty();
      if (last) {
        o.finish = e.finish;
        o.cancelled = e.cancelled;
        o.error = e.error;
        o.prompt_tokens = e.prompt_tokens;
        o.generated_tokens = e.generated_tokens;
        o.cached_prompt_tokens = e.cached_prompt_tokens;
        o.done = true;
        cv.notify_all();
      }
    };
  }
  void wait_all(size_t n) {
    std::unique_lock lk(mu);
    ASSERT_TRUE(cv.wait_for(lk, std::chrono::minutes(10), [&] {
      size_t d = 0;
      for (auto& [id, o] : out) d += o.done;
      return d == n;
    }));
  }
};

// `count` requests with prompt ids in [10, 10 + id_range).
inline std::vector<Request> mixed_requests(int count, int32_t id_range = 120000) {
  std::vector<Request> rs;
  for (int i = 0; i < count; ++i) {
    Request r;
    r.id = 100 + uint64_t(i);
    const int len = 3 + (i * 7) % 37;
    for (int t = 0; t < len; ++t) r.prompt.push_back(int32_t((i * 1009 + t * 131) % id_range + 10));
    r.sampling.max_tokens = 4 + (i * 3) % 9;
    if (i % 3 == 0) r.sampling.temperature = 0;
    if (i % 3 == 1) r.sampling.temperature = 0.9, r.sampling.top_p = 0.8;
    if (i % 3 == 2) r.sampling.temperature = 1.0, r.sampling.seed = 42 + uint64_t(i), r.sampling.top_k = 50;
    if (i % 4 == 3) r.sampling.logprobs = 2;
    rs.push_back(r);
  }
  return rs;
}

// The request alone on a fresh state of `m`, through the reference loop.
inline Outcome run_alone(const models::Model& m, const Tokenizer& tok, const Request& r) {
  auto st = m.new_sequence();
  Outcome o;
  generate(m, *st, tok, r.prompt, r.sampling, r.id, [&](const GenerationEvent& e) {
    o.tokens.push_back(e.token);
    o.text += e.text;
    o.finish = e.finish;
    return true;
  });
  o.done = true;
  return o;
}

// Runs r on its own engine, exports it to `path` after its fifth event and cancels it; returns
// the events it had by then. `then` runs on that engine once the request has ended.
inline Outcome export_after_five(const std::shared_ptr<const models::Model>& m,
                                 const std::shared_ptr<const Tokenizer>& tok, const EngineOptions& opt,
                                 const Request& r, const std::string& path,
                                 const std::function<void(Engine&)>& then = {}) {
  Collector first;
  std::promise<void> some;
  std::atomic<int> n{0};
  auto inner = first.callback();
  Engine eng(m, tok, opt);
  eng.submit(r, [&](const Event& e) {
    inner(e);
    if (++n == 5) some.set_value();
  });
  some.get_future().wait();
  eng.export_request(r.id, path);
  eng.cancel(r.id);
  first.wait_all(1);
  if (then) then(eng);
  return first.out[r.id];
}

}  // namespace strata::engine::testing
