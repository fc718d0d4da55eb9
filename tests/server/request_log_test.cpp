// The per-request and per-error log lines in both formats, and the Retry-After estimate.
#include "server/request_log.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <vector>

#include "core/error.h"
#include "server/retry_after.h"

namespace strata::server {
namespace {

RequestRecord completion() {
  RequestRecord r;
  r.id = "chatcmpl-abc";
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.status = 200;
  r.prompt_tokens = 12;
  r.completion_tokens = 9;
  r.cached_tokens = 4;
  r.ttft_ms = 40.04;
  r.total_ms = 240.04;
  r.finish = "length";
  r.outcome = "ok";
  return r;
}

TEST(RequestLog, TextLine) {
  RequestLog log(LogFormat::text, [](const std::string&) {});
  const std::string line = log.format(completion());
  // 8 tokens after the first in 200 ms: 40 tokens/s.
  EXPECT_TRUE(std::regex_match(line, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO request id=chatcmpl-abc )"
                                                R"(method=POST path=/v1/chat/completions status=200 prompt_tokens=12 )"
                                                R"(completion_tokens=9 cached_tokens=4 ttft_ms=40\.0 total_ms=240\.0 )"
                                                R"(tokens_per_s=40\.0 finish=length outcome=ok)")))
      << line;
  RequestRecord health;
  health.id = "req-1";
  health.method = "GET";
  health.path = "/health";
  health.status = 200;
  health.total_ms = 0.25;
  const std::string h = log.format(health);
  EXPECT_NE(h.find("INFO request id=req-1 method=GET path=/health status=200 total_ms=0.3"), std::string::npos) << h;
  EXPECT_EQ(h.find("tokens"), std::string::npos) << h;  // fields it does not have are left out
}

TEST(RequestLog, ErrorLineQuotesTheMessage) {
  RequestLog log(LogFormat::text, [](const std::string&) {});
  ErrorRecord e{"cmpl-1", "POST", "/v1/completions", 400, "invalid_request_error", "", "temperature",
                "temperature must be in [0, 2]\nsee \"docs\""};
  const std::string line = log.format(e);
  EXPECT_NE(line.find(R"(WARN error id=cmpl-1 method=POST path=/v1/completions status=400 type=invalid_request_error )"
                      R"(param=temperature message="temperature must be in [0, 2]\nsee \"docs\"")"),
            std::string::npos)
      << line;
  e.status = 500;
  EXPECT_NE(log.format(e).find(" ERROR error "), std::string::npos);
}

TEST(RequestLog, JsonLinesAndTheSink) {
  std::vector<std::string> lines;
  RequestLog log(LogFormat::json, [&](const std::string& l) { lines.push_back(l); });
  log.request(completion());
  log.error({"chatcmpl-abc", "POST", "/v1/chat/completions", 500, "server_error", "internal_error", "", "boom"});
  ASSERT_EQ(lines.size(), 2u);
  auto r = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(r["level"], "info");
  EXPECT_EQ(r["event"], "request");
  EXPECT_EQ(r["id"], "chatcmpl-abc");
  EXPECT_EQ(r["status"], 200);
  EXPECT_EQ(r["prompt_tokens"], 12);
  EXPECT_DOUBLE_EQ(r["ttft_ms"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(r["tokens_per_s"].get<double>(), 40.0);
  EXPECT_TRUE(r["time"].is_string());
  auto e = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(e["level"], "error");
  EXPECT_EQ(e["event"], "error");
  EXPECT_EQ(e["message"], "boom");
  EXPECT_FALSE(e.contains("param"));  // empty: left out
  RequestLog off(LogFormat::off, [&](const std::string& l) { lines.push_back(l); });
  off.request(completion());
  EXPECT_EQ(lines.size(), 2u);
}

TEST(RequestLog, Formats) {
  EXPECT_EQ(parse_log_format("text"), LogFormat::text);
  EXPECT_EQ(parse_log_format("json"), LogFormat::json);
  EXPECT_EQ(parse_log_format("off"), LogFormat::off);
  EXPECT_THROW(parse_log_format("xml"), Error);
}

TEST(RetryAfter, FollowsTheIntervalBetweenFinishes) {
  using namespace std::chrono_literals;
  RetryAfter r;
  EXPECT_EQ(r.seconds(), 1);  // nothing known yet
  auto t = RetryAfter::clock::time_point{} + 1000s;
  r.finished(t);
  EXPECT_EQ(r.seconds(), 1);
  for (int i = 0; i < 30; ++i) r.finished(t += 4s);
  EXPECT_EQ(r.seconds(), 4);
  for (int i = 0; i < 30; ++i) r.finished(t += 200ms);
  EXPECT_EQ(r.seconds(), 1);  // rounded up, at least 1
  r.finished(t += 3600s);      // an idle hour counts as the cap, not as an hour
  EXPECT_LE(r.seconds(), 60);
  for (int i = 0; i < 60; ++i) r.finished(t += 3600s);
  EXPECT_EQ(r.seconds(), 60);
}

}  // namespace
}  // namespace strata::server
