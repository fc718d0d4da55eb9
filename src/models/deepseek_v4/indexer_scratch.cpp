#include "models/deepseek_v4/indexer_scratch.h"

#include <string>

#include "core/error.h"

namespace strata::dsv4 {

namespace {
int64_t align64(int64_t v) { return (v + 63) / 64 * 64; }
// Offsets inside the scratch: scores, then per part products and key addresses, then the
// unpacked chunk; every region 64-byte aligned.
struct Layout {
  int64_t products, part_stride, keys_in_part, unpacked, total;
  Layout(int64_t heads, int64_t head_dim, int64_t max_visible, int64_t parts) {
    products = align64(max_visible * int64_t(sizeof(float)));
    const int64_t prod_bytes = align64(heads * IndexerScratch::kChunk * int64_t(sizeof(float)));
    keys_in_part = prod_bytes;
    part_stride = prod_bytes + align64(IndexerScratch::kChunk * int64_t(sizeof(const uint8_t*)));
    unpacked = products + parts * part_stride;
    total = unpacked + align64(IndexerScratch::kChunk * head_dim * int64_t(sizeof(float)));
  }
};
}  // namespace

int64_t IndexerScratch::bytes_for(int64_t heads, int64_t head_dim, int64_t max_visible, int64_t parts) {
  return Layout(heads, head_dim, max_visible, parts).total;
}

IndexerScratch::IndexerScratch(void* memory, int64_t bytes, int64_t heads, int64_t head_dim, int64_t max_visible,
                               int64_t parts)
    : heads_(heads), head_dim_(head_dim), max_visible_(max_visible), parts_(parts) {
  carve(memory, bytes);
}

IndexerScratch::IndexerScratch(int64_t heads, int64_t head_dim, int64_t max_visible, int64_t parts)
    : heads_(heads), head_dim_(head_dim), max_visible_(max_visible), parts_(parts) {
  const int64_t n = bytes_for(heads, head_dim, max_visible, parts);
  own_.reserve(size_t(n));
  carve(own_.data(), n);
}

void IndexerScratch::carve(void* memory, int64_t bytes) {
  if (heads_ < 1 || head_dim_ < 1 || max_visible_ < 0 || parts_ < 1)
    throw Error("indexer scratch: bad shape (" + std::to_string(heads_) + " heads, " + std::to_string(parts_) +
                " parts)");
  const Layout l(heads_, head_dim_, max_visible_, parts_);
  if (memory == nullptr || bytes < l.total || reinterpret_cast<uintptr_t>(memory) % 64 != 0)
    throw Error("indexer scratch: needs " + std::to_string(l.total) + " bytes of 64-byte-aligned memory, has " +
                std::to_string(bytes));
  base_ = static_cast<uint8_t*>(memory);
  products_off_ = l.products, part_stride_ = l.part_stride, keys_off_ = l.keys_in_part, unpacked_off_ = l.unpacked;
}

float* IndexerScratch::scores() const { return reinterpret_cast<float*>(base_); }
float* IndexerScratch::products(int64_t part) const {
  return reinterpret_cast<float*>(base_ + products_off_ + part * part_stride_);
}
const uint8_t** IndexerScratch::keys(int64_t part) const {
  return reinterpret_cast<const uint8_t**>(base_ + products_off_ + part * part_stride_ + keys_off_);
}
float* IndexerScratch::unpacked() const { return reinterpret_cast<float*>(base_ + unpacked_off_); }

namespace {
bool has_indexer(const Config& c) {
  for (int64_t r : c.compress_ratios)
    if (r == 4) return true;
  return false;
}
}  // namespace

int64_t indexer_scratch_bytes(const Config& c, int64_t max_context, int64_t parts) {
  if (!has_indexer(c)) return 0;
  return IndexerScratch::bytes_for(c.index_n_heads, c.index_head_dim, max_context / 4, parts);
}

IndexerScratch indexer_scratch_view(const Config& c, int64_t max_context, int64_t parts, void* memory, int64_t bytes) {
  if (!has_indexer(c)) return IndexerScratch();
  return IndexerScratch(memory, bytes, c.index_n_heads, c.index_head_dim, max_context / 4, parts);
}

}  // namespace strata::dsv4
