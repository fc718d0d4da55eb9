// Places a DeepSeek-V4 sequence state in the engine's cache pool: every fixed-size piece (window
// ring, compressor slot rows) in the request's slot, every growing cache (compressed entries,
// indexer keys) in its blocks, at the offsets the layout's specs give (cache/pool.h). From then
// on the forward pass reads and writes pool memory, and the pool's bytes for the request are
// the ledger's. The walk follows cache_layout()'s spec order; a layout without the MTP block
// leaves the MTP state owned.
#pragma once
#include <cstdint>

#include "cache/pool.h"
#include "models/deepseek_v4/state.h"

namespace strata::dsv4 {

// The state's contents move into the pool (seq must hold a slot and blocks for st.pos tokens).
void bind_to_pool(SequenceState& st, cache::CachePool& pool, cache::PoolSeq& seq);
// The pool already holds the state's contents (a restored prefix checkpoint: its slot copied,
// its blocks shared); st has the right positions and the shape of new_sequence(). Entry counts
// follow from the positions.
void adopt_from_pool(SequenceState& st, cache::CachePool& pool, cache::PoolSeq& seq);
// Blocks every bound growing cache of st has filled: these are final and may be shared; a
// block past them is still being written (an MTP layer running a token behind) and is copied.
int64_t complete_blocks(const SequenceState& st, const cache::CacheLayout& layout);

}  // namespace strata::dsv4
