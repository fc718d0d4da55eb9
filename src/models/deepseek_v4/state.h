// Per-sequence decoding state of DeepSeek-V4, one small struct per layer: the sliding-window
// ring of raw KV entries, the compressor's partial block and finished entries, and the
// indexer's compressor (whose entries are the index keys), every entry in the ledger's storage
// format (entry_codec.h). A state stands alone (owned memory) or lives in the engine's cache
// pool (its cache_map places each piece at its spec); the forward pass reads and writes it the
// same way either way.
#pragma once
#include <cstdint>
#include <vector>

#include "models/deepseek_v4/compressor.h"
#include "models/model.h"

namespace strata::dsv4 {

class IndexerScratch;

struct LayerState {
  int64_t window = 0, head_dim = 0;
  // Window ring [window] entries in their storage format (codec.bytes() each); position p
  // lives in slot p % window.
  EntryCodec codec;
  cache::FixedRegion<uint8_t> ring;  // owned, or in the request's pool slot
  CompressorState compressor;     // ratio > 0: main compressed entries
  CompressorState index_keys;     // ratio 4: indexer compressor, entries = index keys
  const uint8_t* window_entry(int64_t pos) const { return ring.data() + (pos % window) * codec.bytes(); }
  uint8_t* window_slot(int64_t pos) { return ring.data() + (pos % window) * codec.bytes(); }
};

// pos, mtp_pos and mtp_hidden (the main streams [hc][d] of position pos - 1) are the
// Sequence's; mtp holds MTP block j's attention state.
struct SequenceState final : models::Sequence {
  std::vector<LayerState> layers;
  std::vector<LayerState> mtp;
  // Where the forward pass's indexer works (indexer_scratch.h): the engine's, carved from its
  // cache pool; null for a standalone state (the indexer then uses a scratch of its thread's).
  // Not part of the state's contents: clones, exports and checkpoints leave it out.
  const IndexerScratch* indexer_scratch = nullptr;

  // Per layer in layout order: the window, then per compressor its entries and its slot rows
  // (the main compressor's, then the indexer's); MTP layers continue the numbering.
  cache::CacheMap cache_map(const cache::CacheLayout& layout) override;
  std::unique_ptr<models::Sequence> clone() const override;
  void use_workspace(const models::Workspace* w) override;
};

}  // namespace strata::dsv4
