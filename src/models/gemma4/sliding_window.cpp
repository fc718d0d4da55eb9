#include "models/gemma4/sliding_window.h"

#include <algorithm>
#include <cstring>

namespace strata::gemma4 {

KvView sliding_view(const LayerState& L, const uint16_t* fresh, int64_t pos0, int64_t rows, int64_t kv_values) {
  const int64_t W = L.window, E = L.entry_values, end = pos0 + rows;
  KvView v;
  v.first = std::max<int64_t>(0, pos0 - W + 1);
  // Ring rows of positions < end − W are overwritten by this pass's writes: copied.
  const int64_t saved_end = std::min(pos0, end - W);
  const int64_t saved = std::max<int64_t>(0, saved_end - v.first);
  v.owned.resize(size_t((saved + rows) * E));
  if (rows > 0) std::memcpy(v.owned.data(), fresh, size_t(rows * E) * 2);
  for (int64_t i = 0; i < saved; ++i)
    std::memcpy(v.owned.data() + (rows + i) * E, L.ring_entry(v.first + i), size_t(E) * 2);
  for (int64_t p = v.first; p < end; ++p) {
    const uint16_t* e = p >= pos0 ? v.owned.data() + (p - pos0) * E
                        : p < saved_end ? v.owned.data() + (rows + p - v.first) * E
                                        : L.ring_entry(p);
    v.k.push_back(e);
    v.v.push_back(e + kv_values);
  }
  return v;
}

void write_ring(LayerState& L, const uint16_t* fresh, int64_t pos0, int64_t rows, cache::UndoLog* undo) {
  const int64_t E = L.entry_values;
  // Rows the pass itself overwrites are skipped, unless the pass may be rolled back to a
  // position among them: then every row is written in order, each write recorded.
  const int64_t from = undo ? pos0 : std::max(pos0, pos0 + rows - L.window);
  for (int64_t p = from; p < pos0 + rows; ++p) {
    uint16_t* slot = L.ring_slot(p);
    cache::save_before_write(undo, p, slot, size_t(E));
    std::memcpy(slot, fresh + (p - pos0) * E, size_t(E) * 2);
  }
}

}  // namespace strata::gemma4
