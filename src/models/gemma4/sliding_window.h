// A sliding layer's ring (state.h) in a pass of `rows` tokens from pos0: a row at p sees
// positions max(0, p − window + 1) .. p. The view covers them all before the ring is written:
// ring rows the pass will overwrite are copied first, others are read in place; then the
// pass's last min(rows, window) entries go into their slots (with an undo log: every entry, in
// order, each write recorded, so a rollback to any position of the pass restores the ring).
#pragma once
#include <cstdint>

#include "cache/undo_log.h"
#include "models/gemma4/kv_view.h"
#include "models/gemma4/state.h"

namespace strata::gemma4 {

// fresh: the pass's entries [rows][entry_values] (K then V); kv_values = KV heads × D.
KvView sliding_view(const LayerState& L, const uint16_t* fresh, int64_t pos0, int64_t rows, int64_t kv_values);
void write_ring(LayerState& L, const uint16_t* fresh, int64_t pos0, int64_t rows, cache::UndoLog* undo);

}  // namespace strata::gemma4
