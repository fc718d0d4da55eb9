// The KV compressor (reference class Compressor): learned gated pooling of `ratio` tokens into
// one entry. Per token: fp32 projections kv = Wkv·x, score = Wgate·x + ape[pos % ratio] are
// written into a slot state; when a block completes ((pos+1) % ratio == 0) a per-channel
// softmax over the slots pools it. Ratio 4 overlaps: the entry reads the previous block's
// first-half channels (slots 0..3) and the current block's second-half channels (4..7).
// Then: bf16 cast, RMSNorm, RoPE on the last rope_dim dims at the block's first position
// (pos + 1 − ratio), and FP8 fake-quant of the other dims in 64-blocks — or, for the
// indexer's compressor (rotate), a Hadamard rotation and FP4 fake-quant of the whole vector.
//
// Prefill in the reference pools whole blocks at once; that is the same arithmetic on the
// same slot values, so strata always runs the per-token path (token-by-token == all at once).
#pragma once
#include <cstdint>
#include <vector>

#include "cache/entry_array.h"
#include "cache/fixed_region.h"
#include "cache/undo_log.h"
#include "kernels/rope.h"
#include "models/deepseek_v4/entry_codec.h"
#include "models/deepseek_v4/weights.h"

namespace strata::dsv4 {

struct CompressorState {
  int64_t ratio = 0, head_dim = 0;
  bool overlap = false;
  // Slot state [coff·ratio][coff·head_dim]; with overlap rows 0..ratio-1 hold the previous
  // block, rows ratio.. the current one. kv starts at 0 and score at −inf (empty slots weigh 0).
  // Owned, or in the request's pool slot (cache/fixed_region.h).
  cache::FixedRegion<float> kv, score;
  // Completed entries in their storage format (entry_codec.h), codec.bytes() each: owned, or
  // in the request's pool blocks (cache/entry_array.h).
  EntryCodec codec;
  cache::EntryArray entries;
  int64_t n_entries() const { return int64_t(entries.size()); }
  const uint8_t* entry(int64_t i) const { return entries.entry(i); }
  // Entry i's values [head_dim] (exactly the fake-quantized values the compressor made).
  void entry_values(int64_t i, float* x) const { codec.unpack(entry(i), x); }
  // Every entry's values [n][head_dim] (tests and tools).
  std::vector<float> values() const;

  // head_dim is codec.head_dim.
  void init(int64_t ratio, EntryCodec codec);
};

struct CompressorSpec {
  int64_t ratio = 0, head_dim = 0, rope_dim = 0;
  bool rotate = false;  // indexer keys: Hadamard + FP4 instead of FP8 on the NoPE dims
  float norm_eps = 1e-6f;
  const kernels::RopeTable* rope = nullptr;
};

// fp32 projections of `rows` inputs x[rows, d] (bf16 values): kv and score, [rows, coff·head_dim].
void compressor_project(const CompressorWeights& w, const CompressorSpec& s, const float* x, int64_t rows, float* kv,
                        float* score);

// Feeds one token's projections at position pos; appends an entry when its block completes.
// Returns true when an entry was produced. undo, when set, records what the step overwrites.
bool compressor_step(const CompressorWeights& w, const CompressorSpec& s, CompressorState& st, const float* kv,
                     const float* score, int64_t pos, cache::UndoLog* undo = nullptr);

}  // namespace strata::dsv4
