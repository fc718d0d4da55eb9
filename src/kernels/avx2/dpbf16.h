// vdpbf16ps on 8 lanes with AVX2 + FMA, bit-identical to the instruction (kernels/dpbf16.h
// states its semantics). For the AVX2 kernels only (compiled with those flags).
//
// Each of the instruction's fused steps is one fp32 FMA: a bf16 operand widened to fp32 is exact
// and an FMA rounds the exact product plus the addend once, to nearest-even, with the exact
// product even where it overflows or underflows fp32 on its own. Around the FMAs: DAZ of the
// bf16 operands and of acc, and the instruction's FTZ after each step. The FMA underflows
// gradually, so a step's result below 2^-126 is tiny either way and becomes a zero of its sign;
// only a result of exactly ±2^-126 is ambiguous (the gradual rounding takes [2^-126 - 2^-150,
// 2^-126 - 2^-151) up to it, the instruction flushes that interval). Inf and the default NaN come
// out of the FMA as from the instruction, and so does a NaN acc alone (the only NaN operand, it
// propagates quieted). A NaN bf16 operand (whose priority over the other NaNs the FMA's operand
// order would not keep) or an ambiguous result sends the 8 lanes to the scalar emulation: both
// rare, one well-predicted branch otherwise.
//
// Cost: about 36 vector instructions per 8 lanes, where vdpbf16ps does 16 lanes in one (Zen 5,
// one thread: ~4 G bf16 products/s against the instruction's ~200 G peak; docs/cpu-performance.md).
#pragma once
#include <immintrin.h>

#include "kernels/dpbf16.h"

namespace strata::kernels::avx2 {

// The 8 lanes by the scalar emulation, from the original operands.
[[gnu::noinline, gnu::cold]] inline __m256 dpbf16_ps_scalar(__m256 acc, __m256i a, __m256i b) {
  alignas(32) float c[8];
  alignas(32) uint16_t x[16], y[16];
  _mm256_store_ps(c, acc);
  _mm256_store_si256(reinterpret_cast<__m256i*>(x), a);
  _mm256_store_si256(reinterpret_cast<__m256i*>(y), b);
  for (int i = 0; i < 8; ++i) c[i] = dpbf16_lane(c[i], x[2 * i], x[2 * i + 1], y[2 * i], y[2 * i + 1]);
  return _mm256_load_ps(c);
}

// acc (8 fp32 lanes) + the pairs of a and b (16 bf16 each, lane i's pair at elements 2i, 2i + 1).
inline __m256 dpbf16_ps(__m256 acc, __m256i a, __m256i b) {
  const __m256i abs16 = _mm256_set1_epi16(0x7FFF), inf16 = _mm256_set1_epi16(0x7F80), min16 = _mm256_set1_epi16(0x0080);
  const __m256i abs32 = _mm256_set1_epi32(0x7FFFFFFF), min32 = _mm256_set1_epi32(0x00800000);
  const __m256i hi16 = _mm256_set1_epi32(int(0xFFFF0000u));
  const __m256i ma = _mm256_and_si256(a, abs16), mb = _mm256_and_si256(b, abs16);
  const __m256i nan = _mm256_or_si256(_mm256_cmpgt_epi16(ma, inf16), _mm256_cmpgt_epi16(mb, inf16));
  // DAZ: magnitude below 0x0080 (exponent 0) -> x ^ |x| = the sign alone
  const __m256i ad = _mm256_xor_si256(a, _mm256_and_si256(_mm256_cmpgt_epi16(min16, ma), ma));
  const __m256i bd = _mm256_xor_si256(b, _mm256_and_si256(_mm256_cmpgt_epi16(min16, mb), mb));
  const __m256i ci = _mm256_castps_si256(acc), mc = _mm256_and_si256(ci, abs32);
  const __m256 c = _mm256_castsi256_ps(_mm256_xor_si256(ci, _mm256_and_si256(_mm256_cmpgt_epi32(min32, mc), mc)));
  // The odd pair first; FTZ as DAZ on the result (NaN and inf untouched), ±2^-126 flagged.
  __m256i t = _mm256_castps_si256(_mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(ad, hi16)),
                                                  _mm256_castsi256_ps(_mm256_and_si256(bd, hi16)), c));
  __m256i mt = _mm256_and_si256(t, abs32);
  t = _mm256_xor_si256(t, _mm256_and_si256(_mm256_cmpgt_epi32(min32, mt), mt));
  __m256i odd = _mm256_or_si256(nan, _mm256_cmpeq_epi32(mt, min32));
  __m256i r = _mm256_castps_si256(_mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(ad, 16)),
                                                  _mm256_castsi256_ps(_mm256_slli_epi32(bd, 16)), _mm256_castsi256_ps(t)));
  const __m256i mr = _mm256_and_si256(r, abs32);
  r = _mm256_xor_si256(r, _mm256_and_si256(_mm256_cmpgt_epi32(min32, mr), mr));
  odd = _mm256_or_si256(odd, _mm256_cmpeq_epi32(mr, min32));
  if (__builtin_expect(!_mm256_testz_si256(odd, odd), 0)) return dpbf16_ps_scalar(acc, a, b);
  return _mm256_castsi256_ps(r);
}

}  // namespace strata::kernels::avx2
