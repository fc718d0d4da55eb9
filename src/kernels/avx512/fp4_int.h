// An exact integer route for one activation row times an FP4 weight (avx512/fp4_int_avx512.cpp).
//
// The canonical dot (kernels/dot.h) sums exact fp64 products in 16 lanes and rounds after every
// addition. When no addition rounds, its result is the exact sum rounded once to fp32, and any
// exact method gives the same bits. For an FP8-quantized activation (e4m3 × a power-of-two
// block scale) and an FP4 weight (e2m1 × an e8m0 scale per 32 columns) every product is an
// integer times a power of two, so the sum of each 32-column block is an integer S_b < 2^27
// (32 × 12 × 2^18) times 2^e_b; if the exponents of a row's blocks span at most D bits with
// 2^27 · blocks · 2^D ≤ 2^53, every partial sum the canonical dot can form is a multiple of the
// smallest 2^e_b below 2^(53 + that exponent), so it is exact. The block sums are then integer
// dot products: VNNI on bytes (the activation as three signed byte slices, the weight as
// unsigned bytes), four columns per instruction lane, instead of decoding every weight to fp64.
// Where a 128-column chunk's values allow a unit 2^3 coarser (no value below ~amax / 2^11), its
// integers are below 2^15 and the top slice, zero, is skipped.
//
// Rows whose span is wider, or whose scales are 253 or more (where the reference's fp32 value
// overflows), are not exact this way: fp4_int_row says so and the caller takes the fp64 path.
#pragma once
#include <cstdint>

#include "kernels/linear.h"

namespace strata::kernels::avx512 {

// The activation row in the form the integer products read (pointers into caller's scratch).
struct Fp4IntActivation {
  const int8_t* slices = nullptr;  // per 128 columns: 3 slices × (even, odd columns) × 64 bytes
  const int32_t* exps = nullptr;   // per 32-column block, in the kernel's block order: E_c - 128
  const int32_t* corr = nullptr;   // per block, same order: 12 × Σ of the block's integers
  const uint8_t* two_slices = nullptr;  // per 128 columns: 1 where the top slice x2 is all zero
  int64_t in = 0;
  int32_t exp_min = 0, exp_max = 0;  // the least and greatest of exps: bounds on a row's span
};

// Bytes of 64-byte-aligned scratch that fp4_int_prepare needs for `in` columns.
inline int64_t fp4_int_scratch_bytes(int64_t in) { return 3 * in + 2 * 4 * (in / 32) + in / 128; }

// Whether this machine and this weight can take the route at all (VBMI, in % 512 == 0).
bool fp4_int_supported(const LinearWeight& w);

// Splits x (in fp64, FP8-quantized values) into the route's form. False when x is not of that
// form (a block whose values are not integers times one power of two below 2^18 of it, or not
// finite): then no row can take the route.
bool fp4_int_prepare(const double* x, int64_t in, void* scratch, Fp4IntActivation& a);

// y[n] = the canonical dot of x and weight row n, rounded to bf16 when rb; false (y[n]
// untouched) when the row is outside the exactness condition.
bool fp4_int_row(const LinearWeight& w, const Fp4IntActivation& a, int64_t n, float* y, bool rb);

// The same for `count` (1 to kFp4IntRows) activation rows at once, each weight chunk decoded once
// for all of them: y[r][n] for activation a[r]; returns the rows taken (bit r), the others
// untouched.
inline constexpr int kFp4IntRows = 4;
unsigned fp4_int_rows(const LinearWeight& w, const Fp4IntActivation* const* a, int count, int64_t n, float* const* y,
                      bool rb);

}  // namespace strata::kernels::avx512
