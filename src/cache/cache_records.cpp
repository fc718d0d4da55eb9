#include "cache/cache_records.h"

#include <cstring>

#include "cache/kind_policy.h"
#include "core/error.h"

namespace strata::cache {

std::vector<CacheRecord> export_caches(const CacheMap& map, const CacheLayout& layout) {
  check_map(map, layout);
  std::vector<CacheRecord> out;
  for (size_t i = 0; i < map.size(); ++i) {
    const CacheSpec& s = layout.specs[i];
    const CachePiece& p = map[i];
    CacheRecord r{kind_name(s.kind), s.layer, s.format, 0, {}};
    if (policy(s.kind).storage == Storage::slot) {
      for (const auto& reg : p.regions) r.bytes.insert(r.bytes.end(), reg.data(), reg.data() + reg.bytes());
    } else {
      r.entries = int64_t(p.entries->size());
      r.bytes = p.entries->to_bytes();
    }
    out.push_back(std::move(r));
  }
  return out;
}

void import_caches(const std::vector<CacheRecord>& records, CacheMap& map, const CacheLayout& layout) {
  check_map(map, layout, /*entry_counts=*/false);
  if (records.size() != map.size())
    throw Error("the state holds " + std::to_string(records.size()) + " caches, this model " +
                std::to_string(map.size()));
  for (size_t i = 0; i < map.size(); ++i) {
    const CacheSpec& s = layout.specs[i];
    const CacheRecord& r = records[i];
    const std::string what = "layer " + std::to_string(s.layer) + "'s " + kind_name(s.kind);
    if (r.kind != kind_name(s.kind) || r.layer != s.layer || r.format != s.format)
      throw Error("cache " + std::to_string(i) + " is layer " + std::to_string(r.layer) + "'s " + r.kind + " (" +
                  r.format + "), this model has " + what + " (" + s.format + ")");
    CachePiece& p = map[i];
    if (policy(s.kind).storage == Storage::slot) {
      if (int64_t(r.bytes.size()) != s.live_bytes()) throw Error(what + " has the wrong size");
      const uint8_t* src = r.bytes.data();
      for (const auto& reg : p.regions) {
        std::memcpy(reg.data(), src, size_t(reg.bytes()));
        src += reg.bytes();
      }
    } else {
      if (r.entries != p.tokens / s.tokens_per_entry || int64_t(r.bytes.size()) != r.entries * s.entry_bytes)
        throw Error(what + " holds " + std::to_string(r.entries) + " entries, its position needs " +
                    std::to_string(p.tokens / s.tokens_per_entry));
      p.entries->assign_bytes(r.bytes);
    }
  }
}

}  // namespace strata::cache
