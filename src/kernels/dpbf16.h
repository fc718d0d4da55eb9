// vdpbf16ps, emulated bit for bit: the building block of the fast numerics profile (fp32
// accumulation of bf16 pair products), whose scalar and AVX2 paths must give the AVX-512 bits.
//
// The instruction, per fp32 lane i: acc += a[2i+1]·b[2i+1], then acc += a[2i]·b[2i]. Measured on
// Zen 5 (docs/cpu-performance.md, "vdpbf16ps on Zen 5, as measured"), it is exactly Intel's
// pseudo-code:
//   * two fused steps, the odd pair first: each adds the exact product to the running value and
//     rounds once, to nearest-even whatever MXCSR says (MXCSR is neither read nor written);
//   * bf16 operands and acc that are denormal are read as zeros of their sign (DAZ);
//   * a step's result whose magnitude, rounded with an unbounded exponent, is below 2^-126
//     becomes a zero of its sign (FTZ, tininess after rounding): [2^-126 - 2^-151, 2^-126)
//     rounds up to 2^-126, anything smaller flushes;
//   * overflow goes to ±inf at each step (the odd step's inf can meet an even product's -inf:
//     NaN); inf·0 and inf - inf give the default NaN 0xFFC00000;
//   * a NaN operand wins over everything: the first NaN of a0, b0, a1, b1, acc (in that order),
//     quieted, its sign and payload kept (a bf16 NaN's payload lands in bits 16-22).
// The default rounding mode (nearest) is assumed for the emulation's own arithmetic; strata never
// changes it. MXCSR's FTZ/DAZ do not disturb the emulations.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cpu.h"

namespace strata::kernels {

namespace dpbf16_detail {

inline constexpr uint32_t kDefaultNaN = 0xFFC00000u;  // x86's "real indefinite"

inline bool bf16_is_nan(uint16_t h) { return (h & 0x7FFF) > 0x7F80; }

// A bf16 operand as the instruction reads it: a denormal is a zero of its sign.
inline float bf16_operand(uint16_t h) {
  if ((h & 0x7F80) == 0) h &= 0x8000;
  return std::bit_cast<float>(uint32_t(h) << 16);
}

// One fused step: c + a·b rounded once (a, b bf16 operands; c not a denormal; no NaN operand),
// then FTZ. The product is exact in fp64 (8 + 8 significant bits, exponents inside fp64's). The
// sum p + c in fp64 rounds only where the two (16 and 24 bits wide) lie more than 13 bits apart;
// the bits between them, all zeros (same signs) or all ones (opposite), hold the fp32 rounding
// position, so the fp64 result is no midpoint and rounding it to fp32 is the one rounding of
// p + c. The same holds for the comparisons with 25-bit thresholds below. Contraction-safe:
// an FMA for p + c would round a·b + c once, and p is exact.
inline float fused_step(float c, float a, float b) {
  const double p = double(a) * double(b);
  const double r = p + double(c);
  if (std::isnan(r)) return std::bit_cast<float>(kDefaultNaN);  // inf·0, inf - inf
  const double mag = std::fabs(r);
  // With an unbounded exponent, [2^-126 - 2^-151, 2^-126) rounds to 2^-126 (the tie included:
  // 2^-126 is even); below that, the rounded value is tiny and flushes to a zero of its sign.
  if (mag < 0x1p-126) return float(std::copysign(mag >= 0x1p-126 - 0x1p-151 ? 0x1p-126 : 0.0, r));
  // From the tie between FLT_MAX (odd) and 2^128 up: inf (explicitly: converting an fp64 beyond
  // fp32's range is undefined in C++).
  if (mag >= 0x1p128 - 0x1p103) return float(std::copysign(std::numeric_limits<double>::infinity(), r));
  return float(r);
}

}  // namespace dpbf16_detail

// One lane of vdpbf16ps: acc + a1·b1 + a0·b0 in the instruction's order and roundings (a0, b0
// the even bf16 elements 2i of the two sources, a1, b1 the odd ones 2i + 1).
inline float dpbf16_lane(float acc, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1) {
  using namespace dpbf16_detail;
  for (uint16_t h : {a0, b0, a1, b1})
    if (bf16_is_nan(h)) return std::bit_cast<float>((uint32_t(h) << 16) | 0x00400000u);
  uint32_t ua = std::bit_cast<uint32_t>(acc);
  if ((ua & 0x7FFFFFFFu) > 0x7F800000u) return std::bit_cast<float>(ua | 0x00400000u);
  if ((ua & 0x7F800000u) == 0) ua &= 0x80000000u;
  const float t = fused_step(std::bit_cast<float>(ua), bf16_operand(a1), bf16_operand(b1));
  if (std::isnan(t)) return t;  // the default NaN: no NaN operand can follow it
  return fused_step(t, bf16_operand(a0), bf16_operand(b0));
}

// `steps` instructions on `lanes` fp32 lanes: at step s, lane i (< lanes) takes the pair at
// elements 2(s·lanes + i) and 2(s·lanes + i) + 1 of a and b. With lanes = 16 this is a 16-lane
// bf16 dot (column 2i and 2i + 1 of every 32 in lane i); steps = 1 is one instruction.
inline void dpbf16_accumulate(float* acc, const uint16_t* a, const uint16_t* b, int64_t lanes, int64_t steps) {
  for (int64_t s = 0; s < steps; ++s)
    for (int64_t i = 0; i < lanes; ++i) {
      const int64_t k = 2 * (s * lanes + i);
      acc[i] = dpbf16_lane(acc[i], a[k], a[k + 1], b[k], b[k + 1]);
    }
}

using Dpbf16AccumulateFn = void (*)(float* acc, const uint16_t* a, const uint16_t* b, int64_t lanes, int64_t steps);
namespace avx2 { void dpbf16_accumulate(float* acc, const uint16_t* a, const uint16_t* b, int64_t lanes, int64_t steps); }
// The instruction itself (a CPU with AVX-512 BF16 only).
namespace avx512 { void dpbf16_accumulate(float* acc, const uint16_t* a, const uint16_t* b, int64_t lanes, int64_t steps); }
// The one for an ISA (bit-identical; the CPU must support it), and for the active ISA.
Dpbf16AccumulateFn dpbf16_accumulate_fn(Isa isa);
inline Dpbf16AccumulateFn dpbf16_accumulate_fn() { return dpbf16_accumulate_fn(active_isa()); }

}  // namespace strata::kernels
