#include "models/layers/rope_table.h"

#include <algorithm>

namespace strata::models {

RopeTable::RopeTable(const RotateHalfRope& rope, int64_t max_positions) : rope_(&rope), max_(max_positions) {
  const auto& inv = rope.inv_freq();
  while (angles_ < int64_t(inv.size()) && inv[size_t(angles_)] != 0.0f) ++angles_;
  // Room for every chunk's pointer up front: reach() only fills slots, so row() never sees
  // the vector move.
  chunks_.resize(size_t((max_positions + kChunk - 1) / kChunk));
}

RopeTable::RopeTable(RopeTable&& o) noexcept
    : rope_(o.rope_), angles_(o.angles_), max_(o.max_), chunks_(std::move(o.chunks_)),
      chunks_filled_(o.chunks_filled_.load()) {}

RopeTable& RopeTable::operator=(RopeTable&& o) noexcept {
  rope_ = o.rope_, angles_ = o.angles_, max_ = o.max_;
  chunks_ = std::move(o.chunks_);
  chunks_filled_ = o.chunks_filled_.load();
  return *this;
}

void RopeTable::reach(int64_t end) const {
  const int64_t need = (std::min(end, max_) + kChunk - 1) / kChunk;
  if (chunks_filled_.load(std::memory_order_acquire) >= need) return;
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t half = rope_->rotary_dim() / 2;
  std::vector<float> c(static_cast<size_t>(half)), s(static_cast<size_t>(half));
  for (int64_t k = chunks_filled_.load(); k < need; ++k) {
    auto chunk = std::make_unique<float[]>(size_t(kChunk * 2 * angles_));
    for (int64_t i = 0; i < kChunk; ++i) {
      rope_->cos_sin(k * kChunk + i, c.data(), s.data());
      std::copy_n(c.data(), angles_, chunk.get() + i * 2 * angles_);
      std::copy_n(s.data(), angles_, chunk.get() + i * 2 * angles_ + angles_);
    }
    chunks_[size_t(k)] = std::move(chunk);
    chunks_filled_.store(k + 1, std::memory_order_release);
  }
}

}  // namespace strata::models
