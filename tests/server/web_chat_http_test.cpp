// GET / (the web chat page) and GET /v1/ledger over loopback: the page is public and carries
// its Content-Security-Policy; the ledger needs the API key and its numbers are `strata
// ledger`'s for the same config (DeepSeek-V4-Flash's, 1K to 1M tokens).
#include <httplib.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <thread>

#include "cli/run_command.h"
#include "core/error.h"
#include "models/registry.h"
#include "server/ledger_endpoint.h"
#include "server/server.h"
#include "server/test_model.h"

namespace strata::server {
namespace {

using json = nlohmann::json;

// The page and the ledger never reach the engine.
class NoEngine final : public Backend {
 public:
  uint64_t submit(engine::Request, engine::EventCallback) override { throw Error("no engine in this test"); }
  void cancel(uint64_t) override {}
  std::vector<engine::Event> replay(engine::Request) override { throw Error("no engine in this test"); }
  engine::EngineMetrics metrics() override { return {}; }
};

const std::string kConfig = std::string(STRATA_SHARED_DIR) + "/models/deepseek-v4-flash/config.json";

class WebChatHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto cfg = models::load_config(kConfig);
    ServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.api_key = "secret";
    o.model = test::model_info(cfg->facts().max_positions);
    o.cache_layout = cfg->cache_layout();
    o.log_format = LogFormat::off;
    server_ = std::make_unique<Server>(engine_, o);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
  }
  httplib::Client client(bool key) {
    httplib::Client c("127.0.0.1", port_);
    if (key) c.set_default_headers({{"Authorization", "Bearer secret"}});
    return c;
  }

  NoEngine engine_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(WebChatHttp, PageIsServedWithoutTheKey) {
  auto r = client(false).Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  const std::string csp = r->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(r->body.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(r->body.find("</html>"), std::string::npos);
  // Self-contained: nothing is loaded from elsewhere.
  for (const char* outside : {"src=\"http", "href=\"http", "@import", "url(http"})
    EXPECT_EQ(r->body.find(outside), std::string::npos) << outside;
  // Only GET / is open: the APIs the page calls still need the key.
  for (const char* path : {"/v1/models", "/metrics", "/v1/ledger"}) {
    auto a = client(false).Get(path);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 401) << path;
  }
  auto post = client(false).Post("/", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 401);
}

TEST_F(WebChatHttp, LedgerIsStrataLedgers) {
  auto r = client(true).Get("/v1/ledger?context=5000");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  const std::vector<int64_t> contexts = j["contexts"];
  ASSERT_EQ(contexts, ledger_contexts(1048576));
  ASSERT_EQ(contexts.front(), 1024);
  ASSERT_EQ(contexts.back(), 1048576);
  ASSERT_EQ(contexts.size(), 11u);  // 1K, 2K, ... 1M

  std::string args = "ledger --json --config " + strata::test::shell_quote(kConfig) + " --context 5000";
  for (int64_t n : contexts) args += " " + std::to_string(n);
  const auto cli = strata::test::run_strata(args);
  ASSERT_EQ(cli.code, 0) << cli.err;
  const json l = json::parse(cli.out);
  EXPECT_EQ(j["bytes_per_token"], l["bytes_per_token"]);
  EXPECT_EQ(j["fixed_bytes"], l["fixed_bytes"]);
  EXPECT_EQ(j["block_tokens"], l["block_tokens"]);
  EXPECT_EQ(j["at"]["context"], 5000);
  EXPECT_EQ(j["at"]["bytes"], l["contexts"][0]["bytes"]);
  const int64_t block = l["block_tokens"];
  for (size_t i = 0; i < contexts.size(); ++i) {
    EXPECT_EQ(j["bytes"][i], l["contexts"][i + 1]["bytes"]) << contexts[i];
    // Each kind: its fixed bytes and whole blocks, as the ledger's by_kind rows give them.
    int64_t sum = 0;
    for (auto& [kind, row] : l["by_kind"].items()) {
      const int64_t blocks = (contexts[i] + block - 1) / block;
      const int64_t want = row["fixed_bytes"].get<int64_t>() + blocks * row["bytes_per_block"].get<int64_t>();
      EXPECT_EQ(j["by_kind"][kind][i], want) << kind << " at " << contexts[i];
      sum += j["by_kind"][kind][i].get<int64_t>();
    }
    EXPECT_EQ(sum, j["bytes"][i]) << contexts[i];
  }
  EXPECT_EQ(j["by_kind"].size(), l["by_kind"].size());
}

TEST_F(WebChatHttp, LedgerContextMustBeInRange) {
  for (const char* q : {"-1", "abc", "1048577", "12x", ""}) {
    auto r = client(true).Get(("/v1/ledger?context=" + std::string(q)).c_str());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << q;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "context") << q;
  }
  auto zero = client(true).Get("/v1/ledger?context=0");
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->status, 200);
}

TEST(LedgerContexts, PowersOfTwoFromOneKToTheMaximum) {
  EXPECT_EQ(ledger_contexts(65536), (std::vector<int64_t>{1024, 2048, 4096, 8192, 16384, 32768, 65536}));
  EXPECT_EQ(ledger_contexts(5000), (std::vector<int64_t>{1024, 2048, 4096, 5000}));
  EXPECT_EQ(ledger_contexts(1024), (std::vector<int64_t>{64, 128, 256, 512, 1024}));
  EXPECT_EQ(ledger_contexts(100), (std::vector<int64_t>{6, 8, 16, 32, 64, 100}));
  EXPECT_EQ(ledger_contexts(1), (std::vector<int64_t>{1}));
  EXPECT_TRUE(ledger_contexts(0).empty());
}

}  // namespace
}  // namespace strata::server
