// Linear layers y = x · Wᵀ for the weight formats of DeepSeek-V4 checkpoints:
//   fp8  e4m3 [out, in] with e8m0 scales per 128×128 block; the activation is first quantized
//        to FP8 in 1×128 blocks (quant.h) — exactly the reference's act_quant + fp8_gemm;
//   fp4  e2m1 pairs [out, in/2] (low nibble = even column) with e8m0 scales per 1×32; the
//        activation is FP8-quantized as for fp8;
//   bf16 / f32  plain weights, activation used as given.
// Every output element is one canonical dot (kernels/dot.h) of the dequantized weight row and
// the (dequantized) activation row, so outputs are bitwise independent of threads and batch.
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/cpu.h"

namespace strata::kernels {

enum class WeightFormat { f32, bf16, fp8, fp4 };

// A view of one weight matrix (usually straight into the mapped checkpoint).
struct LinearWeight {
  WeightFormat format = WeightFormat::bf16;
  const void* data = nullptr;
  const uint8_t* scale = nullptr;  // e8m0 block scales for fp8 / fp4
  int64_t out = 0, in = 0;
  // fp8 / fp4: quantize the activation to FP8 first (the reference's act_quant before its FP8
  // GEMMs); false: use it as given (wo_a, whose einsum the reference runs on the dequantized
  // weight and the unquantized activation)
  bool act_quant = true;
  bool empty() const { return data == nullptr; }
};

// Rows [r0, r0 + n) of w as a weight of their own (data and scales offset). FP8 scale blocks
// span 128 rows, so an FP8 slice must start on a multiple of 128 (Error otherwise).
LinearWeight weight_rows(const LinearWeight& w, int64_t r0, int64_t n);

// Dequantizes weight row r into dst[0..in) (fp32, exact): the scalar reference, and the
// per-ISA versions (AVX-512 for fp8/fp4; bit-identical except e4m3 NaN codes).
void dequant_row(const LinearWeight& w, int64_t r, float* dst);
using DequantFn = void (*)(const LinearWeight& w, int64_t r, float* dst);
namespace avx512 { void dequant_row(const LinearWeight& w, int64_t r, float* dst); }
DequantFn dequant_fn(Isa isa);

// The fused AVX-512 products (avx512/linear_avx512.cpp), bit-identical to dequant_row + dot:
// outputs [nb, ne) of y[rows, out] from the activation already quantized, widened to fp64
// (x: rows × in doubles, by widen_activation) and as the same fp32 values (xf: the panel GEMM
// reads these, half the bytes). panel: linear_panel_doubles(in, rows) doubles of 64-byte-aligned
// scratch.
namespace avx512 {
bool linear_supported(const LinearWeight& w);
// The panel's shape (weight rows × columns), here so that the scratch size and the kernel
// cannot disagree: the panel, then 16 fp64 lane sums per (activation row, panel row); for one
// activation row, the row scaled by an FP8 weight band's block scales (for FP8 up to
// kGemvRowsLimit rows, which take the FP8 GEMVs, every row's), then the blocked FP8 GEMV's lane
// sums (kDirectBand weight rows × rows rounded up to 4 × 16); and room for the FP4 integer
// route's byte slices of kIntRouteRows rows at a time (avx512/fp4_int.h:
// fp4_int_scratch_bytes(in) <= 4 · in, so in / 2 doubles a row).
inline constexpr int kPanelRows = 6;
inline constexpr int64_t kPanelBlock = 256;
inline constexpr int64_t kIntRouteRows = 16;
inline constexpr int64_t kGemvRowsLimit = 32;  // the most activation rows the FP8 GEMVs take
inline constexpr int64_t kDirectBand = 32;     // weight rows per band of the blocked GEMV
inline int64_t linear_panel_doubles(int64_t in, int64_t rows) {
  const int64_t panel = rows > 1 ? kPanelRows * kPanelBlock + rows * kPanelRows * 16 : 0;
  const int64_t scaled = rows <= kGemvRowsLimit ? rows * in + kDirectBand * 16 * ((rows + 3) / 4 * 4) : 0;
  return std::max({panel, scaled, std::min(rows, kIntRouteRows) * (in / 2)});
}
// x for linear_range: the activation (rows × in) widened to fp64 in the order its route reads it
// — column order, but for bf16 at one row each 16 columns' even ones first, then the odd ones
// (that GEMV's lanes take them so; the lane sums go back to the canonical order before the fold).
void widen_activation(const LinearWeight& w, const float* x, int64_t rows, double* x64);
void linear_range(const LinearWeight& w, const double* x, const float* xf, int64_t rows, float* y, bool round_bf16,
                  int64_t nb, int64_t ne, double* panel);
// Which kernel linear_range runs for `rows` activation rows. Only the panel GEMM reads the
// activation as fp32 alone (xf); the others read the fp64 copy (x), which the panel's callers
// need not make (rows × in × 8 bytes written per call: ~10% of a 64-row FP8 product's time).
enum class LinearRoute { fp4_int, fp8_gemv, gemv, panel };
LinearRoute linear_route(const LinearWeight& w, int64_t rows);
}  // namespace avx512

// y[rows, out] = x[rows, in] · Wᵀ. round_bf16: round outputs to bf16 (the reference's fp8/fp4
// GEMMs and bf16 F.linear return bf16; its fp32 linears — gate, compressor, head — do not).
// The numerics profile (core/numerics.h) picks the sums: exact, or fast (kernels/fast_linear.h).
void linear(const LinearWeight& w, const float* x, int64_t rows, float* y, bool round_bf16);
// The exact profile's sums whatever the active profile: for products that are not weight
// products but borrow the layout (the indexer's keys in the weight role), which other kernels
// compute exactly on other paths.
void linear_exact(const LinearWeight& w, const float* x, int64_t rows, float* y, bool round_bf16);

}  // namespace strata::kernels
