// The bf16 cos / sin of a RotateHalfRope's rotating angles (those with a non-zero frequency),
// position by position, each computed once per model as positions are first reached: a layer
// that re-rotates every cached key each step (Gemma 4's K=V layers rebuild K from the cache)
// would otherwise take two fp64 transcendentals per angle, key and step. Rows are filled under a
// lock in chunks that never move, so readers of filled rows need none.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "models/layers/rotate_half_rope.h"

namespace strata::models {

class RopeTable {
 public:
  RopeTable() = default;
  RopeTable(const RotateHalfRope& rope, int64_t max_positions);
  RopeTable(RopeTable&& o) noexcept;
  RopeTable& operator=(RopeTable&& o) noexcept;
  // Angles a row holds: the leading run of non-zero frequencies (the others rotate by 0).
  int64_t angles() const { return angles_; }
  // Makes rows [0, end) available (thread-safe).
  void reach(int64_t end) const;
  // Row p (p < a reached end): cos then sin, angles() each, bf16 values as float.
  const float* row(int64_t p) const { return chunks_[size_t(p / kChunk)].get() + (p % kChunk) * 2 * angles_; }

 private:
  static constexpr int64_t kChunk = 1024;
  const RotateHalfRope* rope_ = nullptr;
  int64_t angles_ = 0, max_ = 0;
  mutable std::vector<std::unique_ptr<float[]>> chunks_;
  mutable std::atomic<int64_t> chunks_filled_{0};
  mutable std::mutex mu_;
};

}  // namespace strata::models
