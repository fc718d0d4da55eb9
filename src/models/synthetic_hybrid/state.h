// A strata_hybrid sequence: per Gated DeltaNet layer its fp32 state [Hv][Dk][Dv] and bf16 conv
// tail [K-1][conv_dim] (with their draft copies when the pass may verify drafts), per
// full-attention layer its K/V entries, and the MTP block's K/V entries.
#pragma once
#include <cstdint>
#include <vector>

#include "cache/entry_array.h"
#include "cache/fixed_region.h"
#include "models/model.h"
#include "models/synthetic_hybrid/config.h"

namespace strata::hybrid {

struct LayerState {
  bool linear = false;
  // Gated DeltaNet: the live state and conv tail, then `draft_copies` more of each.
  cache::FixedRegion<float> state;
  cache::FixedRegion<uint16_t> conv;
  cache::FixedRegion<float> state_drafts;
  cache::FixedRegion<uint16_t> conv_drafts;
  int64_t draft_copies = 0;
  // Full attention: one entry per token, K [kv_heads][head_dim] then V, bf16.
  cache::EntryArray kv;
};

struct SequenceState final : models::Sequence {
  std::vector<LayerState> layers;
  LayerState mtp;  // the MTP block's attention (full attention)

  cache::CacheMap cache_map(const cache::CacheLayout& layout) override;
  std::unique_ptr<models::Sequence> clone() const override { return std::make_unique<SequenceState>(*this); }
};

// An empty state; draft_copies: the draft slots of each recurrent layer.
SequenceState new_state(const Config& c, int64_t draft_copies);

}  // namespace strata::hybrid
