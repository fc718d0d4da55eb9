// Gemma 4's small mechanisms against their definitions: the GELU and soft-cap tables over every
// bf16 bit pattern, proportional RoPE's frequencies, and the K=V rebuild (k and v from the
// cached projection equal the layer's own k_norm + RoPE and unweighted norm).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/numfmt.h"
#include "kernels/rmsnorm.h"
#include "models/gemma4/k_eq_v.h"
#include "models/layers/gelu_tanh.h"
#include "models/layers/logit_softcap.h"
#include "models/layers/rope_table.h"
#include "models/layers/rotate_half_rope.h"

namespace strata::models {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Gemma4Layers, GeluAndSoftcapTablesEqualTheirDefinitionOnEveryBf16) {
  const LogitSoftcap cap(30.0f);
  for (uint32_t b = 0; b < 65536; ++b) {
    const float x = bf16_to_f32(uint16_t(b));
    if (std::isnan(x)) continue;
    ASSERT_EQ(bits(gelu_tanh_bf16(x)), bits(round_bf16(gelu_tanh(x)))) << b;
    float y = x;
    cap.apply(&y, 1);
    ASSERT_EQ(bits(y), bits(LogitSoftcap::of(x, 30.0f))) << b;
  }
  EXPECT_EQ(LogitSoftcap::of(1e6f, 30.0f), 30.0f);
  EXPECT_EQ(LogitSoftcap::of(-1e6f, 30.0f), -30.0f);
  EXPECT_EQ(LogitSoftcap::of(3.0f, 30.0f), round_bf16(round_bf16(float(std::tanh(double(round_bf16(0.1f))))) * 30.0f));
}

// 64 of a 512-dim head's 256 frequencies rotate, with the exponent over all 512 dims.
TEST(Gemma4Layers, ProportionalRopeKeepsTheFirstFrequencies) {
  const RotateHalfRope full(512, 1e6), prop(512, 1e6, 64);
  ASSERT_EQ(prop.inv_freq().size(), 256u);
  for (size_t i = 0; i < 256; ++i) EXPECT_EQ(prop.inv_freq()[i], i < 64 ? full.inv_freq()[i] : 0.0f) << i;
  EXPECT_EQ(prop.inv_freq()[1], 1.0f / float(std::pow(1e6, double(2.0f / 512.0f))));
  std::vector<float> x(512);
  for (size_t i = 0; i < 512; ++i) x[i] = round_bf16(float(std::sin(double(i) * 0.37) + 0.01));
  std::vector<float> y = x;
  prop.apply(y.data(), 1234);
  for (size_t i = 64; i < 256; ++i) EXPECT_EQ(y[i], x[i]) << i;  // pairs with frequency 0 unchanged
  for (size_t i = 320; i < 512; ++i) EXPECT_EQ(y[i], x[i]) << i;
  int moved = 0;
  for (size_t i = 0; i < 64; ++i) moved += y[i] != x[i];
  EXPECT_GT(moved, 32);
}

TEST(Gemma4Layers, KEqualsVRebuildIsTheLayersOwnKAndV) {
  const int64_t heads = 2, D = 64;
  const RotateHalfRope rope(D, 1e6, 8);
  std::vector<uint16_t> r(static_cast<size_t>(heads * D)), w(static_cast<size_t>(D)), k(r.size()), v(r.size());
  for (int64_t i = 0; i < heads * D; ++i) r[size_t(i)] = f32_to_bf16(float(std::cos(double(i) * 1.3)) * 3.0f);
  for (int64_t i = 0; i < D; ++i) w[size_t(i)] = f32_to_bf16(1.0f + 0.1f * float(std::sin(double(i))));
  const RopeTable table(rope, 4096);
  EXPECT_EQ(table.angles(), 8);
  table.reach(78);
  gemma4::k_eq_v_rebuild(r.data(), heads, D, w.data(), 1e-6f, table.row(77), table.angles(), k.data(), v.data());
  for (int64_t h = 0; h < heads; ++h) {
    std::vector<float> x(static_cast<size_t>(D)), kk(x.size()), vv(x.size());
    for (int64_t i = 0; i < D; ++i) x[size_t(i)] = bf16_to_f32(r[size_t(h * D + i)]);
    kernels::rms_norm(x.data(), w.data(), D, 1e-6f, kk.data());
    rope.apply(kk.data(), 77);
    kernels::rms_norm(x.data(), nullptr, D, 1e-6f, vv.data());
    for (int64_t i = 0; i < D; ++i) {
      EXPECT_EQ(k[size_t(h * D + i)], f32_to_bf16(kk[size_t(i)])) << h << " " << i;
      EXPECT_EQ(v[size_t(h * D + i)], f32_to_bf16(vv[size_t(i)])) << h << " " << i;
    }
  }
}

}  // namespace
}  // namespace strata::models
