#include "models/qwen3_5/state.h"

#include <string>

#include "core/error.h"

namespace strata::qwen35 {

SequenceState new_state(const Config& c, int64_t draft_copies) {
  SequenceState st;
  st.layers.resize(size_t(c.num_hidden_layers));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerState& L = st.layers[size_t(l)];
    L.linear = c.is_linear(l);
    if (L.linear) {
      L.state.assign(size_t(c.state_floats()), 0.0f);
      L.conv.assign(size_t(c.conv_tail_values()), 0);
      L.state_drafts.assign(size_t(c.state_floats() * draft_copies), 0.0f);
      L.conv_drafts.assign(size_t(c.conv_tail_values() * draft_copies), 0);
      L.draft_copies = draft_copies;
    } else {
      L.kv.init(c.kv_entry_bytes());
    }
  }
  st.mtp.resize(size_t(c.mtp_num_hidden_layers));
  for (auto& m : st.mtp) m.kv.init(c.kv_entry_bytes());
  st.mtp_pos.assign(size_t(c.mtp_num_hidden_layers), 0);
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
    if (spec.kind == cache::CacheKind::linear_state && L.linear) {
      p.regions = {L.state, L.conv};
      if (spec.draft_copies > 0) {
        if (spec.draft_copies != L.draft_copies)
          throw Error("cache map: layer " + std::to_string(l) + " holds " + std::to_string(L.draft_copies) +
                      " draft slots, the layout " + std::to_string(spec.draft_copies));
        p.drafts = {L.state_drafts, L.conv_drafts};
      }
    } else if (spec.kind == cache::CacheKind::full_attention && !L.linear) {
      p.entries = &L.kv;
      p.tokens = is_mtp ? mtp_pos[l - layers.size()] : pos;
    } else {
      throw Error(std::string("cache map: layer ") + std::to_string(l) + " keeps no " + cache::kind_name(spec.kind) +
                  " cache");
    }
    map.push_back(std::move(p));
  }
  return map;
}

}  // namespace strata::qwen35
