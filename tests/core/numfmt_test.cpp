// Exhaustive checks of the number formats against independent definitions.
#include "core/numfmt.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace strata {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// e4m3fn decoded from its definition: (-1)^s × 2^(e-7) × (1 + m/8), subnormal 2^-6 × m/8.
double e4m3_def(int code) {
  int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return std::nan("");
  double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -v : v;
}

TEST(E4M3, DecodesEveryCode) {
  int nan = 0;
  for (int c = 0; c < 256; ++c) {
    double want = e4m3_def(c);
    float got = e4m3_to_f32(uint8_t(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
      ++nan;
    } else {
      EXPECT_EQ(double(got), want) << c;
    }
  }
  EXPECT_EQ(nan, 2);  // 0x7F and 0xFF only: the "fn" variant has no infinities
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
}

TEST(E4M3, EncodeRoundTripsEveryFiniteCode) {
  for (int c = 0; c < 256; ++c) {
    float v = e4m3_to_f32(uint8_t(c));
    if (std::isnan(v)) continue;
    EXPECT_EQ(f32_to_e4m3(v, true), uint8_t(c)) << c;
    EXPECT_EQ(f32_to_e4m3(v, false), uint8_t(c)) << c;
  }
}

// Brute-force nearest value with ties to the even code, over the finite codes.
uint8_t e4m3_nearest(float x) {
  double best = 1e300;
  int bc = 0;
  for (int c = 0; c < 0x7F; ++c) {
    double d = std::fabs(std::fabs(double(x)) - e4m3_def(c));
    if (d < best || (d == best && (c & 1) == 0 && (bc & 1) == 1)) best = d, bc = c;
  }
  return uint8_t(bc | (std::signbit(x) ? 0x80 : 0));
}

TEST(E4M3, RoundsToNearestEvenOverDenseSweep) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> exp(-12.0f, 8.8f);
  for (int i = 0; i < 200000; ++i) {
    float x = std::exp2(exp(rng)) * ((i & 1) ? -1.0f : 1.0f);
    if (std::fabs(x) > 448.0f) continue;
    ASSERT_EQ(f32_to_e4m3(x, true), e4m3_nearest(x)) << x;
  }
  // every midpoint between neighbouring codes is a tie
  for (int c = 0; c < 0x7E; ++c) {
    float mid = float((e4m3_def(c) + e4m3_def(c + 1)) / 2);
    uint8_t want = (c & 1) ? uint8_t(c + 1) : uint8_t(c);
    EXPECT_EQ(f32_to_e4m3(mid, true), want) << "tie after code " << c;
    EXPECT_EQ(f32_to_e4m3(-mid, true), uint8_t(want | 0x80));
  }
}

TEST(E4M3, SaturatesOrGoesNaNOutOfRange) {
  EXPECT_EQ(f32_to_e4m3(1e6f, true), 0x7E);
  EXPECT_EQ(f32_to_e4m3(-1e6f, true), 0xFE);
  EXPECT_EQ(f32_to_e4m3(INFINITY, true), 0x7E);
  EXPECT_EQ(f32_to_e4m3(464.0f, false), 0x7E);   // tie rounds to even 448
  EXPECT_EQ(f32_to_e4m3(465.0f, false), 0x7F);   // rounds past 448: NaN without saturation
  EXPECT_EQ(f32_to_e4m3(-INFINITY, false), 0xFF);
  EXPECT_EQ(f32_to_e4m3(NAN, true) & 0x7F, 0x7F);
  EXPECT_EQ(f32_to_e4m3(1e-30f, true), 0x00);
  EXPECT_EQ(f32_to_e4m3(-1e-30f, true), 0x80);
  EXPECT_EQ(f32_to_e4m3(std::ldexp(1.0f, -10), true), 0x00);          // half the smallest subnormal: tie to 0
  EXPECT_EQ(f32_to_e4m3(std::ldexp(1.5f, -10), true), 0x01);
}

TEST(BF16, RoundsToNearestEven) {
  // Reference: pick the nearer of the two bf16 neighbours in double arithmetic, ties to even;
  // one past the largest finite value stands for infinity (2^128), as IEEE rounding does.
  std::mt19937 rng(2);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t b = rng();
    float f = std::bit_cast<float>(b);
    uint16_t h = f32_to_bf16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(h)));
      continue;
    }
    if (std::isinf(f)) continue;
    double d = std::fabs(double(f));
    uint16_t lo = uint16_t((b >> 16) & 0x7FFF);
    double vl = bf16_to_f32(lo);
    double vh = lo == 0x7F7F ? std::ldexp(1.0, 128) : double(bf16_to_f32(uint16_t(lo + 1)));
    uint16_t want = (d - vl < vh - d) ? lo : (d - vl > vh - d) ? uint16_t(lo + 1) : ((lo & 1) ? uint16_t(lo + 1) : lo);
    want = uint16_t(want | ((b >> 16) & 0x8000));
    ASSERT_EQ(h, want) << std::hex << b;
  }
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie to even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  for (uint32_t c = 0; c < 65536; ++c) {
    float f = bf16_to_f32(uint16_t(c));
    if (!std::isnan(f)) {
      EXPECT_EQ(f32_to_bf16(f), c);
    }
  }
}

TEST(F16, AllCodesRoundTrip) {
  for (uint32_t c = 0; c < 65536; ++c) {
    float f = f16_to_f32(uint16_t(c));
    if (std::isnan(f)) {
      EXPECT_EQ(c & 0x7C00, 0x7C00u);
      continue;
    }
    EXPECT_EQ(f32_to_f16(f), c) << c;
  }
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
}

__attribute__((target("f16c"))) uint16_t hw_f16(float f) {
  return uint16_t(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}
__attribute__((target("f16c"))) float hw_f32(uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16(short(h)))); }

TEST(F16, MatchesF16CInstructions) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C";
  std::mt19937 rng(3);
  for (int i = 0; i < 2000000; ++i) {
    float f = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), hw_f16(f)) << std::hex << bits(f);
  }
  for (uint32_t c = 0; c < 65536; ++c) {
    float a = f16_to_f32(uint16_t(c)), b = hw_f32(uint16_t(c));
    ASSERT_EQ(bits(a), bits(b)) << c;  // NaNs too: same quieting and payload
  }
}

TEST(E8M0, DecodesEveryCode) {
  for (int e = 0; e < 255; ++e) EXPECT_EQ(double(e8m0_to_f32(uint8_t(e))), std::ldexp(1.0, e - 127)) << e;
  EXPECT_TRUE(std::isnan(e8m0_to_f32(255)));
}

TEST(E8M0, CeilToPowerOfTwo) {
  for (int e = 1; e < 255; ++e) {
    float p = e8m0_to_f32(uint8_t(e));
    EXPECT_EQ(e8m0_ceil_from_f32(p), e);                              // exact powers stay
    EXPECT_EQ(e8m0_ceil_from_f32(std::nextafter(p, 0.0f)), e) << e;   // just below rounds up to p
    if (e < 254) {
      EXPECT_EQ(e8m0_ceil_from_f32(std::nextafter(p, INFINITY)), e + 1);
    }
  }
  EXPECT_EQ(e8m0_ceil_from_f32(5.1f / 448.0f), 121);  // 2^-6
  EXPECT_EQ(e8m0_ceil_from_f32(NAN), 255);
  EXPECT_EQ(e8m0_ceil_from_f32(1e-45f), 0);           // clamps at 2^-127
}

TEST(E2M1, DecodesEveryCode) {
  const float vals[8] = {0, .5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 16; ++c) {
    float v = e2m1_to_f32(uint8_t(c));
    EXPECT_EQ(std::fabs(v), vals[c & 7]);
    EXPECT_EQ(std::signbit(v), c >= 8);
    EXPECT_EQ(f32_to_e2m1(v), c);
  }
}

TEST(E2M1, RoundsToNearestEvenAndSaturates) {
  // ties go to the even code: 0.25->0, 0.75->1.0, 1.25->1.0, 1.75->2, 2.5->2, 3.5->4, 5->4
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const uint8_t want[] = {0, 2, 2, 4, 4, 6, 6};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(f32_to_e2m1(ties[i]), want[i]) << ties[i];
    EXPECT_EQ(f32_to_e2m1(-ties[i]), want[i] | 8) << -ties[i];
  }
  EXPECT_EQ(f32_to_e2m1(0.26f), 1);
  EXPECT_EQ(f32_to_e2m1(5.01f), 7);
  EXPECT_EQ(f32_to_e2m1(1e9f), 7);
  EXPECT_EQ(f32_to_e2m1(-INFINITY), 15);
  // dense sweep against brute-force nearest
  for (float x = -8; x <= 8; x += 1.0f / 1024) {
    const float vals[8] = {0, .5f, 1, 1.5f, 2, 3, 4, 6};
    float a = std::fabs(x);
    int bc = 0;
    for (int c = 1; c < 8; ++c) {
      float d = std::fabs(a - vals[c]), bd = std::fabs(a - vals[bc]);
      if (d < bd || (d == bd && (c & 1) == 0)) bc = c;
    }
    ASSERT_EQ(f32_to_e2m1(x) & 7, bc) << x;
  }
}

TEST(E2M1, PackedPairsLowNibbleFirst) {
  const uint8_t packed[2] = {0x21, 0xF7};  // elements: 1, 2, 7, 15
  EXPECT_EQ(e2m1_get(packed, 0), 0x1);
  EXPECT_EQ(e2m1_get(packed, 1), 0x2);
  EXPECT_EQ(e2m1_get(packed, 2), 0x7);
  EXPECT_EQ(e2m1_get(packed, 3), 0xF);
}

}  // namespace
}  // namespace strata
