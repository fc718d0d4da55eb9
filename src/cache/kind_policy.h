// What each cache kind does, in one place: where the pool keeps it, how the prefix cache
// checkpoints it, how a rejected speculative draft is undone, and what an exported request
// carries of it. The pool, the prefix cache, rollback and request export read these policies
// (cache_map.h) instead of knowing kinds; a model declares kinds per layer (cache_spec.h) and
// maps its state onto them (Sequence::cache_map).
#pragma once
#include "cache/cache_spec.h"

namespace strata::cache {

// Where a kind lives: one slot per request (its size fixed by the config), or blocks that
// cover block_tokens tokens of context each.
enum class Storage { slot, blocks };

// How a prefix checkpoint at a block boundary keeps it: the live slot state copied into the
// checkpoint's own slot, or the complete blocks shared by reference (a block still being
// written copied).
enum class Checkpoint { copy_slot_state, share_blocks };

// How rejected speculative tokens are undone (undo_log.h):
//   undo_records  each write first saves the bytes it overwrites (ring slots, compressor rows);
//   truncate      appends are undone by truncation, nothing copied;
//   draft_slots   each drafted token's state goes to a slot of its own, and the kept token's
//                 slot is copied back once: a recurrent state is rewritten whole by every token
//                 (1 MiB a layer for Qwen3.5-0.8B), so saving it per token would copy it k times.
enum class Rollback { undo_records, truncate, draft_slots };

struct KindPolicy {
  const char* name;
  Storage storage;
  Checkpoint checkpoint;
  Rollback rollback;
  // Export: every kind writes its live bytes (fixed kinds) or its entries (growing kinds) in
  // their storage format, so a restore is bit-exact; draft copies are scratch and not written.
};

const KindPolicy& policy(CacheKind k);

}  // namespace strata::cache
