// FP8 / FP4 activation quantization against hand-computed values.
#include "kernels/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/numfmt.h"

namespace strata::kernels {
namespace {

TEST(Quant, Fp8ScaleIsPowerOfTwoCeiling) {
  // amax 448 → 448/448 = 1 → 2^0; amax 449 → just above 1 → 2^1; amax 1 → 1/448 → 2^-8
  EXPECT_EQ(fp8_block_scale(448.0f), 1.0f);
  EXPECT_EQ(fp8_block_scale(449.0f), 2.0f);
  EXPECT_EQ(fp8_block_scale(1.0f), std::ldexp(1.0f, -8));
  EXPECT_EQ(fp8_block_scale(224.0f), 0.5f);
  // FP4: amax 6 → 1; amax 7 → 2; amax 3 → 0.5
  EXPECT_EQ(fp4_block_scale(6.0f), 1.0f);
  EXPECT_EQ(fp4_block_scale(7.0f), 2.0f);
  EXPECT_EQ(fp4_block_scale(3.0f), 0.5f);
}

TEST(Quant, Fp8RoundsToE4m3AndBack) {
  // Block with amax 448: scale 1, values round to the e4m3 grid (RNE, 3 mantissa bits).
  std::vector<float> x(64, 0.0f), y(64);
  x[0] = 448.0f;
  x[1] = 1.0625f;   // halfway 1.0 / 1.125 → even → 1.0
  x[2] = 1.1875f;   // halfway 1.125 / 1.25 → even → 1.25
  x[3] = -300.0f;   // grid step 32 at 256..448: 288 / 320 → 300 → 288
  x[4] = 0.001f;    // subnormal quantum 2^-9 = 0.001953: 0.001 → 0.001953125 (0.512 rounds to 1)
  quant_fp8(x.data(), 64, 64, y.data());
  EXPECT_EQ(y[0], 448.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[2], 1.25f);
  EXPECT_EQ(y[3], -288.0f);
  EXPECT_EQ(y[4], 0.001953125f);
  EXPECT_EQ(y[5], 0.0f);
}

TEST(Quant, Fp8ScalesPerBlockAndFloorsTinyAmax) {
  std::vector<float> x(128, 0.0f), y(128);
  x[0] = 1.0f;      // block 0: scale 2^-8, 1.0 = 256 · 2^-8 exactly
  x[64] = 1e-6f;    // block 1: amax floored to 1e-4 → scale 2^-22; 1e-6/2^-22 = 4.19 → 4 (step 0.5 at 4..8: 4.0)
  quant_fp8(x.data(), 128, 64, y.data());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[64], std::ldexp(4.0f, -22));
}

TEST(Quant, Fp4RoundsToE2m1Grid) {
  std::vector<float> x(32, 0.0f), y(32);
  x[0] = 6.0f;   // scale 1
  x[1] = 2.5f;   // halfway 2 / 3 → even mantissa → 2
  x[2] = 5.0f;   // halfway 4 / 6 → 4
  x[3] = -0.3f;  // 0.25 halfway 0 / 0.5: 0.3 → 0.5
  x[4] = 0.25f;  // tie → 0
  quant_fp4(x.data(), 32, 32, y.data());
  EXPECT_EQ(y[0], 6.0f);
  EXPECT_EQ(y[1], 2.0f);
  EXPECT_EQ(y[2], 4.0f);
  EXPECT_EQ(y[3], -0.5f);
  EXPECT_EQ(y[4], 0.0f);
}

TEST(Quant, ResultsAreBf16Exact) {
  std::vector<float> x(256), y(256);
  for (int i = 0; i < 256; ++i) x[size_t(i)] = std::sin(float(i) * 0.37f) * float(1 + i % 17);
  quant_fp8(x.data(), 256, 128, y.data());
  for (float v : y) EXPECT_EQ(v, round_bf16(v));
  quant_fp4(x.data(), 256, 32, y.data());
  for (float v : y) EXPECT_EQ(v, round_bf16(v));
}

}  // namespace
}  // namespace strata::kernels
