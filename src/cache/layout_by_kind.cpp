#include "cache/layout_by_kind.h"

namespace strata::cache {

std::map<std::string, CacheLayout> layouts_by_kind(const CacheLayout& whole) {
  std::map<std::string, CacheLayout> kinds;
  for (const auto& spec : whole.specs) {
    CacheLayout& k = kinds[kind_name(spec.kind)];
    k.block_tokens = whole.block_tokens;
    k.specs.push_back(spec);
  }
  return kinds;
}

}  // namespace strata::cache
