#include "cache/entry_array.h"

#include <cstring>
#include <string>

#include "core/error.h"

namespace strata::cache {

EntryArray::EntryArray(const EntryArray& o) : eb_(o.eb_), n_(o.n_), own_(size_t(o.n_ * o.eb_)) {
  for (int64_t i = 0; i < n_; ++i) std::memcpy(own_.data() + i * eb_, o.entry(i), size_t(eb_));
}

EntryArray& EntryArray::operator=(const EntryArray& o) {
  if (this != &o) *this = EntryArray(o);
  return *this;
}

void EntryArray::init(int64_t entry_bytes) {
  *this = EntryArray();
  eb_ = entry_bytes;
}

uint8_t* EntryArray::append() {
  if (bound()) {
    if (size_t(n_ / per_block_) >= table_->size())
      throw Error("cache pool: no block reserved for entry " + std::to_string(n_) + " (" +
                  std::to_string(table_->size()) + " blocks held)");
  } else {
    own_.resize(size_t((n_ + 1) * eb_));
  }
  return entry(n_++);
}

void EntryArray::resize(size_t n) {
  if (int64_t(n) > n_) throw Error("EntryArray::resize grows only by append()");
  n_ = int64_t(n);
  if (!bound()) own_.resize(size_t(n_ * eb_));
}

void EntryArray::bind(const std::vector<uint8_t*>* table, int64_t offset, int64_t per_block) {
  if (per_block < 1 || int64_t(table->size()) * per_block < n_)
    throw Error("cache pool: " + std::to_string(table->size()) + " blocks cannot hold " + std::to_string(n_) + " entries");
  std::vector<uint8_t> own = bound() ? to_bytes() : std::move(own_);  // rebinding moves it again
  const int64_t n = n_;
  adopt(table, offset, per_block, n);
  for (int64_t i = 0; i < n; ++i) std::memcpy(entry(i), own.data() + i * eb_, size_t(eb_));
}

void EntryArray::adopt(const std::vector<uint8_t*>* table, int64_t offset, int64_t per_block, int64_t n) {
  if (per_block < 1 || int64_t(table->size()) * per_block < n)
    throw Error("cache pool: " + std::to_string(table->size()) + " blocks cannot hold " + std::to_string(n) + " entries");
  own_.clear();
  own_.shrink_to_fit();
  table_ = table, off_ = offset, per_block_ = per_block, n_ = n;
}

std::vector<uint8_t> EntryArray::to_bytes() const {
  if (!bound()) return own_;
  return EntryArray(*this).own_;
}

void EntryArray::assign_bytes(std::vector<uint8_t> bytes) {
  if (bytes.empty()) return resize(0);
  if (eb_ <= 0 || bytes.size() % size_t(eb_) != 0)
    throw Error("cache entries: " + std::to_string(bytes.size()) + " bytes is not a whole number of " +
                std::to_string(eb_) + "-byte entries");
  const int64_t eb = eb_;
  *this = EntryArray();
  eb_ = eb;
  n_ = int64_t(bytes.size()) / eb;
  own_ = std::move(bytes);
}

bool EntryArray::operator==(const EntryArray& o) const {
  if (eb_ != o.eb_ || n_ != o.n_) return false;
  for (int64_t i = 0; i < n_; ++i)
    if (std::memcmp(entry(i), o.entry(i), size_t(eb_)) != 0) return false;
  return true;
}

}  // namespace strata::cache
