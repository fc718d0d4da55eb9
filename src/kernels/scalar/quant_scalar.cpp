#include <algorithm>
#include <cmath>
#include <string>

#include "core/cpu.h"
#include "core/error.h"
#include "core/numfmt.h"
#include "kernels/quant.h"

namespace strata::kernels {

namespace {
float amax_of(const float* x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}
void check_blocks(int64_t n, int64_t block, const char* what) {
  if (block <= 0 || n % block)
    throw Error(std::string(what) + ": length " + std::to_string(n) + " is not a multiple of block " + std::to_string(block));
}
}  // namespace

float fp8_block_scale(float amax) { return e8m0_to_f32(e8m0_ceil_from_f32(amax * (1.0f / kE4M3Max))); }
float fp4_block_scale(float amax) { return e8m0_to_f32(e8m0_ceil_from_f32(amax * float(1.0 / 6.0))); }
uint8_t fp8_block_scale_e8m0(const float* x, int64_t n) {
  return e8m0_ceil_from_f32(std::max(amax_of(x, n), kFp8AmaxFloor) * (1.0f / kE4M3Max));
}
uint8_t fp4_block_scale_e8m0(const float* x, int64_t n) {
  return e8m0_ceil_from_f32(std::max(amax_of(x, n), kFp4AmaxFloor) * float(1.0 / 6.0));
}

void quant_fp8(const float* x, int64_t n, int64_t block, float* y) {
  if (active_isa() == Isa::avx512 && block % 16 == 0) {
    check_blocks(n, block, "quant_fp8");  // (the reference checks its own)
    return avx512::quant_fp8(x, n, block, y);
  }
  quant_fp8_reference(x, n, block, y);
}

void quant_fp8_reference(const float* x, int64_t n, int64_t block, float* y) {
  check_blocks(n, block, "quant_fp8");
  for (int64_t b = 0; b < n; b += block) {
    const float s = fp8_block_scale(std::max(amax_of(x + b, block), kFp8AmaxFloor));
    for (int64_t i = b; i < b + block; ++i) {
      float q = std::clamp(x[i] / s, -kE4M3Max, kE4M3Max);
      y[i] = e4m3_to_f32(f32_to_e4m3(q)) * s;
    }
  }
}

void quant_fp4(const float* x, int64_t n, int64_t block, float* y) {
  check_blocks(n, block, "quant_fp4");
  for (int64_t b = 0; b < n; b += block) {
    const float s = fp4_block_scale(std::max(amax_of(x + b, block), kFp4AmaxFloor));
    for (int64_t i = b; i < b + block; ++i) {
      float q = std::clamp(x[i] / s, -kE2M1Max, kE2M1Max);
      y[i] = e2m1_to_f32(f32_to_e2m1(q)) * s;
    }
  }
}

}  // namespace strata::kernels
