// A Gemma 4 sequence: per sliding layer a ring of its last `sliding_window` K/V entries
// (position p in slot p % window), per full layer one entry per token (K + V, or the K=V
// projection alone); KV-shared layers keep nothing (they read their source layer's).
#pragma once
#include <cstdint>
#include <vector>

#include "cache/entry_array.h"
#include "cache/fixed_region.h"
#include "cache/undo_log.h"
#include "models/gemma4/config.h"
#include "models/model.h"

namespace strata::gemma4 {

struct LayerState {
  enum class Kind { sliding, full, shared } kind = Kind::shared;
  int64_t window = 0, entry_values = 0;  // bf16 values an entry
  cache::FixedRegion<uint16_t> ring;     // sliding: [window][entry_values]
  cache::EntryArray kv;                  // full
  const uint16_t* ring_entry(int64_t pos) const { return ring.data() + (pos % window) * entry_values; }
  uint16_t* ring_slot(int64_t pos) { return ring.data() + (pos % window) * entry_values; }
};

struct SequenceState final : models::Sequence {
  std::vector<LayerState> layers;

  cache::CacheMap cache_map(const cache::CacheLayout& layout) override;
  std::unique_ptr<models::Sequence> clone() const override { return std::make_unique<SequenceState>(*this); }
};

SequenceState new_state(const Config& c);

// One sequence's rows of a stacked pass through one layer.
struct Segment {
  LayerState* layer;  // the layer's own state (a shared layer: its source's)
  int64_t pos0, rows;
  cache::UndoLog* undo;
};

}  // namespace strata::gemma4
