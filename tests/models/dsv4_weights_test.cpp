// wo_a_fp8_is_exact: when the forward pass may multiply wo_a's FP8 bytes instead of the
// reference's bf16 copy of them.
#include "models/deepseek_v4/weights.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::dsv4 {
namespace {

TEST(Dsv4Weights, WoAFp8IsExactOnlyWhereBf16HoldsEveryValue) {
  const int64_t out = 256, in = 256;
  std::vector<uint8_t> q(size_t(out * in), 0x3A), s(4, 120);
  LinearWeight w{kernels::WeightFormat::fp8, q.data(), s.data(), out, in};
  EXPECT_TRUE(wo_a_fp8_is_exact(w, 128));
  EXPECT_FALSE(wo_a_fp8_is_exact(w, 64));  // group slices would split a 128-row scale block
  s[3] = 3;  // 2^-124: e4m3's smallest value times it is bf16's smallest subnormal
  EXPECT_TRUE(wo_a_fp8_is_exact(w, 128));
  s[3] = 2;  // 2^-125: values below bf16's range, which its copy would round
  EXPECT_FALSE(wo_a_fp8_is_exact(w, 128));
  s[3] = 255;  // NaN scale
  EXPECT_FALSE(wo_a_fp8_is_exact(w, 128));
  s[3] = 254;  // large scales overflow alike in fp32 and bf16
  EXPECT_TRUE(wo_a_fp8_is_exact(w, 128));
  q[size_t(out * in - 1)] = 0xFF;  // an e4m3 NaN code, which the SIMD decoders read apart
  EXPECT_FALSE(wo_a_fp8_is_exact(w, 128));
  w.format = kernels::WeightFormat::bf16;
  EXPECT_FALSE(wo_a_fp8_is_exact(w, 128));
}

}  // namespace
}  // namespace strata::dsv4
