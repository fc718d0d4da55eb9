// Scalar reference conversions: the definition every SIMD version is tested against.
#include "core/numfmt.h"
#include "kernels/convert.h"

namespace strata::kernels::scalar {
namespace {

void bf16_to_f32(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = strata::bf16_to_f32(src[i]);
}
void f16_to_f32(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = strata::f16_to_f32(src[i]);
}
void e4m3_to_f32(const uint8_t* src, float scale, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = strata::e4m3_to_f32(src[i]) * scale;
}
void e2m1_to_f32(const uint8_t* packed, float scale, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = strata::e2m1_to_f32(e2m1_get(packed, int64_t(i))) * scale;
}

}  // namespace

const ConvertOps kConvert = {bf16_to_f32, f16_to_f32, e4m3_to_f32, e2m1_to_f32, detail::e4m3_blocks<e4m3_to_f32>,
                             detail::e2m1_blocks<e2m1_to_f32>};

}  // namespace strata::kernels::scalar
