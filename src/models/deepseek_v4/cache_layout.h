// DeepSeek-V4's cache specs per layer (see cache/cache_spec.h), in the storage formats the
// paper describes:
//   window and compressed entries: the 448 non-RoPE dims as e4m3 with one e8m0 scale per 64
//     (the forward pass fake-quantizes exactly so, hence lossless) + 64 RoPE dims in bf16 =
//     448 + 7 + 128 = 583 bytes, padded to 584 for 8-byte alignment;
//   indexer keys: FP8 (the default, the serving literature's 132 bytes) = 128 e4m3 codes + 4
//     bytes of scale, here one e8m0 per 32 dims so that the FP4-valued keys stay exact; or
//     FP4 = 128 e2m1 with one e8m0 per 32 (exactly the forward pass's FP4 fake-quant) = 68;
//   compressor partial state: fp32 kv and score slots, coff·ratio × coff·head_dim each.
#pragma once
#include "cache/cache_spec.h"
#include "models/deepseek_v4/config.h"
#include "models/deepseek_v4/entry_codec.h"

namespace strata::dsv4 {

struct CacheLayoutOptions {
  // FP8 (132 B) is the default, as the serving literature stores index keys; FP4 (68 B) holds
  // the same values (the indexer fake-quantizes keys to FP4) in half the bytes.
  IndexKeyFormat index_keys = IndexKeyFormat::fp8;
  bool include_mtp = false;  // the MTP block's window (only used by speculative decoding)
  // Byte-model overrides, to reproduce other accountings (0 = the formats above): e.g.
  // layer-by-layer §9.2 counts 576-byte entries without scale bytes and 64-byte FP4 keys.
  int64_t entry_bytes_override = 0, index_key_bytes_override = 0;
};

// The codecs the model state stores its entries with; their bytes() are the specs' entry_bytes.
EntryCodec kv_codec(const Config& c);
EntryCodec index_key_codec(const Config& c, IndexKeyFormat f);
int64_t kv_entry_bytes(const Config& c);
int64_t index_key_bytes(const Config& c, IndexKeyFormat f);
cache::CacheLayout cache_layout(const Config& c, const CacheLayoutOptions& o = {});

}  // namespace strata::dsv4
