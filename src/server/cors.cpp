#include "server/cors.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "core/error.h"

namespace strata::server {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// An Origin as browsers send it: scheme "://" host [":" port], nothing after.
std::string normalize_origin(const std::string& given) {
  std::string o = lower(given);
  if (!o.empty() && o.back() == '/') o.pop_back();
  const size_t sep = o.find("://");
  bool ok = sep != std::string::npos && sep > 0 && sep + 3 < o.size();
  for (size_t i = 0; ok && i < sep; ++i) ok = std::isalnum(static_cast<unsigned char>(o[i])) || o[i] == '+' || o[i] == '-' || o[i] == '.';
  for (size_t i = sep + 3; ok && i < o.size(); ++i) ok = o[i] != '/' && o[i] != '?' && o[i] != '#' && o[i] > ' ';
  if (!ok)
    throw Error("--cors-origin \"" + given + "\": expected * or an origin such as http://localhost:3000 (scheme, host and "
                "port only)");
  return o;
}

// A header name is a token (RFC 9110); anything else in Access-Control-Request-Headers is dropped.
bool is_token(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos))
      return false;
  return true;
}

}  // namespace

CorsPolicy::CorsPolicy(const std::vector<std::string>& origins) {
  for (const auto& o : origins) {
    if (o == "*") any_ = true;
    else origins_.push_back(normalize_origin(o));
  }
}

bool CorsPolicy::allows(const std::string& origin) const {
  if (origin.empty()) return false;
  if (any_) return true;
  return std::find(origins_.begin(), origins_.end(), lower(origin)) != origins_.end();
}

HeaderList CorsPolicy::response_headers(const std::string& origin) const {
  if (!allows(origin)) return {};
  HeaderList h;
  // "*" needs no Vary: the answer is the same for every origin.
  if (any_) h.emplace_back("Access-Control-Allow-Origin", "*");
  else h.emplace_back("Access-Control-Allow-Origin", origin), h.emplace_back("Vary", "Origin");
  h.emplace_back("Access-Control-Expose-Headers", "X-Request-Id, Retry-After");
  return h;
}

HeaderList CorsPolicy::preflight_headers(const std::string& origin, const std::string& request_headers,
                                         bool private_network) const {
  if (!allows(origin)) return {};
  HeaderList h;
  h.emplace_back("Access-Control-Allow-Origin", any_ ? "*" : origin);
  // The answer echoes the requested headers, so it varies with them (and with the origin).
  h.emplace_back("Vary", any_ ? "Access-Control-Request-Headers" : "Origin, Access-Control-Request-Headers");
  std::string allowed;
  std::vector<std::string> seen;
  auto allow = [&](const std::string& name) {
    if (!is_token(name) || std::find(seen.begin(), seen.end(), lower(name)) != seen.end()) return;
    seen.push_back(lower(name));
    allowed += (allowed.empty() ? "" : ", ") + name;
  };
  for (const char* name : {"Authorization", "Content-Type", "X-API-Key"}) allow(name);
  size_t p = 0;
  while (p < request_headers.size()) {
    size_t e = std::min(request_headers.find(',', p), request_headers.size());
    std::string name = request_headers.substr(p, e - p);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    allow(name);
    p = e + 1;
  }
  h.emplace_back("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
  h.emplace_back("Access-Control-Allow-Headers", allowed);
  h.emplace_back("Access-Control-Max-Age", std::to_string(kMaxAgeSeconds));
  if (private_network) h.emplace_back("Access-Control-Allow-Private-Network", "true");
  return h;
}

}  // namespace strata::server
