#include "cache/undo_log.h"

#include <unordered_map>

namespace strata::cache {

void UndoLog::save(int64_t pos, void* p, size_t n) {
  const size_t off = bytes_.size();
  bytes_.resize(off + n);
  std::memcpy(bytes_.data() + off, p, n);
  recs_.push_back(Rec{pos, p, n, off, nullptr});
}

void UndoLog::save_restore(int64_t pos, void* target, const void* source, size_t n) {
  recs_.push_back(Rec{pos, target, n, 0, nullptr, source});
}

void UndoLog::rollback(int64_t pos) {
  // Records of one position are contiguous per layer but positions interleave across layers:
  // walk the whole log backwards, undo what is >= pos, keep the rest in order. Of the restore
  // records of one target, the oldest rolled back is the one whose slot holds the state wanted.
  std::unordered_map<void*, size_t> oldest_restore;
  for (size_t i = 0; i < recs_.size(); ++i)
    if (recs_[i].source && recs_[i].pos >= pos) oldest_restore.emplace(recs_[i].target, i);
  std::vector<Rec> kept;
  for (size_t i = recs_.size(); i-- > 0;) {
    const Rec& r = recs_[i];
    if (r.pos < pos) continue;
    if (r.source) {
      if (oldest_restore[r.target] == i) std::memcpy(r.target, r.source, r.size);
    } else if (r.truncate) {
      r.truncate(r.target, r.size);
    } else {
      std::memcpy(r.target, bytes_.data() + r.offset, r.size);
    }
  }
  size_t keep_bytes = 0;
  for (const Rec& r : recs_)
    if (r.pos < pos) {
      kept.push_back(r);
      if (!r.truncate && !r.source) keep_bytes = std::max(keep_bytes, r.offset + r.size);
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
