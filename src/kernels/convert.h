// Bulk conversions of stored formats to f32. Each has a scalar reference (kernels/scalar)
// and SIMD versions (kernels/avx2, kernels/avx512) that must agree with it bit for bit;
// tests/kernels/convert_test.cpp checks every version against the reference.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/cpu.h"

namespace strata::kernels {

struct ConvertOps {
  void (*bf16_to_f32)(const uint16_t* src, float* dst, size_t n);
  void (*f16_to_f32)(const uint16_t* src, float* dst, size_t n);
  // dst[i] = e4m3(src[i]) * scale
  void (*e4m3_to_f32)(const uint8_t* src, float scale, float* dst, size_t n);
  // dst[i] = e2m1(element i of the packed pairs) * scale; n is the element count (even)
  void (*e2m1_to_f32)(const uint8_t* packed, float scale, float* dst, size_t n);
};

// The table for one ISA (the CPU must support it), and the one for the active ISA.
const ConvertOps& convert_ops(Isa isa);
inline const ConvertOps& convert_ops() { return convert_ops(active_isa()); }

namespace scalar { extern const ConvertOps kConvert; }
namespace avx2 { extern const ConvertOps kConvert; }
namespace avx512 { extern const ConvertOps kConvert; }

}  // namespace strata::kernels
