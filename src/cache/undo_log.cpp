#include "cache/undo_log.h"

namespace strata::cache {

void UndoLog::save(int64_t pos, void* p, size_t n) {
  const size_t off = bytes_.size();
  bytes_.resize(off + n);
  std::memcpy(bytes_.data() + off, p, n);
  recs_.push_back(Rec{pos, p, n, off, nullptr});
}

void UndoLog::rollback(int64_t pos) {
  // Records of one position are contiguous per layer but positions interleave across layers:
  // walk the whole log backwards, undo what is >= pos, keep the rest in order.
  std::vector<Rec> kept;
  for (size_t i = recs_.size(); i-- > 0;) {
    const Rec& r = recs_[i];
    if (r.pos < pos) continue;
    if (r.truncate) r.truncate(r.target, r.size);
    else std::memcpy(r.target, bytes_.data() + r.offset, r.size);
  }
  size_t keep_bytes = 0;
  for (const Rec& r : recs_)
    if (r.pos < pos) {
      kept.push_back(r);
      if (!r.truncate) keep_bytes = std::max(keep_bytes, r.offset + r.size);
    }
  recs_ = std::move(kept);
  // Saved bytes of kept records stay where they are; only a tail no kept record uses is freed.
  bytes_.resize(keep_bytes);
}

void UndoLog::clear() {
  recs_.clear();
  bytes_.clear();
}

}  // namespace strata::cache
