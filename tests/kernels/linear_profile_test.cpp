// kernels::linear's opt-in profile: records by weight shape only while on, and the bytes it
// credits a call are the weight's own (data and block scales).
#include "kernels/linear_profile.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/linear.h"

namespace strata::kernels {
namespace {

TEST(LinearProfile, RecordsByShapeOnlyWhileOn) {
  std::vector<uint16_t> wd(64 * 32, 0x3F80);  // bf16 1.0
  const LinearWeight w{WeightFormat::bf16, wd.data(), nullptr, 64, 32};
  std::vector<float> x(3 * 32, 1.0f), y(3 * 64);
  linear(w, x.data(), 1, y.data(), false);  // before start: not recorded
  linear_profile_start();
  EXPECT_TRUE(linear_profile_on());
  linear(w, x.data(), 1, y.data(), false);
  linear(w, x.data(), 1, y.data(), false);
  linear(w, x.data(), 3, y.data(), false);
  const auto e = linear_profile_stop();
  EXPECT_FALSE(linear_profile_on());
  linear(w, x.data(), 1, y.data(), false);  // after stop: not recorded
  ASSERT_EQ(e.size(), 2u);
  int64_t calls = 0;
  for (const auto& r : e) {
    EXPECT_EQ(r.format, WeightFormat::bf16);
    EXPECT_EQ(r.out, 64);
    EXPECT_EQ(r.in, 32);
    EXPECT_EQ(r.calls, r.rows == 1 ? 2 : 1);
    EXPECT_GT(r.seconds, 0.0);
    EXPECT_DOUBLE_EQ(r.weight_bytes, 64.0 * 32 * 2);
    calls += r.calls;
  }
  EXPECT_EQ(calls, 3);
  EXPECT_GE(e[0].seconds, e[1].seconds);  // most time first
  EXPECT_EQ(y[0], 32.0f);                 // the product itself is unchanged by the accounting
  linear_profile_start();                 // start clears what an earlier run recorded
  EXPECT_TRUE(linear_profile_stop().empty());
}

TEST(LinearProfile, WeightBytesCountDataAndScales) {
  EXPECT_DOUBLE_EQ(weight_bytes({WeightFormat::f32, nullptr, nullptr, 10, 16}), 640.0);
  EXPECT_DOUBLE_EQ(weight_bytes({WeightFormat::fp8, nullptr, nullptr, 256, 1024}), 256.0 * 1024 + 2 * 8);
  EXPECT_DOUBLE_EQ(weight_bytes({WeightFormat::fp8, nullptr, nullptr, 129, 130}), 129.0 * 130 + 2 * 2);
  EXPECT_DOUBLE_EQ(weight_bytes({WeightFormat::fp4, nullptr, nullptr, 2048, 4096}), 2048.0 * 2048 + 2048.0 * 128);
  EXPECT_STREQ(format_name(WeightFormat::fp4), "fp4");
}

}  // namespace
}  // namespace strata::kernels
