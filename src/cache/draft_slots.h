// Where a token reads and writes a state rolled back by draft slots (kind_policy.h): a
// recurrent state that every token rewrites whole. Outside speculation (no undo log) each token
// updates the live state in place. In a speculative pass of `rows` tokens at positions pos0..,
// token i reads its predecessor's state (the live one for i = 0, draft slot i - 1 otherwise)
// and writes draft slot i; the last token writes the live state. Nothing is copied while the
// pass runs: rolling back to a kept position copies one slot into the live state (an undo
// restore record per token), and a pass whose every token is kept needs no copy at all.
#pragma once
#include <cstdint>
#include <string>

#include "cache/undo_log.h"
#include "core/error.h"

namespace strata::cache {

template <class T>
struct DraftStep {
  const T* in;
  T* out;
};

// live: the state (`size` elements); drafts: `copies` more of the same size after it.
template <class T>
DraftStep<T> draft_step(T* live, T* drafts, int64_t size, int64_t copies, int64_t i, int64_t rows, int64_t pos0,
                        UndoLog* undo) {
  if (!undo) return {live, live};
  if (rows - 1 > copies)
    throw Error("a speculative pass of " + std::to_string(rows) + " tokens needs " + std::to_string(rows - 1) +
                " draft slots; the state has " + std::to_string(copies));
  const T* in = i == 0 ? live : drafts + (i - 1) * size;
  if (i > 0) undo->save_restore(pos0 + i, live, in, size_t(size) * sizeof(T));
  return {in, i == rows - 1 ? live : drafts + i * size};
}

}  // namespace strata::cache
