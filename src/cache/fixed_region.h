// A request's fixed-size state (a sliding-window ring, compressor slot rows, a linear-attention
// state): owned memory while a sequence stands alone (tests, tools, a snapshot being read), or
// a window into its slot in the cache pool once the engine places it there (bind / adopt).
//
// A copy is always owned: copying a pooled state (an export, a test's reference) never aliases
// the pool. A move keeps the binding.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace strata::cache {

template <class T>
class FixedRegion {
 public:
  FixedRegion() = default;
  FixedRegion(const FixedRegion& o) : own_(o.begin(), o.end()) { view_own(); }
  FixedRegion& operator=(const FixedRegion& o) {
    if (this != &o) {
      std::vector<T> v(o.begin(), o.end());
      own_ = std::move(v);
      view_own();
    }
    return *this;
  }
  FixedRegion(FixedRegion&& o) noexcept : own_(std::move(o.own_)), p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  FixedRegion& operator=(FixedRegion&& o) noexcept {
    own_ = std::move(o.own_);
    p_ = o.p_, n_ = o.n_;
    o.p_ = nullptr, o.n_ = 0;
    return *this;
  }
  // Owned contents (vector-like, so a region reads like the vector it replaces).
  FixedRegion& operator=(std::vector<T> v) {
    own_ = std::move(v);
    view_own();
    return *this;
  }
  void assign(size_t n, const T& v) { *this = std::vector<T>(n, v); }

  // Moves the contents to `at` (room for size() values) and lives there from now on.
  void bind(T* at) {
    std::copy(begin(), end(), at);
    adopt(at);
  }
  // Lives at `at` from now on, whose contents are already this region's (a restored checkpoint).
  void adopt(T* at) {
    own_.clear();
    own_.shrink_to_fit();
    p_ = at;
  }
  bool bound() const { return p_ != nullptr && own_.empty() && n_ > 0; }

  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }
  bool operator==(const FixedRegion& o) const { return std::equal(begin(), end(), o.begin(), o.end()); }

 private:
  void view_own() { p_ = own_.data(), n_ = own_.size(); }
  std::vector<T> own_;
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace strata::cache
