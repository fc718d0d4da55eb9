// A DSA sequence: per layer its latent cache (one 656-byte entry a token at kv_lora 512: the FP8
// latent, its fp32 block scales, the bf16 RoPE key) and, in layers with an indexer of their own,
// its index-key cache (132 bytes a token: FP8 key + fp32 scale); the same for the MTP layer.
#pragma once
#include <cstdint>
#include <vector>

#include "cache/entry_array.h"
#include "cache/undo_log.h"
#include "models/dsa/config.h"
#include "models/model.h"

namespace strata::dsa {

struct LayerState {
  cache::EntryArray latent;
  cache::EntryArray index_keys;  // empty and unused in a shared-indexer layer
  bool has_index_keys = false;
  // How many of the first n entries are fillers, which no query reads: an MTP layer restarted at
  // a position keeps one entry per token (the pool's accounting) without the history it never
  // saw. Derived from the entries themselves (a filler's scales are zero, a real entry's never),
  // so a copy, an export or a prefix restore carries it with them.
  int64_t fillers(int64_t n, int64_t kv_lora) const;
};

struct SequenceState final : models::Sequence {
  std::vector<LayerState> layers;
  std::vector<LayerState> mtp;

  cache::CacheMap cache_map(const cache::CacheLayout& layout) override;
  std::unique_ptr<models::Sequence> clone() const override { return std::make_unique<SequenceState>(*this); }
};

SequenceState new_state(const Config& c);

// One sequence's rows of a stacked pass through one layer.
struct Segment {
  LayerState* layer;
  int64_t pos0, rows;
  cache::UndoLog* undo;
};

}  // namespace strata::dsa
