// The one fp32 dot product every reduction in the forward pass uses. Its summation order is
// fixed: 16 running lanes (element k goes to lane k % 16, multiply then add, never fused),
// then the lanes are folded 8+8, 4+4, 2+2, 1+1. The order depends only on the length, never
// on the thread count or the batch, so results are bitwise reproducible, and a 16-wide SIMD
// version (one vector accumulator, mul + add, the same fold) reproduces it bit for bit.
#pragma once
#include <cstdint>

#include "core/cpu.h"

namespace strata::kernels {

inline constexpr int kDotLanes = 16;

// Folds 16 lane sums in the canonical order.
inline float fold16(float* l) {
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) l[i] = l[i] + l[i + w];
  return l[0];
}

inline float dot(const float* a, const float* b, int64_t n) {
  float l[kDotLanes] = {};
  int64_t k = 0;
  for (; k + kDotLanes <= n; k += kDotLanes)
    for (int j = 0; j < kDotLanes; ++j) {
      float p = a[k + j] * b[k + j];
      l[j] = l[j] + p;
    }
  for (int j = 0; k + j < n; ++j) {
    float p = a[k + j] * b[k + j];
    l[j] = l[j] + p;
  }
  return fold16(l);
}

using DotFn = float (*)(const float* a, const float* b, int64_t n);
namespace avx2 { float dot(const float* a, const float* b, int64_t n); }
namespace avx512 { float dot(const float* a, const float* b, int64_t n); }
// The canonical dot for one ISA (all bit-identical), and for the active ISA.
DotFn dot_fn(Isa isa);
DotFn dot_fn();

// Sum of squares in the same order (what an RMS needs).
inline float sum_squares(const float* a, int64_t n) { return dot(a, a, n); }

}  // namespace strata::kernels
