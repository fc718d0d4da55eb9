// The HTTP layer end to end over loopback against a scripted engine double: routes, auth,
// limits, SSE framing, error mapping, cancellation on disconnect, shutdown answers, and with a
// journal the event ids, Idempotency-Key and /v1/requests/{id}.
#include "server/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/numerics.h"
#include "engine/logit_bias.h"
#include "server/journal.h"
#include "server/test_model.h"

namespace strata::server {
namespace {

using namespace std::chrono_literals;
using ojson = nlohmann::ordered_json;

// Emits max_tokens tokens ("w0 ", "w1 ", ... or `texts`) `delay` apart on its own thread per
// request, then finish = length; a cancelled request ends with cancelled = true.
class FakeEngine final : public Backend {
 public:
  std::atomic<bool> queue_full{false};
  std::chrono::milliseconds delay{1};
  std::vector<std::string> texts;      // the first tokens' texts, when set before the request
  std::atomic<int64_t> stall_at{-1};   // from this token on, emits nothing until cancelled

  ~FakeEngine() override {
    for (auto& t : threads_) t.join();
  }
  uint64_t submit(engine::Request r, engine::EventCallback cb) override {
    if (queue_full) throw engine::QueueFull("queue full");
    if (r.sampling.stop.size() == 1 && r.sampling.stop[0] == "engine-error") throw Error("rejected by the engine");
    std::lock_guard lk(mu_);
    const uint64_t id = ++next_;
    submitted_.push_back(r);
    threads_.emplace_back([this, id, r, cb, own = texts] {
      const int64_t n = std::min<int64_t>(r.sampling.max_tokens.value_or(4), 1000);
      for (int64_t i = 0; i < n; ++i) {
        std::this_thread::sleep_for(delay);
        if (stall_at >= 0 && i >= stall_at)
          while (!cancelled(id)) std::this_thread::sleep_for(1ms);
        engine::Event e;
        e.request_id = id;
        e.token = int32_t(100 + i);
        e.text = size_t(i) < own.size() ? own[size_t(i)] : "w" + std::to_string(i) + " ";
        if (cancelled(id)) {
          e = engine::Event{};
          e.request_id = id;
          e.kind = engine::EventKind::finished;
          e.cancelled = true;
          cb(e);
          return;
        }
        if (i + 1 == n) {
          e.finish = FinishReason::length;
          e.prompt_tokens = int64_t(r.prompt.size());
          e.generated_tokens = n;
        }
        cb(e);
      }
    });
    return id;
  }
  void cancel(uint64_t id) override {
    std::lock_guard lk(mu_);
    cancelled_.insert(id);
  }
  // The events submit() gave for these tokens: cancelled when they stop short of max_tokens.
  std::vector<engine::Event> replay(engine::Request r) override {
    std::lock_guard lk(mu_);
    ++replays_;
    const int64_t n = std::min<int64_t>(r.sampling.max_tokens.value_or(4), 1000), k = int64_t(r.accepted.size());
    if (k > n) throw Error("more tokens than max_tokens");
    std::vector<engine::Event> out;
    for (int64_t i = 0; i < k; ++i) {
      engine::Event e;
      e.token = r.accepted[size_t(i)];
      e.text = size_t(i) < texts.size() ? texts[size_t(i)] : "w" + std::to_string(i) + " ";
      out.push_back(e);
    }
    if (k < n || out.empty()) {
      out.emplace_back().kind = engine::EventKind::finished;
      out.back().cancelled = true;
    } else {
      out.back().finish = FinishReason::length;
    }
    out.back().prompt_tokens = int64_t(r.prompt.size());
    out.back().generated_tokens = k;
    return out;
  }
  size_t replays() {
    std::lock_guard lk(mu_);
    return replays_;
  }
  engine::EngineMetrics metrics() override {
    engine::EngineMetrics m;
    std::lock_guard lk(mu_);
    m.cancelled = int64_t(cancelled_.size());
    m.pool_bytes_total = 1000;
    m.pool_bytes_by_kind = {{"swa", 0}};
    return m;
  }
  std::vector<engine::RequestInfo> requests() override {
    engine::RequestInfo a, b;
    a.id = 7, a.running = true, a.prompt_tokens = 12, a.generated_tokens = 3, a.cached_prompt_tokens = 8;
    a.max_tokens = 16, a.context_tokens = 14, a.cache_bytes = 4096, a.age_seconds = 1.5, a.structured = true;
    b.id = 9, b.prompt_tokens = 5, b.max_tokens = 4;
    return {a, b};
  }
  bool cancelled(uint64_t id) {
    std::lock_guard lk(mu_);
    return cancelled_.count(id) > 0;
  }
  size_t cancel_count() {
    std::lock_guard lk(mu_);
    return cancelled_.size();
  }
  std::vector<engine::Request> submitted() {
    std::lock_guard lk(mu_);
    return submitted_;
  }

 private:
  std::mutex mu_;
  uint64_t next_ = 0;
  std::vector<std::thread> threads_;
  std::set<uint64_t> cancelled_;
  std::vector<engine::Request> submitted_;
  size_t replays_ = 0;
};

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string post_request(const std::string& body, bool close, const std::string& path = "/v1/chat/completions") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\n"
         "Content-Type: application/json\r\n" + std::string(close ? "Connection: close\r\n" : "") +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Sends a request and reads until the server closes the connection.
std::string raw_exchange(int port, const std::string& req) {
  int fd = connect_loopback(port);
  if (fd < 0) return "connect failed";
  std::string got;
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == ssize_t(req.size())) {
    char buf[4096];
    ssize_t k;
    while ((k = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, size_t(k));
  }
  ::close(fd);
  return got;
}

// A streaming POST on its own connection, read as far as a test needs while the stream stays
// open (to cancel it, or to drop it).
class OpenStream {
 public:
  OpenStream(int port, const std::string& body, const std::string& path = "/v1/chat/completions",
             const std::string& headers = "")
      : fd_(connect_loopback(port)) {
    std::string req = post_request(body, false, path);
    req.insert(req.find("\r\n") + 2, headers);
    sent_ = fd_ >= 0 && ::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) == ssize_t(req.size());
  }
  ~OpenStream() { close(); }
  OpenStream(const OpenStream&) = delete;
  OpenStream& operator=(const OpenStream&) = delete;
  bool sent() const { return sent_; }
  // Reads until `s` has arrived; false when the connection ended first.
  bool read_until(const std::string& s) {
    char buf[4096];
    while (got_.find(s) == std::string::npos) {
      const ssize_t k = fd_ < 0 ? 0 : ::recv(fd_, buf, sizeof buf, 0);
      if (k <= 0) return false;
      got_.append(buf, size_t(k));
    }
    return true;
  }
  // The response's X-Request-Id ("" until its headers have been read).
  std::string request_id() const {
    const size_t at = got_.find("X-Request-Id: ");
    return at == std::string::npos ? "" : got_.substr(at + 14, got_.find("\r\n", at) - at - 14);
  }
  const std::string& got() const { return got_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  bool sent_ = false;
  std::string got_;
};

class ServerHttp : public ::testing::Test {
 protected:
  virtual void configure(ServerOptions&) {}
  void SetUp() override {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.api_key = "secret";
    o.max_body_bytes = 64 * 1024;
    o.http_threads = 48;
    o.model = test::model_info();
    o.log_sink = [this](const std::string& line) {
      std::lock_guard lk(log_mu_);
      log_.push_back(line);
    };
    configure(o);
    options_ = o;
    server_ = std::make_unique<Server>(engine_, o);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
  }
  httplib::Client client(bool key = true) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20, 0);
    if (key) c.set_default_headers({{"Authorization", "Bearer secret"}});
    return c;
  }
  httplib::Result post(const std::string& path, const std::string& body) {
    return client().Post(path.c_str(), body, "application/json");
  }
  static void expect_error(const httplib::Result& r, int status, const std::string& param = "") {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    ojson j = ojson::parse(r->body);
    ASSERT_TRUE(j.contains("error")) << r->body;
    for (const char* k : {"message", "type", "param", "code"}) EXPECT_TRUE(j["error"].contains(k)) << r->body;
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], ojson(param)) << r->body;
    }
  }
  // The JSON payloads of an SSE body, "[DONE]" as a string.
  static std::vector<ojson> sse(const std::string& body) {
    std::vector<ojson> out;
    size_t p = 0;
    while ((p = body.find("data: ", p)) != std::string::npos) {
      size_t e = body.find("\n\n", p);
      std::string d = body.substr(p + 6, e - p - 6);
      out.push_back(d == "[DONE]" ? ojson("[DONE]") : ojson::parse(d));
      p = e;
    }
    return out;
  }

  // The first log line containing every one of `parts` (lines are written after the answer:
  // waits up to 5 s); "" when there is none.
  std::string log_line(const std::vector<std::string>& parts) {
    const auto until = std::chrono::steady_clock::now() + 5s;
    do {
      {
        std::lock_guard lk(log_mu_);
        for (const auto& l : log_) {
          bool all = true;
          for (const auto& p : parts) all = all && l.find(p) != std::string::npos;
          if (all) return l;
        }
      }
      std::this_thread::sleep_for(10ms);
    } while (std::chrono::steady_clock::now() < until);
    return "";
  }

  FakeEngine engine_;
  ServerOptions options_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int port_ = 0;
};

const std::string kChat = R"({"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":3)";

TEST_F(ServerHttp, HealthModelsAndApiKey) {
  auto h = client(false).Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  expect_error(client(false).Get("/v1/models"), 401);
  expect_error(client(false).Get("/metrics"), 401);
  expect_error(client(false).Post("/v1/chat/completions", kChat + "}", "application/json"), 401);
  httplib::Client wrong("127.0.0.1", port_);
  wrong.set_default_headers({{"Authorization", "Bearer nope"}});
  expect_error(wrong.Get("/v1/models"), 401);
  auto m = client().Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  ojson j = ojson::parse(m->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "tiny");
  EXPECT_EQ(client().Get("/v1/models/tiny")->status, 200);
  expect_error(client().Get("/v1/models/other"), 404);
  expect_error(client().Get("/v1/nothing"), 404);
}

// GET /requests: the engine's running and waiting requests, behind the key.
TEST_F(ServerHttp, RequestsListsRunningAndWaiting) {
  expect_error(client(false).Get("/requests"), 401);
  auto r = client().Get("/requests");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const ojson j = ojson::parse(r->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["running"], 1);
  EXPECT_EQ(j["waiting"], 1);
  ASSERT_EQ(j["data"].size(), 2u);
  const ojson& a = j["data"][0];
  EXPECT_EQ(a["id"], 7);
  EXPECT_EQ(a["state"], "running");
  EXPECT_EQ(a["prompt_tokens"], 12);
  EXPECT_EQ(a["cached_prompt_tokens"], 8);
  EXPECT_EQ(a["generated_tokens"], 3);
  EXPECT_EQ(a["max_tokens"], 16);
  EXPECT_EQ(a["context_tokens"], 14);
  EXPECT_EQ(a["cache_bytes"], 4096);
  EXPECT_DOUBLE_EQ(a["age_seconds"].get<double>(), 1.5);
  EXPECT_EQ(a["structured_output"], true);
  EXPECT_EQ(j["data"][1]["state"], "waiting");
  EXPECT_EQ(j["data"][1]["cache_bytes"], 0);
  expect_error(client().Post("/requests", "{}", "application/json"), 404);
}

// The process's numerics profile on each model object (a field OpenAI clients ignore) and as
// a /metrics info gauge, read when asked: what the engine computes with now.
TEST_F(ServerHttp, ModelsAndMetricsReportTheNumericsProfile) {
  for (Numerics n : {Numerics::fast, Numerics::exact}) {
    ScopedNumerics scoped(n);
    const std::string name(numerics_name(n));
    auto list = client().Get("/v1/models");
    ASSERT_TRUE(list);
    EXPECT_EQ(ojson::parse(list->body)["data"][0]["numerics"], name) << list->body;
    auto one = client().Get("/v1/models/tiny");
    ASSERT_TRUE(one);
    EXPECT_EQ(ojson::parse(one->body)["numerics"], name) << one->body;
    auto m = client().Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_NE(m->body.find("\nstrata_numerics_info{profile=\"" + name + "\"} 1\n"), std::string::npos) << m->body;
  }
}

TEST_F(ServerHttp, ChatNonStreaming) {
  auto r = post("/v1/chat/completions", kChat + R"(,"n":2})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  ojson j = ojson::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "tiny");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "w0 w1 w2 ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + 6);
  EXPECT_EQ(engine_.submitted().size(), 2u);
}

TEST_F(ServerHttp, ChatStreaming) {
  auto r = post("/v1/chat/completions", kChat + R"(,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  auto ev = sse(r->body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(ev[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  std::string finish;
  for (size_t i = 0; i + 2 < ev.size(); ++i) {
    EXPECT_TRUE(ev[i]["usage"].is_null());
    text += ev[i]["choices"][0]["delta"].value("content", "");
    if (!ev[i]["choices"][0]["finish_reason"].is_null()) finish = ev[i]["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, "w0 w1 w2 ");
  EXPECT_EQ(finish, "length");
  const ojson& usage = ev[ev.size() - 2];
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3);
}

TEST_F(ServerHttp, CompletionsStreamingWithIdsPrompt) {
  auto r = post("/v1/completions", R"({"model":"tiny","prompt":[1,2,3],"max_tokens":2,"stream":true})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto ev = sse(r->body);
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(ev[0]["object"], "text_completion");
  EXPECT_EQ(engine_.submitted().at(0).prompt, (std::vector<int32_t>{1, 2, 3}));
}

TEST_F(ServerHttp, BadInputIsAnsweredNotFatal) {
  expect_error(post("/v1/chat/completions", "{not json"), 400);
  expect_error(post("/v1/chat/completions", R"({"messages":[]})"), 400, "messages");
  expect_error(post("/v1/chat/completions", R"({"model":"x","messages":[{"role":"user","content":"a"}]})"), 404, "model");
  expect_error(post("/v1/chat/completions", kChat + R"(,"temperature":"hot"})"), 400, "temperature");
  expect_error(post("/v1/chat/completions", kChat + R"(,"max_tokens":100000})"), 400, "max_tokens");
  expect_error(post("/v1/completions", R"({"prompt":[1,99999999]})"), 400, "prompt");
  expect_error(post("/v1/chat/completions", kChat + R"(,"stop":"engine-error"})"), 400);
  expect_error(post("/v1/chat/completions", std::string(70 * 1024, ' ')), 413);
  // still serving
  EXPECT_EQ(post("/v1/chat/completions", kChat + "}")->status, 200);
}

TEST_F(ServerHttp, QueueFullIs429) {
  engine_.queue_full = true;
  auto full = post("/v1/chat/completions", kChat + "}");
  expect_error(full, 429);
  // No request has finished yet: the estimate is its floor.
  EXPECT_EQ(full->get_header_value("Retry-After"), "1");
  engine_.queue_full = false;
  EXPECT_EQ(post("/v1/chat/completions", kChat + "}")->status, 200);
}

TEST_F(ServerHttp, DisconnectCancels) {
  engine_.delay = 20ms;
  OpenStream stream(port_, R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":500,"stream":true})");
  ASSERT_TRUE(stream.sent());
  ASSERT_TRUE(stream.read_until("w2 "));
  stream.close();
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (engine_.cancel_count() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine_.cancel_count(), 1u);
  auto until_idle = std::chrono::steady_clock::now() + 5s;
  while (server_->active_requests() != 0 && std::chrono::steady_clock::now() < until_idle) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server_->active_requests(), 0);
  auto m = client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("strata_engine_requests_total{outcome=\"cancelled\"} 1"), std::string::npos);
  EXPECT_NE(log_line({"request", "path=/v1/chat/completions", "status=200", "outcome=cancelled"}), "");
}

// Raw sockets: httplib 0.11's client itself drops some concurrent POSTs (its server does not).
TEST_F(ServerHttp, ConcurrentStreams) {
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  const std::string body = kChat + R"(,"stream":true})";
  for (int i = 0; i < 32; ++i)
    ts.emplace_back([&] {
      std::string r = raw_exchange(port_, post_request(body, true));
      if (r.rfind("HTTP/1.1 200", 0) == 0 && r.find("data: [DONE]") != std::string::npos) ++ok;
      else ADD_FAILURE() << r;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok, 32);
}

TEST_F(ServerHttp, RequestIdsAndLogLines) {
  auto r = post("/v1/chat/completions", kChat + "}");
  ASSERT_TRUE(r);
  const std::string id = ojson::parse(r->body)["id"];
  EXPECT_EQ(r->get_header_value("X-Request-Id"), id);
  const std::string line = log_line({"id=" + id});
  EXPECT_NE(line.find("INFO request id=" + id + " method=POST path=/v1/chat/completions status=200 prompt_tokens="),
            std::string::npos)
      << line;
  for (const char* part : {" completion_tokens=3 ", " cached_tokens=0 ", " ttft_ms=", " total_ms=", " tokens_per_s=",
                           " finish=length ", " outcome=ok"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
  // A stream is logged when it ends, with its tokens.
  auto s = post("/v1/completions", R"({"prompt":"x","max_tokens":2,"n":2,"stream":true})");
  ASSERT_TRUE(s);
  const std::string sid = s->get_header_value("X-Request-Id");
  EXPECT_EQ(sid.rfind("cmpl-", 0), 0u);
  EXPECT_NE(log_line({"id=" + sid, "completion_tokens=4 ", "outcome=ok"}), "");
  // An error: its own line with the message, then the request's.
  auto bad = post("/v1/chat/completions", kChat + R"(,"temperature":7})");
  const std::string bid = bad->get_header_value("X-Request-Id");
  EXPECT_FALSE(bid.empty());
  const std::string err = log_line({"WARN error id=" + bid});
  EXPECT_NE(err.find("status=400 type=invalid_request_error param=temperature message=\"temperature must be in [0, 2]\""),
            std::string::npos)
      << err;
  EXPECT_NE(log_line({"INFO request id=" + bid, "status=400", "outcome=error"}), "");
  // Routes that are not completions, and answers httplib gives before routing.
  auto h = client(false).Get("/health");
  EXPECT_NE(log_line({"INFO request id=" + h->get_header_value("X-Request-Id"), "path=/health status=200 total_ms="}), "");
  auto unauth = client(false).Get("/v1/models");
  EXPECT_NE(log_line({"error id=" + unauth->get_header_value("X-Request-Id"), "code=invalid_api_key"}), "");
  auto big = post("/v1/completions", std::string(70 * 1024, ' '));
  EXPECT_NE(log_line({"error id=" + big->get_header_value("X-Request-Id"), "status=413", "code=request_too_large"}), "");
}

TEST_F(ServerHttp, WithoutCorsNoHeadersAndOptionsIs405) {
  httplib::Client c = client();
  auto r = c.Get("/v1/models", {{"Origin", "http://app.example"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  httplib::Client anon = client(false);
  auto o = anon.Options("/v1/chat/completions", {{"Origin", "http://app.example"}, {"Access-Control-Request-Method", "POST"}});
  expect_error(o, 405);
  EXPECT_EQ(o->get_header_value("Allow"), "GET, POST, DELETE");
  EXPECT_FALSE(o->has_header("Access-Control-Allow-Origin"));
  // Without --metrics-public, /metrics needs the key like the API.
  expect_error(anon.Get("/metrics"), 401);
}

TEST_F(ServerHttp, TokenizeAndDetokenize) {
  auto t = post("/tokenize", R"({"content":"Hello world","with_pieces":true})");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  ojson j = ojson::parse(t->body);
  ojson ids = ojson::array();
  for (const auto& e : j["tokens"]) ids.push_back(e["id"]);
  EXPECT_EQ(ids, ojson(test::tokenizer().encode("Hello world")));
  auto d = post("/detokenize", ojson({{"tokens", ids}}).dump());
  ASSERT_TRUE(d);
  EXPECT_EQ(ojson::parse(d->body), ojson({{"content", "Hello world"}}));
  expect_error(post("/detokenize", R"({"tokens":[1,99999999]})"), 400, "tokens");
  expect_error(post("/tokenize", R"({"text":"x"})"), 400, "content");
  expect_error(client(false).Post("/tokenize", R"({"content":"x"})", "application/json"), 401);
  EXPECT_NE(client().Get("/metrics")->body.find(R"(route="/tokenize",status="200")"), std::string::npos);
}

TEST_F(ServerHttp, EchoLogitBiasAndUnsupportedFields) {
  auto r = post("/v1/completions", R"({"prompt":"Hi there","max_tokens":2,"echo":true,"logit_bias":{"7":-100,"9":3}})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(ojson::parse(r->body)["choices"][0]["text"], "Hi therew0 w1 ");
  EXPECT_EQ(engine_.submitted().at(0).sampling.logit_bias, (LogitBias{{7, -100.0}, {9, 3.0}}));
  auto s = post("/v1/completions", R"({"prompt":"Hi there","max_tokens":2,"echo":true,"stream":true})");
  ASSERT_TRUE(s);
  auto ev = sse(s->body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev[0]["choices"][0]["text"], "Hi therew0 ");
  expect_error(post("/v1/chat/completions",
                    kChat + R"(,"response_format":{"type":"json_schema","json_schema":{"schema":{"pattern":"a"}}}})"),
               400, "response_format");
  expect_error(post("/v1/completions", R"({"prompt":"x","best_of":2})"), 400, "best_of");
  expect_error(post("/v1/chat/completions", kChat + R"(,"logit_bias":{"999999999":1}})"), 400, "logit_bias");
  EXPECT_EQ(engine_.submitted().size(), 2u);  // the refused ones never reached the engine
}

class ServerHttpCors : public ServerHttp {
 protected:
  void configure(ServerOptions& o) override {
    o.cors_origins = {"http://app.example"};
    o.metrics_public = true;
  }
};

TEST_F(ServerHttpCors, PreflightNeedsNoKey) {
  httplib::Client anon = client(false);
  auto p = anon.Options("/v1/chat/completions", {{"Origin", "http://app.example"},
                                                 {"Access-Control-Request-Method", "POST"},
                                                 {"Access-Control-Request-Headers", "authorization,content-type,x-stainless-arch"}});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 204);
  EXPECT_EQ(p->get_header_value("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_EQ(p->get_header_value_count("Access-Control-Allow-Origin"), 1u);
  EXPECT_EQ(p->get_header_value("Access-Control-Allow-Methods"), "GET, POST, DELETE, OPTIONS");
  EXPECT_EQ(p->get_header_value("Access-Control-Allow-Headers"), "Authorization, Content-Type, X-API-Key, x-stainless-arch");
  EXPECT_EQ(p->get_header_value("Access-Control-Max-Age"), "600");
  EXPECT_TRUE(p->body.empty());
  auto bad = anon.Options("/v1/chat/completions", {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "POST"}});
  expect_error(bad, 403);
  EXPECT_FALSE(bad->has_header("Access-Control-Allow-Origin"));
}

TEST_F(ServerHttpCors, EveryAnswerToAnAllowedOriginCarriesTheHeader) {
  const httplib::Headers origin = {{"Origin", "http://app.example"}};
  httplib::Client c = client(), anon = client(false);
  std::vector<httplib::Result> answers;
  answers.push_back(c.Get("/v1/models", origin));                                  // 200
  answers.push_back(anon.Get("/v1/models", origin));                               // 401
  answers.push_back(c.Get("/v1/nothing", origin));                                 // 404
  answers.push_back(c.Post("/v1/chat/completions", origin, "{", "application/json"));  // 400
  answers.push_back(c.Post("/v1/chat/completions", origin, std::string(70 * 1024, ' '), "application/json"));  // 413
  answers.push_back(c.Post("/v1/chat/completions", origin, kChat + R"(,"stream":true})", "application/json"));  // SSE
  answers.push_back(anon.Get("/health", origin));
  for (size_t i = 0; i < answers.size(); ++i) {
    ASSERT_TRUE(answers[i]) << i;
    EXPECT_EQ(answers[i]->get_header_value("Access-Control-Allow-Origin"), "http://app.example") << i;
    EXPECT_EQ(answers[i]->get_header_value_count("Access-Control-Allow-Origin"), 1u) << i;
    EXPECT_EQ(answers[i]->get_header_value("Vary"), "Origin") << i;
  }
  EXPECT_EQ(answers[5]->status, 200);
  EXPECT_NE(answers[5]->body.find("data: [DONE]"), std::string::npos);
  // Another origin, or none: no header.
  EXPECT_FALSE(c.Get("/v1/models", {{"Origin", "http://evil.example"}})->has_header("Access-Control-Allow-Origin"));
  EXPECT_FALSE(c.Get("/v1/models")->has_header("Access-Control-Allow-Origin"));
}

TEST_F(ServerHttpCors, MetricsPublicApiStillNeedsTheKey) {
  httplib::Client anon = client(false);
  auto m = anon.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("strata_http_requests_total"), std::string::npos);
  expect_error(anon.Get("/v1/models"), 401);
  expect_error(anon.Post("/v1/chat/completions", kChat + "}", "application/json"), 401);
  expect_error(anon.Post("/tokenize", R"({"content":"x"})", "application/json"), 401);
}

TEST_F(ServerHttp, ShuttingDownIs503) {
  server_->begin_shutdown();
  expect_error(post("/v1/chat/completions", kChat + "}"), 503);
  EXPECT_EQ(client().Get("/health")->status, 503);
}

// With a journal: answers rendered again from their events (resumable_request.h).
class ServerHttpJournal : public ServerHttp {
 protected:
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() / ("strata_http_journal_" + std::to_string(::getpid()));
  std::unique_ptr<Journal> journal_;
  void configure(ServerOptions& o) override {
    std::filesystem::remove_all(dir_);
    journal_ = std::make_unique<Journal>(options());
    o.journal = journal_.get();
  }
  // Syncs only when a test asks (or the journal closes): how tokens fall into records then does
  // not depend on the machine's speed against the journal's sync interval.
  JournalOptions options() const {
    JournalOptions jo;
    jo.dir = dir_.string();
    jo.sync_interval = std::chrono::hours(1);
    return jo;
  }
  void TearDown() override {
    ServerHttp::TearDown();
    journal_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Stops the server and starts another on the same journal, as a restart does; returns the
  // number of requests it resumed.
  size_t restart() {
    ServerHttp::TearDown();
    server_.reset();
    journal_.reset();
    journal_ = std::make_unique<Journal>(options());
    options_.journal = journal_.get();
    server_ = std::make_unique<Server>(engine_, options_);
    const size_t resumed = server_->resume_journal();
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
    return resumed;
  }
  // The SSE events of a body as (id, data) pairs.
  static std::vector<std::pair<std::string, std::string>> events(const std::string& body) {
    std::vector<std::pair<std::string, std::string>> out;
    size_t p = 0;
    while ((p = body.find("id: ", p)) != std::string::npos) {
      const size_t nl = body.find('\n', p), end = body.find("\n\n", p);
      out.emplace_back(body.substr(p + 4, nl - p - 4), body.substr(nl + 7, end - nl - 7));
      p = end;
    }
    return out;
  }
};

TEST_F(ServerHttpJournal, AStreamIsSentAgainFromItsLastEventId) {
  const std::string body = kChat + R"(,"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}})";
  httplib::Headers key{{"Idempotency-Key", "k1"}};
  auto first = client().Post("/v1/chat/completions", key, body, "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  const auto all = events(first->body);
  ASSERT_GE(all.size(), 8u);  // the role chunk, six tokens (the last with the finish), usage, [DONE]
  for (size_t i = 0; i + 2 < all.size(); ++i) EXPECT_EQ(all[i].first, std::to_string(i + 1));
  EXPECT_EQ(all[all.size() - 2].first, "usage");
  EXPECT_EQ(all.back(), (std::pair<std::string, std::string>{"done", "[DONE]"}));
  const std::string id = first->get_header_value("X-Request-Id");
  EXPECT_EQ(engine_.submitted().size(), 1u);

  // The same body and key again, after event 3: the rest, and no new request.
  key.emplace("Last-Event-ID", "3");
  auto rest = client().Post("/v1/chat/completions", key, body, "application/json");
  ASSERT_TRUE(rest);
  ASSERT_EQ(rest->status, 200) << rest->body;
  EXPECT_EQ(events(rest->body), std::vector(all.begin() + 3, all.end()));
  EXPECT_EQ(rest->get_header_value("X-Request-Id"), id);
  EXPECT_EQ(engine_.submitted().size(), 1u);

  // By id: the stream from an event, everything after "usage", the whole response.
  auto c = client();
  auto by_id = c.Get(("/v1/requests/" + id + "/stream").c_str(), {{"Last-Event-ID", "5"}});
  ASSERT_TRUE(by_id);
  EXPECT_EQ(events(by_id->body), std::vector(all.begin() + 5, all.end()));
  by_id = c.Get(("/v1/requests/" + id + "/stream").c_str(), {{"Last-Event-ID", "usage"}});
  ASSERT_TRUE(by_id);
  EXPECT_EQ(events(by_id->body), std::vector(all.end() - 1, all.end()));
  auto whole = c.Get(("/v1/requests/" + id).c_str());
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const ojson j = ojson::parse(whole->body);
  EXPECT_EQ(j["id"], id);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "w0 w1 w2 w3 w4 w5 ");
  EXPECT_EQ(j["created"], ojson::parse(all[0].second)["created"]);
  journal_->sync();
  EXPECT_EQ(journal_->stats().records, 3);  // begin, tokens, end
  // Every answer of it is logged with the request's figures.
  EXPECT_NE(log_line({"id=" + id, "path=/v1/requests/" + id + "/stream", "completion_tokens=6 ", "finish=length ",
                      "outcome=ok"}),
            "");
  EXPECT_NE(log_line({"id=" + id, "path=/v1/chat/completions", "completion_tokens=6 ", "outcome=ok"}), "");
}

TEST_F(ServerHttpJournal, TwoChoicesCountTheirEventsApart) {
  auto r = client().Post("/v1/chat/completions", {{"Idempotency-Key", "two"}},
                         kChat + R"(,"n":2,"max_tokens":3,"stream":true})", "application/json");
  ASSERT_TRUE(r);
  const auto all = events(r->body);
  // Each id counts both choices' chunks so far (one per token, the role riding on the first):
  // the last before [DONE] has all three of each.
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(all[all.size() - 2].first, "3.3");
  EXPECT_EQ(all.back().first, "done");
}

TEST_F(ServerHttpJournal, BadIdsKeysAndEventIdsAreAnswered) {
  const std::string body = kChat + R"(,"max_tokens":2})";
  ASSERT_EQ(client().Post("/v1/chat/completions", {{"Idempotency-Key", "k2"}}, body, "application/json")->status, 200);
  auto c = client();
  // The key of another body.
  expect_error(c.Post("/v1/chat/completions", {{"Idempotency-Key", "k2"}}, kChat + R"(,"max_tokens":3})",
                      "application/json"),
               409);
  expect_error(c.Post("/v1/chat/completions", {{"Idempotency-Key", "k2"}, {"Last-Event-ID", "x"}}, body,
                      "application/json"),
               400);
  expect_error(c.Get("/v1/requests/chatcmpl-nosuchrequest"), 404);
  // The key at another endpoint, even with a body valid there.
  expect_error(c.Post("/v1/completions", {{"Idempotency-Key", "k2"}}, body, "application/json"), 409);
  // A stream resumed by a key the journal does not know is refused, not started again.
  const size_t submitted = engine_.submitted().size();
  expect_error(c.Post("/v1/chat/completions", {{"Idempotency-Key", "gone"}, {"Last-Event-ID", "2"}}, body,
                      "application/json"),
               404);
  EXPECT_EQ(engine_.submitted().size(), submitted);
  auto r = c.Post("/v1/chat/completions", {{"Idempotency-Key", "k3"}}, kChat + R"(,"n":2,"max_tokens":2})",
                  "application/json");
  ASSERT_EQ(r->status, 200);
  const std::string id = r->get_header_value("X-Request-Id");
  for (const char* bad : {"3", "1.2.3", "1.", ".1", "-1.2", "99999999999.1"})
    expect_error(c.Get(("/v1/requests/" + id + "/stream").c_str(), {{"Last-Event-ID", bad}}), 400);
  EXPECT_EQ(c.Get(("/v1/requests/" + id + "/stream").c_str(), {{"Last-Event-ID", "1.1"}})->status, 200);
}

// DELETE /v1/requests/{id}: its engine request is cancelled, its own stream ends with
// finish_reason "cancelled", later answers say the same, and the journal ends it as cancelled,
// so a restart does not compute it again.
TEST_F(ServerHttpJournal, DeleteCancelsARunningRequest) {
  auto finished = post("/v1/chat/completions", kChat + "}");
  ASSERT_EQ(finished->status, 200);
  const std::string finished_id = finished->get_header_value("X-Request-Id");
  engine_.delay = 20ms;
  OpenStream stream(port_, kChat + R"(,"max_tokens":500,"stream":true})");
  ASSERT_TRUE(stream.sent());
  ASSERT_TRUE(stream.read_until("w2 "));
  const std::string id = stream.request_id();
  ASSERT_NE(id, "") << stream.got();
  auto c = client();
  auto del = c.Delete(("/v1/requests/" + id).c_str());
  ASSERT_TRUE(del);
  ASSERT_EQ(del->status, 200) << del->body;
  EXPECT_EQ(ojson::parse(del->body), (ojson{{"id", id}, {"object", "request"}, {"status", "cancelled"}}));
  EXPECT_EQ(engine_.cancel_count(), 1u);
  ASSERT_TRUE(stream.read_until("data: [DONE]")) << stream.got();
  stream.close();
  const std::string& got = stream.got();
  EXPECT_NE(got.find(R"("finish_reason":"cancelled")"), std::string::npos) << got;
  EXPECT_EQ(got.find("error"), std::string::npos) << got;

  auto whole = c.Get(("/v1/requests/" + id).c_str());
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const ojson j = ojson::parse(whole->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "cancelled");
  EXPECT_EQ(j["choices"][0]["message"]["content"].get<std::string>().rfind("w0 w1 w2 ", 0), 0u) << whole->body;
  EXPECT_LT(j["usage"]["completion_tokens"].get<int64_t>(), 500);
  EXPECT_NE(log_line({"id=" + id, "path=/v1/requests/" + id, "outcome=cancelled"}), "");
  // Asked again, and for a request that had finished: how each ended, nothing cancelled anew.
  del = c.Delete(("/v1/requests/" + id).c_str());
  ASSERT_TRUE(del);
  EXPECT_EQ(ojson::parse(del->body)["status"], "cancelled");
  del = c.Delete(("/v1/requests/" + finished_id).c_str());
  ASSERT_TRUE(del);
  EXPECT_EQ(ojson::parse(del->body)["status"], "finished");
  EXPECT_EQ(engine_.cancel_count(), 1u);
  expect_error(c.Delete("/v1/requests/chatcmpl-nosuchrequest"), 404);
  expect_error(c.Delete(("/v1/requests/" + id + "/stream").c_str()), 404);

  // A restart resumes the finished request (to answer it again), not the cancelled one: that
  // one is rebuilt from its journaled tokens, computing nothing, and answers as before.
  journal_->sync();
  const size_t submitted = engine_.submitted().size();
  EXPECT_EQ(restart(), 1u);
  EXPECT_EQ(engine_.submitted().size(), submitted + 1);
  EXPECT_EQ(engine_.replays(), 1u);
  for (int round = 0; round < 2; ++round) {  // and again after a second restart: still retained
    auto c2 = client();
    EXPECT_EQ(c2.Get(("/v1/requests/" + finished_id).c_str())->status, 200);  // waits for its rerun
    auto after = c2.Get(("/v1/requests/" + id).c_str());
    ASSERT_TRUE(after);
    ASSERT_EQ(after->status, 200) << after->body;
    const ojson k = ojson::parse(after->body);
    EXPECT_EQ(k["id"], j["id"]);
    EXPECT_EQ(k["created"], j["created"]);
    EXPECT_EQ(k["choices"], j["choices"]);
    EXPECT_EQ(k["usage"]["completion_tokens"], j["usage"]["completion_tokens"]);
    auto stream = c2.Get(("/v1/requests/" + id + "/stream").c_str());
    ASSERT_TRUE(stream);
    EXPECT_NE(stream->body.find(R"("finish_reason":"cancelled")"), std::string::npos) << stream->body;
    EXPECT_NE(stream->body.find("data: [DONE]"), std::string::npos) << stream->body;
    del = c2.Delete(("/v1/requests/" + id).c_str());
    ASSERT_TRUE(del);
    EXPECT_EQ(ojson::parse(del->body)["status"], "cancelled");
    EXPECT_EQ(engine_.cancel_count(), 1u);
    if (round == 0) {
      EXPECT_EQ(restart(), 1u);
    }
  }
}

// A request cancelled before any token, with two choices: after a restart each choice is
// still there, empty and cancelled.
TEST_F(ServerHttpJournal, ACancelledRequestWithoutTokensAnswersAfterARestart) {
  engine_.stall_at = 0;
  OpenStream stream(port_, kChat + R"(,"n":2,"max_tokens":5,"stream":true})");
  ASSERT_TRUE(stream.sent());
  ASSERT_TRUE(stream.read_until("\r\n\r\n"));  // the headers, with the first keep-alive
  const std::string id = stream.request_id();
  ASSERT_NE(id, "") << stream.got();
  auto del = client().Delete(("/v1/requests/" + id).c_str());
  ASSERT_TRUE(del);
  ASSERT_EQ(del->status, 200) << del->body;
  ASSERT_TRUE(stream.read_until("data: [DONE]")) << stream.got();
  stream.close();
  const ojson before = ojson::parse(client().Get(("/v1/requests/" + id).c_str())->body);
  ASSERT_EQ(before["choices"].size(), 2u) << before;
  journal_->sync();
  engine_.stall_at = -1;
  EXPECT_EQ(restart(), 0u);
  EXPECT_EQ(engine_.replays(), 2u);
  auto after = client().Get(("/v1/requests/" + id).c_str());
  ASSERT_TRUE(after);
  ASSERT_EQ(after->status, 200) << after->body;
  const ojson j = ojson::parse(after->body);
  EXPECT_EQ(j["choices"], before["choices"]);
  for (const auto& ch : j["choices"]) {
    EXPECT_EQ(ch["message"]["content"], "");
    EXPECT_EQ(ch["finish_reason"], "cancelled");
  }
}

// A choice cancelled while the output parser holds back a partial marker: the held text ends
// it, as it ends a choice cut off by max_tokens, in its stream and in later answers.
TEST_F(ServerHttpJournal, DeleteReleasesTheTextTheParserHeld) {
  engine_.texts = {"w0 ", "w1 <\xef\xbd\x9c" "DSML"};  // "<｜DSML": a tool-call marker's start
  auto by_length = post("/v1/chat/completions", kChat + R"(,"max_tokens":2})");
  ASSERT_EQ(by_length->status, 200) << by_length->body;
  const ojson lj = ojson::parse(by_length->body);
  ASSERT_EQ(lj["choices"][0]["finish_reason"], "length");
  const std::string text = lj["choices"][0]["message"]["content"];
  ASSERT_NE(text.find("DSML"), std::string::npos) << text;

  engine_.stall_at = 2;  // nothing after the held text until the cancellation
  OpenStream stream(port_, kChat + R"(,"max_tokens":500,"stream":true})");
  ASSERT_TRUE(stream.sent());
  ASSERT_TRUE(stream.read_until("w1 "));
  const std::string id = stream.request_id();
  ASSERT_NE(id, "") << stream.got();
  auto c = client();
  auto del = c.Delete(("/v1/requests/" + id).c_str());
  ASSERT_TRUE(del);
  ASSERT_EQ(del->status, 200) << del->body;
  ASSERT_TRUE(stream.read_until("data: [DONE]")) << stream.got();
  stream.close();
  const std::string& got = stream.got();
  std::string streamed, finish;
  for (const auto& [eid, data] : events(got.substr(got.find("\r\n\r\n")))) {
    if (eid == "done") continue;
    const ojson ch = ojson::parse(data)["choices"][0];
    streamed += ch["delta"].value("content", std::string());
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_EQ(streamed, text) << got;
  EXPECT_EQ(finish, "cancelled");
  auto whole = c.Get(("/v1/requests/" + id).c_str());
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const ojson j = ojson::parse(whole->body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], text);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "cancelled");
}

TEST_F(ServerHttp, RequestsByIdNeedAJournal) {
  expect_error(client().Get("/v1/requests/chatcmpl-x"), 404);
  expect_error(client().Delete("/v1/requests/chatcmpl-x"), 404);
  expect_error(client().Get("/v1/responses/resp_x"), 404);
  expect_error(client().Get("/v1/responses/resp_x?stream=true&starting_after=2"), 404);
  expect_error(client().Post("/v1/responses/resp_x/cancel", "", "application/json"), 404);
}

// POST /v1/responses under a journal: its events numbered by sequence_number, which is each
// one's SSE id, and found again by Idempotency-Key and by its id.
const std::string kResponse = R"({"model":"tiny","input":"Hi","max_output_tokens":6)";

// A response stream's events, whole: "id: N\nevent: ...\ndata: ...\n\n" each; incomplete
// ones (a stream read part way) are left out.
std::vector<std::string> response_events(const std::string& body) {
  std::vector<std::string> out;
  for (size_t p = body.find("id: "); p != std::string::npos; p = body.find("id: ", p)) {
    const size_t end = body.find("\n\n", p);
    if (end == std::string::npos) break;
    out.push_back(body.substr(p, end + 2 - p));
    p = end + 2;
  }
  return out;
}

ojson event_data(const std::string& event) { return ojson::parse(event.substr(event.find("data: ") + 6)); }

TEST_F(ServerHttpJournal, AResponseStreamIsSentAgainFromItsLastEventId) {
  const std::string body = kResponse + R"(,"stream":true})";
  httplib::Headers key{{"Idempotency-Key", "r1"}};
  auto first = client().Post("/v1/responses", key, body, "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  const auto all = response_events(first->body);
  ASSERT_GE(all.size(), 12u) << first->body;
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].rfind("id: " + std::to_string(i) + "\nevent: ", 0), 0u) << all[i];
    EXPECT_EQ(event_data(all[i])["sequence_number"], i);
  }
  const ojson last = event_data(all.back());
  EXPECT_EQ(last["type"], "response.incomplete");  // max_output_tokens
  const std::string id = last["response"]["id"];
  EXPECT_EQ(first->get_header_value("X-Request-Id"), id);
  EXPECT_EQ(last["response"]["output"][0]["id"], "msg_" + id.substr(5) + "_0");
  EXPECT_EQ(last["response"]["output"][0]["content"][0]["text"], "w0 w1 w2 w3 w4 w5 ");
  EXPECT_EQ(engine_.submitted().size(), 1u);

  // The same body and key after event 3: the rest, and no new request.
  key.emplace("Last-Event-ID", "3");
  auto rest = client().Post("/v1/responses", key, body, "application/json");
  ASSERT_TRUE(rest);
  ASSERT_EQ(rest->status, 200) << rest->body;
  EXPECT_EQ(response_events(rest->body), std::vector(all.begin() + 4, all.end()));
  EXPECT_EQ(rest->get_header_value("X-Request-Id"), id);
  EXPECT_EQ(engine_.submitted().size(), 1u);

  // By id: the stream after an event, the whole stream, the response object.
  auto c = client();
  auto after = c.Get(("/v1/responses/" + id + "?stream=true&starting_after=5").c_str());
  ASSERT_TRUE(after);
  ASSERT_EQ(after->status, 200) << after->body;
  EXPECT_EQ(response_events(after->body), std::vector(all.begin() + 6, all.end()));
  after = c.Get(("/v1/responses/" + id + "?stream=true").c_str(), {{"Last-Event-ID", "9"}});
  ASSERT_TRUE(after);
  EXPECT_EQ(response_events(after->body), std::vector(all.begin() + 10, all.end()));
  auto whole = c.Get(("/v1/responses/" + id + "?stream=true").c_str());
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->body, first->body);
  after = c.Get(("/v1/responses/" + id + "?stream=true&starting_after=" + std::to_string(all.size() - 1)).c_str());
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(response_events(after->body), std::vector<std::string>{});
  auto object = c.Get(("/v1/responses/" + id).c_str());
  ASSERT_TRUE(object);
  ASSERT_EQ(object->status, 200) << object->body;
  EXPECT_EQ(object->body, dump_json(last["response"]));
  auto by_request = c.Get(("/v1/requests/" + id).c_str());
  ASSERT_TRUE(by_request);
  EXPECT_EQ(by_request->body, object->body);
  // The same key and body, not streamed: a different body, so another request's key.
  expect_error(c.Post("/v1/responses", {{"Idempotency-Key", "r1"}}, kResponse + "}", "application/json"), 409);
  EXPECT_EQ(engine_.submitted().size(), 1u);
  journal_->sync();
  EXPECT_EQ(journal_->stats().records, 3);  // begin, tokens, end
  EXPECT_NE(log_line({"id=" + id, "path=/v1/responses ", "completion_tokens=6 ", "outcome=ok"}), "");
}

TEST_F(ServerHttpJournal, BadResponseIdsAndSequenceNumbersAreAnswered) {
  auto r = client().Post("/v1/responses", {{"Idempotency-Key", "r2"}}, kResponse + R"(,"stream":true})",
                         "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string id = r->get_header_value("X-Request-Id");
  auto c = client();
  for (const char* bad : {"x", "-1", "1.2", "1e3", "99999999999999999999"}) {
    expect_error(c.Get(("/v1/responses/" + id + "?stream=true&starting_after=" + bad).c_str()), 400, "starting_after");
    expect_error(c.Get(("/v1/responses/" + id + "?stream=true").c_str(), {{"Last-Event-ID", bad}}), 400);
    expect_error(c.Post("/v1/responses", {{"Idempotency-Key", "r2"}, {"Last-Event-ID", bad}},
                        kResponse + R"(,"stream":true})", "application/json"),
                 400);
  }
  expect_error(c.Get(("/v1/responses/" + id + "?starting_after=2").c_str()), 400, "starting_after");
  expect_error(c.Get(("/v1/responses/" + id + "?stream=yes").c_str()), 400, "stream");
  expect_error(c.Get("/v1/responses/resp_nosuchresponse"), 404);
  expect_error(c.Get("/v1/responses/resp_nosuchresponse?stream=true&starting_after=1"), 404);
  expect_error(c.Post("/v1/responses/resp_nosuchresponse/cancel", "", "application/json"), 404);
  // A chat completion is no response.
  auto chat = post("/v1/chat/completions", kChat + "}");
  ASSERT_EQ(chat->status, 200);
  const std::string chat_id = chat->get_header_value("X-Request-Id");
  expect_error(c.Get(("/v1/responses/" + chat_id).c_str()), 404);
  expect_error(c.Post(("/v1/responses/" + chat_id + "/cancel").c_str(), "", "application/json"), 404);
}

// POST /v1/responses/{id}/cancel: its stream ends with response.cancelled, the answer and
// later retrievals are the response at status cancelled, and a restart does not compute it again.
TEST_F(ServerHttpJournal, CancelEndsAResponseAsCancelled) {
  auto done = post("/v1/responses", kResponse + "}");
  ASSERT_EQ(done->status, 200) << done->body;
  const std::string done_id = ojson::parse(done->body)["id"];
  engine_.delay = 20ms;
  OpenStream stream(port_, kResponse + R"(,"max_output_tokens":500,"stream":true})", "/v1/responses");
  ASSERT_TRUE(stream.sent());
  ASSERT_TRUE(stream.read_until("w2 "));
  const std::string id = stream.request_id();
  ASSERT_EQ(id.rfind("resp_", 0), 0u) << stream.got();
  auto c = client();
  auto cancel = c.Post(("/v1/responses/" + id + "/cancel").c_str(), "", "application/json");
  ASSERT_TRUE(cancel);
  ASSERT_EQ(cancel->status, 200) << cancel->body;
  const ojson j = ojson::parse(cancel->body);
  EXPECT_EQ(j["id"], id);
  EXPECT_EQ(j["status"], "cancelled");
  EXPECT_EQ(j["output"][0]["status"], "incomplete");
  EXPECT_EQ(j["output"][0]["content"][0]["text"].get<std::string>().rfind("w0 w1 w2 ", 0), 0u) << cancel->body;
  EXPECT_EQ(engine_.cancel_count(), 1u);
  ASSERT_TRUE(stream.read_until("event: response.cancelled\n")) << stream.got();
  ASSERT_TRUE(stream.read_until("\r\n0\r\n\r\n")) << stream.got();  // the stream's end
  stream.close();
  const auto evs = response_events(stream.got());
  ASSERT_FALSE(evs.empty());
  EXPECT_EQ(dump_json(event_data(evs.back())["response"]), cancel->body);
  EXPECT_EQ(stream.got().find("event: error"), std::string::npos) << stream.got();
  auto again = c.Get(("/v1/responses/" + id).c_str());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, cancel->body);
  // Cancelled again, and a response that had finished: how each ended, nothing cancelled anew.
  EXPECT_EQ(c.Post(("/v1/responses/" + id + "/cancel").c_str(), "", "application/json")->body, cancel->body);
  auto finished = c.Post(("/v1/responses/" + done_id + "/cancel").c_str(), "", "application/json");
  ASSERT_TRUE(finished);
  EXPECT_EQ(finished->body, done->body);
  EXPECT_EQ(engine_.cancel_count(), 1u);
  // DELETE /v1/requests/{id} says the same.
  EXPECT_EQ(ojson::parse(c.Delete(("/v1/requests/" + id).c_str())->body)["status"], "cancelled");

  journal_->sync();
  EXPECT_EQ(restart(), 1u);  // the finished one, computed again to answer it
  EXPECT_EQ(engine_.replays(), 1u);
  auto c2 = client();
  auto restored = c2.Get(("/v1/responses/" + id).c_str());
  ASSERT_TRUE(restored);
  ASSERT_EQ(restored->status, 200) << restored->body;
  const ojson k = ojson::parse(restored->body);
  EXPECT_EQ(k["status"], "cancelled");
  EXPECT_EQ(k["output"], j["output"]);
  EXPECT_EQ(k["created_at"], j["created_at"]);
  EXPECT_EQ(k["usage"]["output_tokens"], j["usage"]["output_tokens"]);
  EXPECT_EQ(c2.Get(("/v1/responses/" + done_id).c_str())->body, done->body);
}

// A response the server stopped under (a crash, as far as the journal is concerned) is
// resumed by the next start: its client's events and the rest after its Last-Event-ID are the
// stream the new server renders, byte for byte, and a finished one answers the same object.
TEST_F(ServerHttpJournal, ARestartResumesAnUnfinishedResponse) {
  auto done = client().Post("/v1/responses", {{"Idempotency-Key", "done"}}, kResponse + "}", "application/json");
  ASSERT_EQ(done->status, 200) << done->body;
  const std::string done_id = ojson::parse(done->body)["id"];

  engine_.stall_at = 3;
  const std::string body = kResponse + R"(,"stream":true})";
  OpenStream stream(port_, body, "/v1/responses", "Idempotency-Key: unfinished\r\n");
  ASSERT_TRUE(stream.sent());
  ASSERT_TRUE(stream.read_until("w2 "));
  ASSERT_TRUE(stream.read_until("\n\n"));
  const std::string id = stream.request_id();
  ASSERT_EQ(id.rfind("resp_", 0), 0u) << stream.got();
  const auto had = response_events(stream.got());
  ASSERT_GE(had.size(), 5u) << stream.got();
  journal_->sync();
  // Shutting down: the engine's cancellation leaves the response unfinished in the journal.
  server_->begin_shutdown();
  const size_t submitted = engine_.submitted().size();
  engine_.cancel(submitted);
  ASSERT_TRUE(stream.read_until("\r\n0\r\n\r\n")) << stream.got();
  stream.close();
  engine_.stall_at = -1;
  EXPECT_EQ(restart(), 2u);
  EXPECT_EQ(engine_.submitted().size(), submitted + 2);

  const std::string last_id = std::to_string(had.size() - 1);
  auto rest = client().Post("/v1/responses", {{"Idempotency-Key", "unfinished"}, {"Last-Event-ID", last_id}}, body,
                            "application/json");
  ASSERT_TRUE(rest);
  ASSERT_EQ(rest->status, 200) << rest->body;
  std::vector<std::string> joined = had;
  for (auto& e : response_events(rest->body)) joined.push_back(e);
  auto whole = client().Get(("/v1/responses/" + id + "?stream=true").c_str());
  ASSERT_TRUE(whole);
  EXPECT_EQ(joined, response_events(whole->body));
  const ojson last = event_data(joined.back());
  EXPECT_EQ(last["type"], "response.incomplete");
  EXPECT_EQ(last["response"]["output"][0]["content"][0]["text"], "w0 w1 w2 w3 w4 w5 ");
  auto object = client().Get(("/v1/responses/" + id).c_str());
  ASSERT_TRUE(object);
  EXPECT_EQ(object->body, dump_json(last["response"]));
  EXPECT_EQ(engine_.submitted().size(), submitted + 2);

  // The finished response, computed again: the same bytes, by id and by its key.
  EXPECT_EQ(client().Get(("/v1/responses/" + done_id).c_str())->body, done->body);
  auto by_key = client().Post("/v1/responses", {{"Idempotency-Key", "done"}}, kResponse + "}", "application/json");
  ASSERT_TRUE(by_key);
  EXPECT_EQ(by_key->body, done->body);
}

}  // namespace
}  // namespace strata::server
