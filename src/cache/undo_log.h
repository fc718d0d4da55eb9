// Exact rollback of cache state for speculative decoding.
//
// While a log is attached to a sequence, every write into its state — fixed-size regions
// (sliding-window ring slots, compressor slot rows) and appends to growing caches (compressed
// entries, indexer keys, KV) — first records what it overwrites, tagged with the position of
// the token that causes it; a recurrent state, rewritten whole by every token, instead goes
// through draft slots (save_restore). rollback(p) undoes, newest first,
// every record of a token at position >= p: the state becomes bitwise what it was after
// the tokens before p, whatever kinds of state a model has.
//
// Why this is exact although layers interleave: each memory location is written by tokens
// in increasing position order (a layer runs its tokens in order; layers own disjoint state),
// so the records of tokens >= p are a suffix of every location's write history, and undoing
// them in reverse order leaves each location's last write from a token < p.
#pragma once
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

namespace strata::cache {

class UndoLog {
 public:
  // Records the n bytes at p before the token at `pos` overwrites them.
  void save(int64_t pos, void* p, size_t n);
  // Records a growing cache's size (a vector, an EntryArray: size() and resize()) before the
  // token at `pos` appends to it (undone by truncation, so appended data is never copied).
  template <class C>
  void save_size(int64_t pos, C& v) {
    recs_.push_back(Rec{pos, &v, v.size(), 0, &truncate<C>});
  }
  template <class T>
  void save(int64_t pos, T* p, size_t count) {
    save(pos, static_cast<void*>(p), count * sizeof(T));
  }
  // Draft slots (kind_policy.h): the token at `pos` continues from the state a draft slot holds
  // (`source`, n bytes), its predecessor's. Rolling back to pos copies that slot into the live
  // state `target`; nothing is copied now. Of several such records for one target only the
  // oldest one rolled back is applied: one copy however many drafts were rejected.
  void save_restore(int64_t pos, void* target, const void* source, size_t n);

  // Undoes every record of positions >= pos (newest first) and forgets them.
  void rollback(int64_t pos);
  // Forgets every record (the speculative tokens were accepted).
  void clear();

  size_t records() const { return recs_.size(); }
  size_t saved_bytes() const { return bytes_.size(); }

 private:
  struct Rec {
    int64_t pos;
    void* target;   // region start, or the vector for a size record
    size_t size;    // bytes saved, or the vector's old size
    size_t offset;  // where the saved bytes start in bytes_
    void (*truncate)(void* vec, size_t size);  // null for a region record
    const void* source = nullptr;              // a restore record's draft slot
  };
  template <class C>
  static void truncate(void* v, size_t n) {
    static_cast<C*>(v)->resize(n);
  }
  std::vector<Rec> recs_;
  std::vector<unsigned char> bytes_;
};

// Records before a write when a log is attached; a no-op otherwise (the normal path).
template <class T>
inline void save_before_write(UndoLog* log, int64_t pos, T* p, size_t count) {
  if (log) log->save(pos, p, count);
}
template <class C>
inline void save_before_append(UndoLog* log, int64_t pos, C& v) {
  if (log) log->save_size(pos, v);
}

}  // namespace strata::cache
