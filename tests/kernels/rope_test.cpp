// RoPE tables (plain and YaRN) against a double-precision transcription of the reference's
// precompute_freqs_cis, and the forward/inverse rotation.
#include "kernels/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/numfmt.h"

namespace strata::kernels {
namespace {

TEST(Rope, PlainFrequencies) {
  RopeTable t(64, 10000.0, YarnParams{});
  ASSERT_EQ(t.freqs().size(), 32u);
  for (int k = 0; k < 32; ++k) EXPECT_NEAR(t.freqs()[size_t(k)], std::pow(10000.0, -2.0 * k / 64), 1e-7 * std::pow(10000.0, -2.0 * k / 64));
  EXPECT_EQ(t.freqs()[0], 1.0f);
}

TEST(Rope, YarnBlendsBetweenCorrectionDims) {
  // Flash: theta 160000, factor 16, original 65536, beta 32 / 1.
  const double base = 160000, factor = 16, orig = 65536;
  RopeTable t(64, base, YarnParams{factor, 65536, 32, 1});
  auto corr = [&](double rot) { return 64 * std::log(orig / (rot * 2 * M_PI)) / (2 * std::log(base)); };
  const double lo = std::max(std::floor(corr(32)), 0.0), hi = std::min(std::ceil(corr(1)), 63.0);
  for (int k = 0; k < 32; ++k) {
    double f = std::pow(base, -2.0 * k / 64);
    double ramp = std::clamp((k - lo) / (hi - lo), 0.0, 1.0);
    double want = f / factor * ramp + f * (1 - ramp);
    EXPECT_NEAR(t.freqs()[size_t(k)], want, 4e-7 * want) << k;
  }
  // High-frequency dims keep their frequency, low-frequency ones are divided by the factor.
  EXPECT_EQ(t.freqs()[0], 1.0f);
  EXPECT_NEAR(t.freqs()[31], std::pow(base, -62.0 / 64) / factor, 1e-6 * t.freqs()[31]);
}

TEST(Rope, RotatesPairsAndInverseUndoes) {
  RopeTable t(4, 10000.0, YarnParams{});
  std::vector<float> x = {1.0f, 0.0f, 0.5f, -0.25f};
  std::vector<float> y = x;
  t.apply(y.data(), 3);
  // pair 0: angle 3 rad; (1, 0) → (cos 3, sin 3)
  EXPECT_EQ(y[0], round_bf16(float(std::cos(3.0))));
  EXPECT_EQ(y[1], round_bf16(float(std::sin(3.0))));
  t.apply(y.data(), 3, true);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[size_t(i)], x[size_t(i)], 0.01f);
  // Position 0 is the identity.
  std::vector<float> z = x;
  t.apply(z.data(), 0);
  EXPECT_EQ(z, x);
}

}  // namespace
}  // namespace strata::kernels
