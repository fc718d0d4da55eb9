// The fast profile's linear layer (core/numerics.h): y = x · Wᵀ with the exact profile's rounding
// points (FP8 activation quantization, the weight formats, bf16 outputs where asked) but fp32
// accumulation in an order fixed per output element, so that every output is bitwise the same
// whatever the batch, the thread count, the chunking or the ISA.
//
// Operands. The activation row x̂ (after FP8 quantization when the weight asks for it: the
// dequantized values q·2^k) and the weight row ŵ with its scales applied (e4m3·2^k per 128×128
// block, e2m1·2^k per 1×32, bf16 as is, f32 as is). Scaling by the power-of-two block scales
// before the sum rather than after it is the same arithmetic away from fp32's range limits, and
// keeps one definition for every format.
//
// Route, per activation row:
//   bf16  the row's values and the weight's are all bf16 (every fp8 / fp4 / bf16 weight, decoded
//         by decode_weight_bf16; the activation is checked): pairs of columns on the bf16 dot
//         unit, each lane step exactly one vdpbf16ps lane (kernels/dpbf16.h: the odd column's
//         product first, then the even one, each added with one rounding; denormal operands read
//         as zero, tiny results flushed);
//   f32   otherwise (an fp32 activation such as the head's or the gate's, or an f32 weight): one
//         fp32 FMA per column, acc = fma(x̂[k], ŵ[k], acc).
// Order, both routes: 16 fp32 lanes. The columns go in blocks of 128 (the scale block of FP8);
// within a block each lane starts at +0 and takes, in column order, the columns k with
//   bf16: (k mod 32) / 2 = lane (the pairs 2·lane, 2·lane + 1 of every 32 columns),
//   f32:   k mod 16 = lane;
// at the block's end each lane's block sum is added into that lane's running total (fp32 add;
// totals start at +0). The last block may be short: it runs to the next multiple of 32 (bf16) or
// 16 (f32) columns, the added columns zeros in both x̂ and ŵ, and stops there. The output is
// the fixed fold of the 16 totals, t[i] += t[i + h] for h = 8, 4, 2, 1 (i < h), then t[0],
// rounded to bf16 when asked. A NaN output is the quiet NaN 0x7FC00000: which of two NaNs an fp32
// add passes on follows its operand order, and compilers may swap the operands of an add.
#pragma once
#include <bit>
#include <cstdint>

#include "core/cpu.h"
#include "core/numfmt.h"
#include "kernels/linear.h"

namespace strata::kernels {

inline constexpr int64_t kFastLanes = 16;
inline constexpr int64_t kFastBlock = 128;

// Weight row r as bf16 bits ŵ[0..in), then zeros up to in rounded up to 32 (dst must hold that
// many): the format's value times its scale, rounded to nearest-even (exact for e4m3·2^k,
// e2m1·2^k and bf16 within fp32's range); for FP8/FP4 a magnitude below 2^-126 becomes a zero of
// its sign, and a bf16 weight's own bits are kept (the unit reads a denormal as that same zero);
// e4m3 NaN codes give a quiet NaN. Not for f32. (The f32 route takes the exact fp32 values,
// dequant_row's, with no flush: FMAs keep denormals.)
void decode_weight_bf16(const LinearWeight& w, int64_t r, uint16_t* dst);
// Whether the fast profile reads this activation row on the bf16 route (weight not f32, every
// x[k] a bf16 value).
bool fast_row_is_bf16(const LinearWeight& w, const float* x, int64_t in);

// The fast product for activations already quantized (linear() does that first): the definition
// above. Each ISA's version gives the same bits (scalar and AVX2 emulate vdpbf16ps).
void fast_linear(const LinearWeight& w, const float* x, int64_t rows, float* y, bool round_bf16);
// One ISA's version regardless of the active one (tests; the CPU must support it).
void fast_linear_isa(Isa isa, const LinearWeight& w, const float* x, int64_t rows, float* y, bool round_bf16);

// One output element by the definition, written plainly: what the kernels are tested against.
float fast_dot_reference(const LinearWeight& w, int64_t r, const float* x);

// An output as the definition gives it: NaN made the one quiet NaN, rounded to bf16 when asked.
inline float fast_output(float v, bool round_bf16_out) {
  if (v != v) return std::bit_cast<float>(0x7FC00000u);
  return round_bf16_out ? round_bf16(v) : v;
}

}  // namespace strata::kernels
