// A layout split by cache kind: one layout per kind_name, holding that kind's specs alone with
// the whole's block size, so each kind's bytes_for(n) is its share and the shares sum to the
// whole's. `strata ledger --svg` stacks these; the server's /v1/ledger lists them.
#pragma once
#include <map>
#include <string>

#include "cache/cache_spec.h"

namespace strata::cache {

std::map<std::string, CacheLayout> layouts_by_kind(const CacheLayout& whole);

}  // namespace strata::cache
