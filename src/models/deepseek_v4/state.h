// Per-sequence decoding state of DeepSeek-V4, one small struct per layer: the sliding-window
// ring of raw KV entries, the compressor's partial block and finished entries, and the
// indexer's compressor (whose entries are the index keys), every entry in the ledger's storage
// format (entry_codec.h). A state stands alone (owned memory) or lives in the engine's cache
// pool (pool_binding.h); the forward pass reads and writes it the same way either way.
#pragma once
#include <cstdint>
#include <vector>

#include "models/deepseek_v4/compressor.h"

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

struct SequenceState {
  int64_t pos = 0;  // tokens processed so far = position of the next token
  std::vector<LayerState> layers;
  // MTP block j's attention state and its own position counter (it runs one step behind).
  std::vector<LayerState> mtp;
  std::vector<int64_t> mtp_pos;
  // Speculative decoding keeps the MTP block one token behind the main layers: these are the
  // main streams [hc][d] of the token at pos - 1, whose next token the MTP has not seen yet.
  std::vector<float> mtp_hidden;  // Where the forward pass's indexer works (indexer_scratch.h): the engine's, carved from its
  // cache pool; null for a standalone state (the indexer then uses a scratch of its thread's).
  // Not part of the state's contents: snapshots and state_fits ignore it.
  const IndexerScratch* indexer_scratch = nullptr;
};

// Whether st (e.g. read from a snapshot) has the shape of `fresh` (new_sequence() of the model
// it is meant for) at its positions: same layers, formats and sizes, one entry per finished
// block. Everything else in a state is plain values.
inline bool compressor_fits(const CompressorState& c, const CompressorState& f, int64_t pos) {
  if (c.ratio != f.ratio || c.head_dim != f.head_dim || c.overlap != f.overlap || !(c.codec == f.codec) ||
      c.kv.size() != f.kv.size() || c.score.size() != f.score.size())
    return false;
  if (f.ratio == 0) return c.entries.empty();
  return c.entries.size() == size_t(pos / f.ratio) && c.entries.entry_bytes() == f.codec.bytes();
}
inline bool layer_fits(const LayerState& l, const LayerState& f, int64_t pos) {
  return l.window == f.window && l.head_dim == f.head_dim && l.codec == f.codec && l.ring.size() == f.ring.size() &&
         compressor_fits(l.compressor, f.compressor, pos) && compressor_fits(l.index_keys, f.index_keys, pos);
}
inline bool state_fits(const SequenceState& st, const SequenceState& fresh) {
  if (st.pos < 0 || st.layers.size() != fresh.layers.size() || st.mtp.size() != fresh.mtp.size() ||
      st.mtp_pos.size() != fresh.mtp_pos.size())
    return false;
  for (size_t l = 0; l < st.layers.size(); ++l)
    if (!layer_fits(st.layers[l], fresh.layers[l], st.pos)) return false;
  for (size_t j = 0; j < st.mtp.size(); ++j)
    if (st.mtp_pos[j] < 0 || st.mtp_pos[j] > st.pos || !layer_fits(st.mtp[j], fresh.mtp[j], st.mtp_pos[j])) return false;
  return true;
}

}  // namespace strata::dsv4
