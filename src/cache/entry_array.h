// A growing cache of fixed-size entries (compressed KV entries, indexer keys): owned and
// contiguous while a sequence stands alone, or spread over the request's pool blocks once the
// engine places it there. Bound, entry i lives in block i / per_block of the request's block
// table, at this cache's offset inside the block: blocks cover the same tokens for every
// growing cache of a model, so one table serves them all, and a block shared by two requests
// (a common prefix) holds every layer's entries for those tokens.
//
// A copy is always owned (entries gathered), so copying a pooled state never aliases the pool.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::cache {

class EntryArray {
 public:
  EntryArray() = default;
  EntryArray(const EntryArray& o);
  EntryArray& operator=(const EntryArray& o);
  EntryArray(EntryArray&&) noexcept = default;
  EntryArray& operator=(EntryArray&&) noexcept = default;

  // Empty and owned, entries of `entry_bytes` each.
  void init(int64_t entry_bytes);
  int64_t entry_bytes() const { return eb_; }
  size_t size() const { return size_t(n_); }  // entries
  bool empty() const { return n_ == 0; }
  int64_t bytes() const { return n_ * eb_; }

  uint8_t* entry(int64_t i) { return bound() ? (*table_)[size_t(i / per_block_)] + off_ + (i % per_block_) * eb_ : own_.data() + i * eb_; }
  const uint8_t* entry(int64_t i) const { return const_cast<EntryArray*>(this)->entry(i); }
  // Room for one more entry; bound, its block must be in the table already (the engine
  // reserves blocks for the tokens of a step before running it), else strata::Error.
  uint8_t* append();
  // Drops entries past n (rollback); growing is append()'s.
  void resize(size_t n);

  // Moves the entries into the blocks of `table` (which must cover them) at `offset`, with
  // `per_block` entries a block, and lives there from now on. table must outlive the binding.
  void bind(const std::vector<uint8_t*>* table, int64_t offset, int64_t per_block);
  // Lives there from now on with n entries already in place (a restored prefix).
  void adopt(const std::vector<uint8_t*>* table, int64_t offset, int64_t per_block, int64_t n);
  bool bound() const { return table_ != nullptr; }

  // Every entry's bytes, in order (snapshots); and back: owned, size a multiple of entry_bytes.
  std::vector<uint8_t> to_bytes() const;
  void assign_bytes(std::vector<uint8_t> bytes);

  bool operator==(const EntryArray& o) const;

 private:
  int64_t eb_ = 0, n_ = 0;
  std::vector<uint8_t> own_;
  const std::vector<uint8_t*>* table_ = nullptr;
  int64_t off_ = 0, per_block_ = 1;
};

}  // namespace strata::cache
