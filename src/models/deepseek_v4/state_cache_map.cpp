#include <string>

#include "core/error.h"
#include "models/deepseek_v4/indexer_scratch.h"
#include "models/deepseek_v4/state.h"

namespace strata::dsv4 {

cache::CacheMap SequenceState::cache_map(const cache::CacheLayout& layout) {
  const size_t nl = layers.size();
  cache::CacheMap map;
  map.reserve(layout.specs.size());
  std::vector<int> compressors_seen(nl + mtp.size(), 0);
  for (const auto& spec : layout.specs) {
    const size_t l = size_t(spec.layer);
    if (spec.layer < 0 || l >= nl + mtp.size())
      throw Error("cache map: a spec names layer " + std::to_string(spec.layer) + ", the model has fewer");
    LayerState& L = l < nl ? layers[l] : mtp[l - nl];
    const int64_t layer_pos = l < nl ? pos : mtp_pos.at(l - nl);
    auto check = [&](bool ok) {
      if (!ok)
        throw Error("cache map: layer " + std::to_string(l) + "'s " + cache::kind_name(spec.kind) +
                    " does not match its spec");
    };
    cache::CachePiece p;
    switch (spec.kind) {
      case cache::CacheKind::sliding_window:
        p.regions = {L.ring};
        break;
      case cache::CacheKind::compressed:
        check(L.compressor.ratio == spec.tokens_per_entry);
        p.entries = &L.compressor.entries;
        p.tokens = layer_pos;
        break;
      case cache::CacheKind::indexer_keys:
        check(L.index_keys.ratio == spec.tokens_per_entry);
        p.entries = &L.index_keys.entries;
        p.tokens = layer_pos;
        break;
      case cache::CacheKind::compressor_state: {
        CompressorState& c = compressors_seen[l]++ == 0 ? L.compressor : L.index_keys;
        p.regions = {c.kv, c.score};
        break;
      }
      default:
        throw Error(std::string("cache map: DeepSeek-V4 keeps no ") + cache::kind_name(spec.kind) + " cache");
    }
    map.push_back(std::move(p));
  }
  return map;
}

std::unique_ptr<models::Sequence> SequenceState::clone() const {
  auto c = std::make_unique<SequenceState>(*this);
  c->indexer_scratch = nullptr;
  return c;
}

void SequenceState::use_workspace(const models::Workspace* w) {
  indexer_scratch = dynamic_cast<const IndexerScratch*>(w);
  if (w && !indexer_scratch) throw Error("a DeepSeek-V4 sequence was given another model's workspace");
}

}  // namespace strata::dsv4
