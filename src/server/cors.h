// CORS, so that a web page on another origin may call the API (`strata serve --cors-origin`).
//
// Off unless origins are given: then no Access-Control-* header is ever sent and browsers keep
// pages on other origins from reading responses. With origins (or "*"), a response to a
// request whose Origin is allowed carries Access-Control-Allow-Origin, and an OPTIONS
// preflight is answered 204 without the API key (browsers never send credentials on a
// preflight) when its Origin is allowed, 403 when not.
//
// Plain data in, headers out: the HTTP wiring is in server.cpp.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace strata::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class CorsPolicy {
 public:
  CorsPolicy() = default;  // off
  // Each origin is "*" or scheme://host[:port] (a trailing "/" is dropped; case does not
  // matter); anything else, a path say, throws strata::Error naming it.
  explicit CorsPolicy(const std::vector<std::string>& origins);

  bool enabled() const { return any_ || !origins_.empty(); }
  bool allows(const std::string& origin) const;

  // Headers for an ordinary response to a request with this Origin header (empty: none).
  HeaderList response_headers(const std::string& origin) const;
  // Headers for a 204 preflight answer. `request_headers` is the preflight's
  // Access-Control-Request-Headers: those are allowed too, beside Authorization, Content-Type
  // and X-API-Key (the official clients send X-Stainless-* headers, for one).
  // `private_network`: the preflight asked Access-Control-Request-Private-Network (a public
  // page calling a server on the local network, in Chrome).
  HeaderList preflight_headers(const std::string& origin, const std::string& request_headers,
                               bool private_network) const;

  static constexpr int kMaxAgeSeconds = 600;

 private:
  bool any_ = false;
  std::vector<std::string> origins_;  // normalized
};

}  // namespace strata::server
