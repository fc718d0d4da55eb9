// Per-sequence decoding state of DeepSeek-V4, one small struct per layer: the sliding-window
// ring of raw KV entries, the compressor's partial block and finished entries, and the
// indexer's compressor (whose entries are the index keys). A later cache layer pools these;
// the forward pass only needs "run these tokens at these positions for this state".
#pragma once
#include <cstdint>
#include <vector>

#include "models/deepseek_v4/compressor.h"

namespace strata::dsv4 {

struct LayerState {
  int64_t window = 0, head_dim = 0;
  std::vector<float> ring;        // [window][head_dim]; position p lives in slot p % window
  CompressorState compressor;     // ratio > 0: main compressed entries
  CompressorState index_keys;     // ratio 4: indexer compressor, entries = index keys
  const float* window_entry(int64_t pos) const { return ring.data() + (pos % window) * head_dim; }
};

struct SequenceState {
  int64_t pos = 0;  // tokens processed so far = position of the next token
  std::vector<LayerState> layers;
  // MTP block j's attention state and its own position counter (it runs one step behind).
  std::vector<LayerState> mtp;
  std::vector<int64_t> mtp_pos;
  // Speculative decoding keeps the MTP block one token behind the main layers: these are the
  // main streams [hc][d] of the token at pos - 1, whose next token the MTP has not seen yet.
  std::vector<float> mtp_hidden;
};

}  // namespace strata::dsv4
