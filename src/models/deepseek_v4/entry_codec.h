// How DeepSeek-V4 keeps one cache entry in memory: the ledger's storage formats
// (cache_layout.h sizes its specs with EntryCodec::bytes, so the bytes a state holds are the
// bytes the ledger predicts).
//
//   kv     window and compressed entries: the NoPE dims as e4m3 codes with one e8m0 scale per
//          64, the RoPE dims as bf16 (V4: 448 + 7 + pad 1 + 128 = 584 bytes).
//   index  indexer keys: fp8 = head_dim e4m3 codes + one e8m0 scale per 32 (V4: 132 bytes),
//          fp4 = head_dim e2m1 nibbles + one e8m0 scale per 32 (V4: 68 bytes).
//
// Lossless by construction: the forward pass has already fake-quantized these values in exactly
// these blocks (FP8 in 64s for kv entries, FP4 in 32s for index keys), so every value is a code
// times a power of two. pack() re-derives each block's scale from its own amax — never larger
// than the quantizer's, so every value stays a code — and checks that unpack() gives back the
// same bits; it throws if not (a value the forward pass could not have made).
#pragma once
#include <cstdint>

namespace strata::dsv4 {

enum class IndexKeyFormat { fp4, fp8 };

struct EntryCodec {
  enum class Kind { kv, index_fp8, index_fp4 };
  Kind kind = Kind::kv;
  int64_t head_dim = 0, rope_dim = 0;  // rope_dim: kv only

  static EntryCodec kv(int64_t head_dim, int64_t rope_dim) { return {Kind::kv, head_dim, rope_dim}; }
  static EntryCodec index(int64_t head_dim, IndexKeyFormat f) {
    return {f == IndexKeyFormat::fp4 ? Kind::index_fp4 : Kind::index_fp8, head_dim, 0};
  }

  bool operator==(const EntryCodec&) const = default;
  int64_t bytes() const;  // one entry, padded to 8 bytes for kv entries
  void pack(const float* x, uint8_t* out) const;
  void unpack(const uint8_t* in, float* x) const;
};

}  // namespace strata::dsv4
