// A Qwen3.5 sequence: per Gated DeltaNet layer its fp32 state [Hv][Dk][Dv] and bf16 conv tail
// [K-1][conv_dim] (with their draft copies when a pass may verify drafts), per full-attention
// layer its K/V entries (bf16 K after its norm and RoPE, then V), and the MTP layer's K/V.
#pragma once
#include <cstdint>
#include <vector>

#include "cache/entry_array.h"
#include "cache/fixed_region.h"
#include "cache/undo_log.h"
#include "models/model.h"
#include "models/qwen3_5/config.h"

namespace strata::qwen35 {

struct LayerState {
  bool linear = false;
  cache::FixedRegion<float> state;
  cache::FixedRegion<uint16_t> conv;
  cache::FixedRegion<float> state_drafts;
  cache::FixedRegion<uint16_t> conv_drafts;
  int64_t draft_copies = 0;
  cache::EntryArray kv;
};

struct SequenceState final : models::Sequence {
  std::vector<LayerState> layers;
  std::vector<LayerState> mtp;

  cache::CacheMap cache_map(const cache::CacheLayout& layout) override;
  std::unique_ptr<models::Sequence> clone() const override { return std::make_unique<SequenceState>(*this); }
};

SequenceState new_state(const Config& c, int64_t draft_copies);

// One sequence's rows of a stacked pass through one layer.
struct Segment {
  LayerState* layer;
  int64_t pos0, rows;
  cache::UndoLog* undo;
};

}  // namespace strata::qwen35
