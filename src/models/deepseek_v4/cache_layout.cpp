#include "models/deepseek_v4/cache_layout.h"

#include <numeric>
#include <string>

namespace strata::dsv4 {
using cache::CacheKind;
using cache::CacheSpec;

EntryCodec kv_codec(const Config& c) { return EntryCodec::kv(c.head_dim, c.qk_rope_head_dim); }
EntryCodec index_key_codec(const Config& c, IndexKeyFormat f) { return EntryCodec::index(c.index_head_dim, f); }
int64_t kv_entry_bytes(const Config& c) { return kv_codec(c).bytes(); }
int64_t index_key_bytes(const Config& c, IndexKeyFormat f) { return index_key_codec(c, f).bytes(); }

cache::CacheLayout cache_layout(const Config& c, const CacheLayoutOptions& o) {
  cache::CacheLayout L;
  // lcm of the compression ratios in use, so one block holds whole entries of every layer
  // (128 for V4); a window-only model keeps the default.
  int64_t block = 1;
  for (int64_t r : c.compress_ratios)
    if (r > 0) block = std::lcm(block, r);
  if (block > 1) L.block_tokens = block;
  const int64_t kv = o.entry_bytes_override ? o.entry_bytes_override : kv_entry_bytes(c);
  const std::string kv_fmt = std::to_string(c.head_dim - c.qk_rope_head_dim) + " e4m3 + " +
                             std::to_string((c.head_dim - c.qk_rope_head_dim) / 64) + " e8m0 + " +
                             std::to_string(c.qk_rope_head_dim) + " bf16";
  const int64_t layers = c.num_hidden_layers + (o.include_mtp ? c.num_nextn_predict_layers : 0);
  for (int64_t l = 0; l < layers; ++l) {
    L.specs.push_back({CacheKind::sliding_window, l, kv, c.sliding_window, 1, kv_fmt});
    const int64_t r = c.compress_ratio(l);
    if (r == 0) continue;
    const int64_t coff = r == 4 ? 2 : 1;  // ratio 4 keeps the previous block for the overlap
    L.specs.push_back({CacheKind::compressed, l, kv, 0, r, kv_fmt});
    L.specs.push_back({CacheKind::compressor_state, l, 2 * (coff * r) * (coff * c.head_dim) * 4, 1, 1,
                       "fp32 kv + score, " + std::to_string(coff * r) + " x " + std::to_string(coff * c.head_dim)});
    if (r == 4) {
      const bool fp4 = o.index_keys == IndexKeyFormat::fp4;
      const int64_t ik = o.index_key_bytes_override ? o.index_key_bytes_override : index_key_bytes(c, o.index_keys);
      L.specs.push_back({CacheKind::indexer_keys, l, ik, 0, r,
                         fp4 ? std::to_string(c.index_head_dim) + " e2m1 + " + std::to_string(c.index_head_dim / 32) + " e8m0"
                             : std::to_string(c.index_head_dim) + " e4m3 + " + std::to_string(c.index_head_dim / 32) + " e8m0"});
      L.specs.push_back({CacheKind::compressor_state, l, 2 * (coff * r) * (coff * c.index_head_dim) * 4, 1, 1,
                         "indexer fp32 kv + score, " + std::to_string(coff * r) + " x " +
                             std::to_string(coff * c.index_head_dim)});
    }
  }
  return L;
}

}  // namespace strata::dsv4
