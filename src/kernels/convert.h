// Bulk conversions of stored formats to f32. Each has a scalar reference (kernels/scalar)
// and SIMD versions (kernels/avx2, kernels/avx512) that must agree with it bit for bit;
// tests/kernels/convert_test.cpp checks every version against the reference.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/cpu.h"
#include "core/numfmt.h"

namespace strata::kernels {

struct ConvertOps {
  void (*bf16_to_f32)(const uint16_t* src, float* dst, size_t n);
  void (*f16_to_f32)(const uint16_t* src, float* dst, size_t n);
  // dst[i] = e4m3(src[i]) * scale
  void (*e4m3_to_f32)(const uint8_t* src, float scale, float* dst, size_t n);
  // dst[i] = e2m1(element i of the packed pairs) * scale; n is the element count (even)
  void (*e2m1_to_f32)(const uint8_t* packed, float scale, float* dst, size_t n);
  // Block-scaled forms (cache entries): element i takes e8m0 scale scales[i / block]; n is a
  // multiple of block (even for e2m1). One call per entry instead of one per block.
  void (*e4m3_blocks_to_f32)(const uint8_t* src, const uint8_t* scales, size_t block, float* dst, size_t n);
  void (*e2m1_blocks_to_f32)(const uint8_t* packed, const uint8_t* scales, size_t block, float* dst, size_t n);
};

// The block-scaled forms as loops over an ISA's per-block conversion (scalar, AVX2; AVX-512
// keeps its vector loop across blocks).
namespace detail {
template <void (*per_block)(const uint8_t*, float, float*, size_t)>
void e4m3_blocks(const uint8_t* src, const uint8_t* scales, size_t block, float* dst, size_t n) {
  for (size_t b = 0; b * block < n; ++b) per_block(src + b * block, e8m0_to_f32(scales[b]), dst + b * block, block);
}
template <void (*per_block)(const uint8_t*, float, float*, size_t)>
void e2m1_blocks(const uint8_t* packed, const uint8_t* scales, size_t block, float* dst, size_t n) {
  for (size_t b = 0; b * block < n; ++b) per_block(packed + b * block / 2, e8m0_to_f32(scales[b]), dst + b * block, block);
}
}  // namespace detail

// The table for one ISA (the CPU must support it), and the one for the active ISA.
const ConvertOps& convert_ops(Isa isa);
inline const ConvertOps& convert_ops() { return convert_ops(active_isa()); }

namespace scalar { extern const ConvertOps kConvert; }
namespace avx2 { extern const ConvertOps kConvert; }
namespace avx512 { extern const ConvertOps kConvert; }

}  // namespace strata::kernels
