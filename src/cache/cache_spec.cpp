#include "cache/cache_spec.h"

#include "cache/kind_policy.h"

namespace strata::cache {

const char* kind_name(CacheKind k) { return policy(k).name; }

bool kind_grows(CacheKind k) { return policy(k).storage == Storage::blocks; }

int64_t CacheSpec::bytes_exact(int64_t context) const {
  if (!kind_grows(kind)) return fixed_bytes();
  return context / tokens_per_entry * entry_bytes;
}

double CacheLayout::bytes_per_token() const { return double(block_bytes()) / double(block_tokens); }

int64_t CacheLayout::fixed_bytes() const {
  int64_t s = 0;
  for (const auto& c : specs) s += c.fixed_bytes();
  return s;
}

int64_t CacheLayout::draft_bytes() const {
  int64_t s = 0;
  for (const auto& c : specs) s += c.fixed_bytes() - c.live_bytes();
  return s;
}

int64_t CacheLayout::block_bytes() const {
  int64_t s = 0;
  for (const auto& c : specs) s += c.block_bytes(block_tokens);
  return s;
}

int64_t CacheLayout::bytes_exact(int64_t context) const {
  int64_t s = 0;
  for (const auto& c : specs) s += c.bytes_exact(context);
  return s;
}

}  // namespace strata::cache
