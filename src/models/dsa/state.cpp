#include "models/dsa/state.h"

#include <string>

#include "cache/cache_map.h"
#include "core/error.h"
#include "models/dsa/cache_entries.h"

namespace strata::dsa {

int64_t LayerState::fillers(int64_t n, int64_t kv_lora) const {
  if (n == 0 || !latent_is_filler(latent.entry(0), kv_lora)) return 0;  // every main layer, at once
  int64_t lo = 0, hi = n;  // fillers are a prefix: entries [0, lo) fillers, [hi, n) real
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (latent_is_filler(latent.entry(mid), kv_lora)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

SequenceState new_state(const Config& c) {
  SequenceState st;
  auto init = [&](LayerState& L, int64_t layer) {
    L.latent.init(c.latent_entry_bytes());
    L.has_index_keys = c.full_indexer(layer);
    if (L.has_index_keys) L.index_keys.init(c.index_entry_bytes());
  };
  st.layers.resize(size_t(c.num_hidden_layers));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) init(st.layers[size_t(l)], l);
  st.mtp.resize(size_t(c.num_nextn_predict_layers));
  for (int64_t j = 0; j < c.num_nextn_predict_layers; ++j) init(st.mtp[size_t(j)], c.num_hidden_layers + j);
  st.mtp_pos.assign(size_t(c.num_nextn_predict_layers), 0);
  return st;
}

cache::CacheMap SequenceState::cache_map(const cache::CacheLayout& layout) {
  cache::CacheMap map;
  for (const auto& spec : layout.specs) {
    const size_t l = size_t(spec.layer);
    if (spec.layer < 0 || l >= layers.size() + mtp.size())
      throw Error("cache map: a spec names layer " + std::to_string(spec.layer) + ", the model has fewer");
    const bool is_mtp = l >= layers.size();
    LayerState& L = is_mtp ? mtp[l - layers.size()] : layers[l];
    cache::CachePiece p;
    p.tokens = is_mtp ? mtp_pos[l - layers.size()] : pos;
    if (spec.kind == cache::CacheKind::mla_latent) p.entries = &L.latent;
    else if (spec.kind == cache::CacheKind::indexer_keys && L.has_index_keys) p.entries = &L.index_keys;
    else
      throw Error(std::string("cache map: layer ") + std::to_string(l) + " keeps no " + cache::kind_name(spec.kind) +
                  " cache");
    map.push_back(std::move(p));
  }
  return map;
}

}  // namespace strata::dsa
