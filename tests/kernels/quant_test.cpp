// FP8 / FP4 activation quantization against hand-computed values.
#include "kernels/quant.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu.h"
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

// The AVX-512 FP8 quantization against the scalar reference, bit for bit: (1) every 256th f32
// bit pattern of magnitude ≤ 448 and every rounding tie with its neighbours, both signs, in
// blocks whose amax is 448 (scale 1, so the rounding to the e4m3 grid is seen directly: the
// ties, the subnormal range, the 2^-6 boundary);
// (2) random blocks at scales from 2^-40 to 2^40 with NaN, ±inf, ±0 and f32 subnormals mixed in
// (the scale, the amax that ignores NaN, the clamp, the quiet NaN); blocks of 64 and 128, in
// place and not.
TEST(Quant, Fp8Avx512EqualsTheReferenceBitForBit) {
  if (detected_isa() != Isa::avx512) GTEST_SKIP() << "no AVX-512";
  auto same = [](const std::vector<float>& x, int64_t block) {
    std::vector<float> ref(x.size()), got(x.size()), inplace(x);
    quant_fp8_reference(x.data(), int64_t(x.size()), block, ref.data());
    avx512::quant_fp8(x.data(), int64_t(x.size()), block, got.data());
    avx512::quant_fp8(inplace.data(), int64_t(inplace.size()), block, inplace.data());
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(ref[i]) ||
          std::bit_cast<uint32_t>(inplace[i]) != std::bit_cast<uint32_t>(ref[i]))
        return ::testing::AssertionFailure() << "x " << x[i] << " (0x" << std::hex << std::bit_cast<uint32_t>(x[i])
                                             << ") ref 0x" << std::bit_cast<uint32_t>(ref[i]) << " got 0x"
                                             << std::bit_cast<uint32_t>(got[i]);
    }
    return ::testing::AssertionSuccess();
  };
  std::vector<float> sweep;
  auto add = [&](float v) {
    for (float sv : {v, -v}) {
      if (sweep.size() % 128 == 0) sweep.push_back(std::copysign(448.0f, sv));
      sweep.push_back(sv);
    }
  };
  const uint32_t top = std::bit_cast<uint32_t>(448.0f);
  for (uint32_t bits = 0; bits <= top; bits += 256) add(std::bit_cast<float>(bits));
  // every rounding tie of the normal grid (bit 19 set, below it zero) and its two neighbours
  for (uint32_t bits = 0x00080000u; bits <= top; bits += 0x00100000u)
    for (uint32_t d : {bits - 1, bits, bits + 1}) add(std::bit_cast<float>(d));
  // the subnormal grid's ties (odd multiples of 2^-10) and their neighbours
  for (int k = 1; k < 16; k += 2) {
    const float t = std::ldexp(float(k), -10);
    for (float v : {std::nextafter(t, 0.0f), t, std::nextafter(t, 1.0f)}) add(v);
  }
  while (sweep.size() % 128) sweep.push_back(0.0f);
  ASSERT_TRUE(same(sweep, 128));

  std::mt19937 rng(17);
  std::normal_distribution<float> nd;
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            0.0f, -0.0f, 1e-40f, -3e-39f};
  for (int64_t block : {64, 128}) {
    std::vector<float> x(size_t(block) * 400);
    for (size_t b = 0; b < x.size(); b += size_t(block)) {
      const int e = int(rng() % 81) - 40;
      for (size_t i = b; i < b + size_t(block); ++i)
        x[i] = rng() % 50 == 0 ? specials[rng() % 8] : std::ldexp(nd(rng), e);
    }
    ASSERT_TRUE(same(x, block)) << "block " << block;
  }
}

}  // namespace
}  // namespace strata::kernels
