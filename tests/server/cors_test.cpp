// CorsPolicy: which origins are allowed, and the headers of answers and preflights.
#include "server/cors.h"

#include <gtest/gtest.h>

#include <map>

#include "core/error.h"

namespace strata::server {
namespace {

std::map<std::string, std::string> as_map(const HeaderList& h) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : h) EXPECT_TRUE(m.emplace(k, v).second) << "twice: " << k;
  return m;
}

TEST(Cors, OffByDefault) {
  CorsPolicy off;
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.allows("http://localhost:3000"));
  EXPECT_TRUE(off.response_headers("http://localhost:3000").empty());
  EXPECT_TRUE(off.preflight_headers("http://localhost:3000", "authorization", false).empty());
}

TEST(Cors, ListedOriginsOnly) {
  CorsPolicy p({"http://localhost:3000", "HTTPS://Chat.Example.com/"});
  EXPECT_TRUE(p.enabled());
  EXPECT_TRUE(p.allows("http://localhost:3000"));
  EXPECT_TRUE(p.allows("https://chat.example.com"));  // case and a trailing slash do not matter
  EXPECT_FALSE(p.allows("http://localhost:3001"));
  EXPECT_FALSE(p.allows("https://localhost:3000"));
  EXPECT_FALSE(p.allows(""));
  auto h = as_map(p.response_headers("http://localhost:3000"));
  EXPECT_EQ(h["Access-Control-Allow-Origin"], "http://localhost:3000");
  EXPECT_EQ(h["Vary"], "Origin");
  EXPECT_EQ(h["Access-Control-Expose-Headers"], "X-Request-Id, Retry-After");
  EXPECT_TRUE(p.response_headers("http://evil.example").empty());
}

TEST(Cors, AnyOrigin) {
  CorsPolicy p({"*"});
  EXPECT_TRUE(p.allows("http://anything:1"));
  auto h = as_map(p.response_headers("http://anything:1"));
  EXPECT_EQ(h["Access-Control-Allow-Origin"], "*");
  EXPECT_EQ(h.count("Vary"), 0u);
  EXPECT_TRUE(p.response_headers("").empty());  // not a cross-origin request: nothing to add
}

TEST(Cors, Preflight) {
  CorsPolicy p({"http://localhost:3000"});
  auto h = as_map(p.preflight_headers("http://localhost:3000",
                                      "authorization, X-Stainless-OS,x-stainless-lang, bad header, content-type", false));
  EXPECT_EQ(h["Access-Control-Allow-Origin"], "http://localhost:3000");
  EXPECT_EQ(h["Access-Control-Allow-Methods"], "GET, POST, DELETE, OPTIONS");
  // The usual three, then what the page asked for (each once; not a header name: dropped).
  EXPECT_EQ(h["Access-Control-Allow-Headers"], "Authorization, Content-Type, X-API-Key, X-Stainless-OS, x-stainless-lang");
  EXPECT_EQ(h["Access-Control-Max-Age"], "600");
  EXPECT_EQ(h["Vary"], "Origin, Access-Control-Request-Headers");
  EXPECT_EQ(h.count("Access-Control-Allow-Private-Network"), 0u);
  auto pna = as_map(p.preflight_headers("http://localhost:3000", "", true));
  EXPECT_EQ(pna["Access-Control-Allow-Private-Network"], "true");
  EXPECT_EQ(pna["Access-Control-Allow-Headers"], "Authorization, Content-Type, X-API-Key");
  EXPECT_TRUE(p.preflight_headers("http://other:1", "", false).empty());
}

TEST(Cors, BadOriginsAreErrors) {
  for (const char* bad : {"localhost:3000", "http://", "http://host/path", "://host", "http://a b", "", "http://h?x"}) {
    try {
      CorsPolicy p({bad});
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--cors-origin"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(CorsPolicy({"http://[::1]:8080", "app://local", "*"}));
}

}  // namespace
}  // namespace strata::server
