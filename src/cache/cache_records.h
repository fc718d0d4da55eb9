// A sequence's caches as plain records, for request export and import (a request moved to
// another process, or kept across a restart): each spec's live bytes or entries in their
// storage format, so a restore is bit-exact. Draft copies are scratch and not written.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cache/cache_map.h"

namespace strata::cache {

struct CacheRecord {
  std::string kind;            // kind_name
  int64_t layer = 0;
  std::string format;          // the spec's format: a record only fits a spec of the same format
  int64_t entries = 0;         // block kinds: entry count
  std::vector<uint8_t> bytes;  // slot kinds: the live state; block kinds: every entry in order
};

std::vector<CacheRecord> export_caches(const CacheMap& map, const CacheLayout& layout);
// Fills `map` (a fresh state's, at the positions the records were taken at) from the records.
// Throws strata::Error when they do not fit the layout (another model, format or position).
void import_caches(const std::vector<CacheRecord>& records, CacheMap& map, const CacheLayout& layout);

}  // namespace strata::cache
