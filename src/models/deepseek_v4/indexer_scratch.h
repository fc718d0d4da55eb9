// The lightning indexer's working memory for one query, bounded whatever the context: a score
// per visible key (at most max_visible: context / 4), and for each of `parts` thread parts one
// chunk's head × key products and key addresses, plus one chunk of keys unpacked to fp32 (the
// path without the integer products). Scores are streamed into the top-k (kernels/topk.h:
// k indices), so nothing else grows with the context.
//
// The engine carves it once from its cache pool (counted there as the pool's workspace), sized
// for its longest context and its thread count, and every request's forward pass uses it (one
// query at a time: the engine runs one forward pass at a time). A standalone state has none and
// the indexer sizes one of its own per call.
#pragma once
#include <cstdint>

#include "kernels/aligned_buffer.h"
#include "models/deepseek_v4/config.h"
#include "models/model.h"

namespace strata::dsv4 {

class IndexerScratch final : public models::Workspace {
 public:
  static constexpr int64_t kChunk = 2048;  // keys per part per pass

  // Bytes for `parts` thread parts, `heads` × `head_dim` queries, up to max_visible keys.
  static int64_t bytes_for(int64_t heads, int64_t head_dim, int64_t max_visible, int64_t parts);

  IndexerScratch() = default;
  // A view of `bytes` of 64-byte-aligned memory (strata::Error if it is too small).
  IndexerScratch(void* memory, int64_t bytes, int64_t heads, int64_t head_dim, int64_t max_visible, int64_t parts);
  // Owned memory of its own.
  IndexerScratch(int64_t heads, int64_t head_dim, int64_t max_visible, int64_t parts);
  IndexerScratch(const IndexerScratch&) = delete;
  IndexerScratch& operator=(const IndexerScratch&) = delete;
  IndexerScratch(IndexerScratch&&) = default;
  IndexerScratch& operator=(IndexerScratch&&) = default;

  bool empty() const { return base_ == nullptr; }
  int64_t heads() const { return heads_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t max_visible() const { return max_visible_; }
  int64_t parts() const { return parts_; }
  int64_t bytes() const { return bytes_for(heads_, head_dim_, max_visible_, parts_); }

  float* scores() const;                // [max_visible]
  float* products(int64_t part) const;  // [heads][kChunk]
  const uint8_t** keys(int64_t part) const;  // [kChunk]
  float* unpacked() const;              // [kChunk][head_dim]

 private:
  void carve(void* memory, int64_t bytes);
  kernels::AlignedBuffer<uint8_t> own_;
  uint8_t* base_ = nullptr;
  int64_t heads_ = 0, head_dim_ = 0, max_visible_ = 0, parts_ = 0;
  int64_t products_off_ = 0, keys_off_ = 0, unpacked_off_ = 0, part_stride_ = 0;
};

// The scratch a model's indexer needs at contexts up to max_context with `parts` thread parts:
// its bytes (0 when no layer has an indexer), and a view of `memory` shaped for it.
int64_t indexer_scratch_bytes(const Config& c, int64_t max_context, int64_t parts);
IndexerScratch indexer_scratch_view(const Config& c, int64_t max_context, int64_t parts, void* memory, int64_t bytes);

}  // namespace strata::dsv4
