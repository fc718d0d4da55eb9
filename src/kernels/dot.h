// The one dot product every matrix product of the forward pass uses. Inputs are fp32; each
// product is exact in fp64 (24 + 24 significant bits), and the sum runs in fp64 in a fixed
// order: 16 running lanes (element k goes to lane k % 16), folded 8+8, 4+4, 2+2, 1+1, then
// rounded once to fp32.
//
// Why fp64: DeepSeek's kernels accumulate in fp32 in an implementation-defined order, so the
// reference (reference/README.md) defines every product as the exactly rounded fp64 result.
// An fp32 accumulation differs from it by fp32 ulps, which flip bf16 and then FP8 roundings
// and grow through the layers (0.3–3 logits on the tiny model); the fp64 sum reproduces the
// reference bit for bit (double rounding aside). The order is fixed by the length alone, so
// results are bitwise independent of threads and batch, and SIMD versions (two 8-wide fp64
// accumulators; fma is exact-product + add, i.e. the same single rounding) match bit for bit.
#pragma once
#include <cstdint>

#include "core/cpu.h"

namespace strata::kernels {

inline constexpr int kDotLanes = 16;

// Folds 16 lane sums in the canonical order.
inline double fold16(double* l) {
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) l[i] = l[i] + l[i + w];
  return l[0];
}

// The unrounded fp64 sum (for callers that keep accumulating).
inline double dot_f64(const float* a, const float* b, int64_t n) {
  double l[kDotLanes] = {};
  int64_t k = 0;
  for (; k + kDotLanes <= n; k += kDotLanes)
    for (int j = 0; j < kDotLanes; ++j) l[j] = l[j] + double(a[k + j]) * double(b[k + j]);
  for (int j = 0; k + j < n; ++j) l[j] = l[j] + double(a[k + j]) * double(b[k + j]);
  return fold16(l);
}

inline float dot(const float* a, const float* b, int64_t n) { return float(dot_f64(a, b, n)); }

using DotFn = float (*)(const float* a, const float* b, int64_t n);
namespace avx2 { float dot(const float* a, const float* b, int64_t n); }
namespace avx512 { float dot(const float* a, const float* b, int64_t n); }
// The canonical dot for one ISA (all bit-identical), and for the active ISA.
DotFn dot_fn(Isa isa);
DotFn dot_fn();

// Sum of squares for RMS statistics: the same fp64 sum rounded once. The reference's
// x.square().mean() is an fp32 torch reduction whose (cascaded) order strata cannot name; the
// correctly rounded sum matches it far more often than any fixed fp32 order (measured on the
// mHC goldens: 0/80 comb elements differ, against 14/80 with 16 fp32 lanes).
inline float sum_squares(const float* a, int64_t n) { return dot(a, a, n); }

}  // namespace strata::kernels
