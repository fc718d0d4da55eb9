// Declarative cache specs: what each layer of a model keeps per request, in which format, and
// how it grows. The memory pool allocates from these specs and `strata ledger` prints them,
// so predicted and allocated bytes are the same numbers.
//
// Growing kinds (compressed entries, indexer keys, full-attention KV, MLA latents) are
// allocated in blocks that cover `block_tokens` tokens of context (128 for DeepSeek-V4: the lcm
// of its ratios 4 and 128); fixed kinds (sliding-window ring, compressor partial state,
// linear-attention state) take one slot per request whatever the context length. What each
// kind does for the pool, the prefix cache, rollback and export is its policy (kind_policy.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::cache {

enum class CacheKind {
  sliding_window,    // ring of the last `entries` raw KV entries
  compressed,        // one entry per `tokens_per_entry` tokens (CSA ratio 4, HCA ratio 128)
  indexer_keys,      // one index key per `tokens_per_entry` tokens (CSA, DSA)
  compressor_state,  // fp32 kv + score slots of the unfinished block
  linear_state,      // fixed-size recurrent state (Gated DeltaNet, KDA) + its conv tail
  full_attention,    // one K/V entry per token (GQA layers, e.g. Qwen3.5's gated attention)
  mla_latent,        // one compressed latent (+ RoPE key) per token (MLA layers)
};
const char* kind_name(CacheKind k);
bool kind_grows(CacheKind k);

struct CacheSpec {
  CacheKind kind;
  int64_t layer = 0;        // model layer (MTP layers continue the numbering)
  int64_t entry_bytes = 0;  // bytes of one entry (or of the whole state for fixed kinds with entries = 1)
  int64_t entries = 0;      // fixed kinds: entries per request
  int64_t tokens_per_entry = 1;  // growing kinds: one entry per this many tokens
  std::string format;       // e.g. "448 e4m3 + 7 e8m0 + 64 bf16"
  // Kinds rolled back by draft slots (kind_policy.h): one more copy of the state per draft
  // token a speculative step may verify; they sit in the request's slot after the live state.
  int64_t draft_copies = 0;

  // Bytes one request holds for `context` tokens (exact entry count, no block rounding).
  int64_t bytes_exact(int64_t context) const;
  // Fixed kinds: the live state's bytes (what a checkpoint or an export holds), and the slot
  // room with the draft copies; growing kinds: 0.
  int64_t live_bytes() const { return kind_grows(kind) ? 0 : entry_bytes * entries; }
  int64_t fixed_bytes() const { return live_bytes() * (1 + draft_copies); }
  // Growing kinds: entries per block of `block_tokens`; bytes of one block.
  int64_t entries_per_block(int64_t block_tokens) const { return kind_grows(kind) ? block_tokens / tokens_per_entry : 0; }
  int64_t block_bytes(int64_t block_tokens) const { return entries_per_block(block_tokens) * entry_bytes; }
};

struct CacheLayout {
  std::vector<CacheSpec> specs;
  int64_t block_tokens = 128;

  // Per request: bytes per token of context (average over a block), fixed bytes, bytes for a
  // context of n tokens allocated in whole blocks, and without block rounding.
  double bytes_per_token() const;
  int64_t fixed_bytes() const;
  int64_t draft_bytes() const;  // the part of fixed_bytes() that is draft copies
  int64_t block_bytes() const;  // all growing specs, one block
  int64_t blocks_for(int64_t context) const { return (context + block_tokens - 1) / block_tokens; }
  int64_t bytes_for(int64_t context) const { return fixed_bytes() + blocks_for(context) * block_bytes(); }
  int64_t bytes_exact(int64_t context) const;
};

}  // namespace strata::cache
