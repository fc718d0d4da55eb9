// A large buffer the process fills once (weights dequantized at load): anonymous memory mapped
// with MADV_HUGEPAGE, so that filling it takes one page fault per 2 MB instead of one per 4 KB
// (page faults are slow on VMs: 51K of them were most of flash-2l's load time). Values start
// at zero. Copies are deep; moves keep the mapping.
#pragma once
#include <cstddef>
#include <cstring>
#include <utility>

namespace strata {

class HugeBytes {
 public:
  HugeBytes() = default;
  explicit HugeBytes(size_t bytes);
  ~HugeBytes();
  HugeBytes(const HugeBytes& o) : HugeBytes(o.n_) {
    if (n_) std::memcpy(p_, o.p_, n_);
  }
  HugeBytes& operator=(const HugeBytes& o) {
    if (this != &o) *this = HugeBytes(o);
    return *this;
  }
  HugeBytes(HugeBytes&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  HugeBytes& operator=(HugeBytes&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  void* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

// n values of T (trivially copyable) in a HugeBytes.
template <class T>
class HugeBuffer {
 public:
  HugeBuffer() = default;
  explicit HugeBuffer(size_t n) : b_(n * sizeof(T)) {}
  void resize(size_t n) { *this = HugeBuffer(n); }  // fresh zeroed storage
  T* data() { return static_cast<T*>(b_.data()); }
  const T* data() const { return static_cast<const T*>(b_.data()); }
  size_t size() const { return b_.size() / sizeof(T); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }

 private:
  HugeBytes b_;
};

}  // namespace strata
