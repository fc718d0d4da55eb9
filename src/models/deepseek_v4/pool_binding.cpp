#include "models/deepseek_v4/pool_binding.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "core/error.h"

namespace strata::dsv4 {

namespace {

// Visits (spec index, the state piece it describes) in layout order: per layer its window,
// then per compressor its entries and its slot rows (main compressor, then the indexer's).
template <class Ring, class Entries, class Slots>
void walk(SequenceState& st, const cache::CacheLayout& layout, Ring on_ring, Entries on_entries, Slots on_slots) {
  const size_t nl = st.layers.size();
  std::vector<int> compressors_seen(nl + st.mtp.size(), 0);
  for (size_t i = 0; i < layout.specs.size(); ++i) {
    const auto& spec = layout.specs[i];
    const size_t l = size_t(spec.layer);
    if (l >= nl + st.mtp.size()) throw Error("cache pool: a spec names layer " + std::to_string(l) + ", the model has fewer");
    LayerState& L = l < nl ? st.layers[l] : st.mtp[l - nl];
    const int64_t layer_pos = l < nl ? st.pos : st.mtp_pos[l - nl];
    const char* what = cache::kind_name(spec.kind);
    auto check = [&](bool ok) {
      if (!ok) throw Error(std::string("cache pool: layer ") + std::to_string(l) + "'s " + what + " does not match its spec");
    };
    switch (spec.kind) {
      case cache::CacheKind::sliding_window:
        check(int64_t(L.ring.size()) == spec.fixed_bytes());
        on_ring(i, L.ring);
        break;
      case cache::CacheKind::compressed:
        check(L.compressor.ratio == spec.tokens_per_entry && L.compressor.codec.bytes() == spec.entry_bytes);
        on_entries(i, L.compressor, layer_pos);
        break;
      case cache::CacheKind::indexer_keys:
        check(L.index_keys.ratio == spec.tokens_per_entry && L.index_keys.codec.bytes() == spec.entry_bytes);
        on_entries(i, L.index_keys, layer_pos);
        break;
      case cache::CacheKind::compressor_state: {
        CompressorState& c = compressors_seen[l]++ == 0 ? L.compressor : L.index_keys;
        check(int64_t((c.kv.size() + c.score.size()) * sizeof(float)) == spec.fixed_bytes());
        on_slots(i, c);
        break;
      }
      default:
        throw Error(std::string("cache pool: DeepSeek-V4 has no ") + what + " cache");
    }
  }
}

// bind: the state's contents move into the pool; adopt: the pool holds them already.
void place(SequenceState& st, cache::CachePool& pool, cache::PoolSeq& seq, bool adopt) {
  const auto& layout = pool.layout();
  if (seq.slot < 0 || int64_t(seq.blocks.size()) < layout.blocks_for(st.pos))
    throw Error("cache pool: the request holds no room for its state");
  uint8_t* slot = pool.slot_data(seq.slot);
  auto fixed = [&](auto& region, void* at) {
    using T = std::remove_reference_t<decltype(region[0])>;
    if (adopt) region.adopt(static_cast<T*>(at));
    else region.bind(static_cast<T*>(at));
  };
  walk(
      st, layout, [&](size_t i, cache::FixedRegion<uint8_t>& ring) { fixed(ring, slot + pool.spec_offset(i)); },
      [&](size_t i, CompressorState& c, int64_t layer_pos) {
        const int64_t per_block = layout.specs[i].entries_per_block(layout.block_tokens);
        if (adopt) c.entries.adopt(&seq.block_ptrs, pool.spec_offset(i), per_block, layer_pos / c.ratio);
        else c.entries.bind(&seq.block_ptrs, pool.spec_offset(i), per_block);
      },
      [&](size_t i, CompressorState& c) {
        float* at = reinterpret_cast<float*>(slot + pool.spec_offset(i));
        fixed(c.kv, at);
        fixed(c.score, at + c.kv.size());
      });
}
}  // namespace

void bind_to_pool(SequenceState& st, cache::CachePool& pool, cache::PoolSeq& seq) { place(st, pool, seq, false); }
void adopt_from_pool(SequenceState& st, cache::CachePool& pool, cache::PoolSeq& seq) { place(st, pool, seq, true); }

int64_t complete_blocks(const SequenceState& st, const cache::CacheLayout& layout) {
  int64_t blocks = layout.blocks_for(st.pos);
  walk(
      const_cast<SequenceState&>(st), layout, [](size_t, cache::FixedRegion<uint8_t>&) {},
      [&](size_t i, CompressorState& c, int64_t) {
        blocks = std::min(blocks, int64_t(c.entries.size()) / layout.specs[i].entries_per_block(layout.block_tokens));
      },
      [](size_t, CompressorState&) {});
  return blocks;
}

}  // namespace strata::dsv4
