// A growable scratch buffer aligned to 64 bytes (one cache line, one zmm): malloc aligns to
// 16, which makes every 64-byte vector load of a kernel straddle two cache lines (measured:
// the batched linear ran at a fraction of its FMA rate on 16-byte-aligned operands).
#pragma once
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace strata::kernels {

template <class T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t n) { reserve(n); }
  // Ensures room for n elements (contents are not kept when it grows).
  void reserve(size_t n) {
    if (n <= cap_) return;
    const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    data_.reset(static_cast<T*>(p));
    cap_ = n;
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  T& operator[](size_t i) { return data_.get()[i]; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  size_t cap_ = 0;
};

}  // namespace strata::kernels
