// Engine::requests(): what the server's introspection lists — running and waiting requests
// with their token counts and the cache bytes each holds in the pool.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "engine/engine.h"
#include "engine/engine_harness.h"
#include "models/dsv4_fixture.h"
#include "text/tokenizer.h"

namespace strata::engine {
namespace {

TEST(RequestInfo, ListsRunningAndWaitingRequestsWithTheirCache) {
  dsv4::testing::TinyModel tiny;
  std::shared_ptr<const models::Model> model = std::move(tiny.model);
  auto tok = std::make_shared<const Tokenizer>(Tokenizer::load(std::string(STRATA_SHARED_DIR) + "/tokenizers/deepseek-v3"));
  EngineOptions opt;
  opt.max_running = 1;
  opt.max_context = 512;
  Engine eng(model, tok, opt);
  EXPECT_TRUE(eng.requests().empty());
  // The first request streams until the test has looked; the others wait behind it.
  std::promise<void> looked;
  std::shared_future<void> go = looked.get_future().share();
  std::atomic<int> events{0};
  testing::Collector c;
  auto inner = c.callback();
  for (uint64_t id = 1; id <= 3; ++id) {
    Request r;
    r.id = id;
    for (int t = 0; t < 40 + int(id); ++t) r.prompt.push_back(int32_t(1000 + t));
    r.sampling.temperature = 0;
    r.sampling.max_tokens = 8;
    r.sampling.ignore_eos = true;
    eng.submit(r, [&, id](const Event& e) {
      if (id == 1 && ++events == 3) go.wait();  // hold the engine after the third token
      inner(e);
    });
  }
  std::vector<RequestInfo> list;
  for (int i = 0; i < 200; ++i) {
    list = eng.requests();
    if (!list.empty() && list[0].running && list[0].generated_tokens >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].id, 1u);
  EXPECT_TRUE(list[0].running);
  EXPECT_EQ(list[0].prompt_tokens, 41);
  EXPECT_EQ(list[0].max_tokens, 8);
  EXPECT_GE(list[0].generated_tokens, 2);
  EXPECT_GE(list[0].context_tokens, 41);
  EXPECT_GT(list[0].cache_bytes, 0);
  EXPECT_FALSE(list[0].structured);
  for (size_t k = 1; k < 3; ++k) {
    EXPECT_EQ(list[k].id, k + 1);
    EXPECT_FALSE(list[k].running);
    EXPECT_EQ(list[k].generated_tokens, 0);
    EXPECT_EQ(list[k].cache_bytes, 0);
    EXPECT_EQ(list[k].prompt_tokens, 41 + int64_t(k));
  }
  EXPECT_GE(list[1].age_seconds, 0.0);
  looked.set_value();
  c.wait_all(3);
  // The list is published at the end of each step, just after the last events are delivered.
  bool empty = false;
  for (int i = 0; i < 500 && !empty; ++i) {
    empty = eng.requests().empty();
    if (!empty) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(empty);
}

}  // namespace
}  // namespace strata::engine
