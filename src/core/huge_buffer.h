// A large buffer the process fills once (weights dequantized at load): anonymous memory mapped
// with MADV_HUGEPAGE, so that filling it takes one page fault per 2 MB instead of one per 4 KB
// (page faults are slow on VMs: 51K of them were most of flash-2l's load time). Values start
// at zero. Copies are deep; moves keep the mapping.
#pragma once
#include <cstddef>
#include <cstring>
#include <memory>
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

// glibc's largest mmap threshold: main sets it, so that blocks below it come from the heap and
// freed ones stay there for the next call; blocks from it up are always mapped afresh.
inline constexpr size_t kHeapKeptBelow = size_t(32) << 20;

// n values of T (trivially copyable) for the length of one call, not zeroed: from the heap
// below kHeapKeptBelow bytes (faulted in once a process), and above it, where malloc maps fresh
// 4 KB pages and faults them in on every call, in huge-page memory: a fault per 2 MB (a
// 256-token flash-2l prefill's attention queries and outputs, 32 MB each, were ~45 000 faults).
template <class T>
class CallBuffer {
 public:
  explicit CallBuffer(size_t n) {
    if (n * sizeof(T) >= kHeapKeptBelow) huge_ = HugeBuffer<T>(n);
    else heap_.reset(new T[n]);
  }
  T* data() { return heap_ ? heap_.get() : huge_.data(); }
  const T* data() const { return heap_ ? heap_.get() : huge_.data(); }
  T& operator[](size_t i) { return data()[i]; }

 private:
  std::unique_ptr<T[]> heap_;
  HugeBuffer<T> huge_;
};

}  // namespace strata
