#include "models/gemma4/state.h"

#include <string>

#include "core/error.h"

namespace strata::gemma4 {

SequenceState new_state(const Config& c) {
  SequenceState st;
  st.layers.resize(size_t(c.num_hidden_layers));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerState& L = st.layers[size_t(l)];
    if (c.kv_shared(l)) continue;
    L.entry_values = c.kv_entry_bytes(l) / 2;
    if (c.sliding(l)) {
      L.kind = LayerState::Kind::sliding;
      L.window = c.sliding_window;
      L.ring.assign(size_t(L.window * L.entry_values), 0);
    } else {
      L.kind = LayerState::Kind::full;
      L.kv.init(c.kv_entry_bytes(l));
    }
  }
  return st;
}

cache::CacheMap SequenceState::cache_map(const cache::CacheLayout& layout) {
  cache::CacheMap map;
  for (const auto& spec : layout.specs) {
    if (spec.layer < 0 || size_t(spec.layer) >= layers.size())
      throw Error("cache map: a spec names layer " + std::to_string(spec.layer) + ", the model has fewer");
    LayerState& L = layers[size_t(spec.layer)];
    cache::CachePiece p;
    if (spec.kind == cache::CacheKind::sliding_window && L.kind == LayerState::Kind::sliding) {
      p.regions = {L.ring};
    } else if (spec.kind == cache::CacheKind::full_attention && L.kind == LayerState::Kind::full) {
      p.entries = &L.kv;
      p.tokens = pos;
    } else {
      throw Error(std::string("cache map: layer ") + std::to_string(spec.layer) + " keeps no " +
                  cache::kind_name(spec.kind) + " cache");
    }
    map.push_back(std::move(p));
  }
  return map;
}

}  // namespace strata::gemma4
