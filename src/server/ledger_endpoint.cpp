#include "server/ledger_endpoint.h"

#include <algorithm>
#include <charconv>

#include "cache/layout_by_kind.h"
#include "server/api_error.h"

namespace strata::server {

std::vector<int64_t> ledger_contexts(int64_t max_context) {
  if (max_context < 1) return {};
  const int64_t lo = max_context > 1024 ? 1024 : std::max<int64_t>(1, max_context / 16);
  std::vector<int64_t> out{lo};
  int64_t p = 1;
  while (p <= lo) p *= 2;
  for (; p < max_context; p *= 2) out.push_back(p);
  if (out.back() != max_context) out.push_back(max_context);
  return out;
}

int64_t parse_ledger_context(const std::string& value, int64_t max_context) {
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < 0 || n > max_context)
    throw bad_request("'context' must be an integer from 0 to the maximum context (" + std::to_string(max_context) +
                          "), not '" + value + "'.",
                      "context");
  return n;
}

ojson ledger_json(const std::string& model_id, const cache::CacheLayout& layout, int64_t max_context,
                  std::optional<int64_t> at) {
  const std::vector<int64_t> contexts = ledger_contexts(max_context);
  const auto kinds = cache::layouts_by_kind(layout);
  auto bytes_at = [&](const cache::CacheLayout& l) {
    ojson a = ojson::array();
    for (int64_t n : contexts) a.push_back(l.bytes_for(n));
    return a;
  };
  ojson by_kind = ojson::object();
  for (const auto& [kind, l] : kinds) by_kind[kind] = bytes_at(l);
  ojson j = {{"object", "ledger"},
             {"model", model_id},
             {"max_context", max_context},
             {"block_tokens", layout.block_tokens},
             {"bytes_per_token", layout.bytes_per_token()},
             {"fixed_bytes", layout.fixed_bytes()},
             {"contexts", contexts},
             {"bytes", bytes_at(layout)},
             {"by_kind", by_kind}};
  if (at) {
    ojson at_kind = ojson::object();
    for (const auto& [kind, l] : kinds) at_kind[kind] = l.bytes_for(*at);
    j["at"] = {{"context", *at}, {"bytes", layout.bytes_for(*at)}, {"by_kind", at_kind}};
  }
  return j;
}

}  // namespace strata::server
