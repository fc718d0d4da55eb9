// The indexer's head reduction: a hand-computed case, and the AVX-512 version bit for bit the
// scalar reference over random scores with the edge values (NaN, ±0, negatives, values that round
// up to the next bf16 exponent) at every position of a vector and in the tail.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "kernels/index_score.h"

namespace strata::kernels {
namespace {

TEST(IndexScore, ReluWeightsAndBf16Rounding) {
  // 2 heads, 3 keys (stride 4: the row's spare element is never read).
  // key 0: relu(1)·0.5 + relu(2)·0.25 = 1; key 1: relu(-3) drops head 0: 4·0.25 = 1;
  // key 2: 1 + 2^-8 rounds to 1 in bf16 before the weight (ties to even): 0.5 + 3·0.25 = 1.25.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float z[8] = {1.0f, -3.0f, 1.0f + 0x1p-8f, nan, 2.0f, 4.0f, 3.0f, nan};
  const float w[2] = {0.5f, 0.25f};
  float s[3];
  index_score(z, 2, 3, 4, w, s);
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(s[1], 1.0f);
  EXPECT_EQ(s[2], 1.25f);
}

std::vector<float> random_scores(int64_t heads, int64_t stride, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::uniform_int_distribution<int> pick(0, 40);
  std::vector<float> z(size_t(heads * stride));
  for (auto& v : z) {
    switch (pick(rng)) {
      case 0: v = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: v = -std::numeric_limits<float>::quiet_NaN(); break;
      case 2: v = 0.0f; break;
      case 3: v = -0.0f; break;
      case 4: v = std::bit_cast<float>(0x3FFFFFFFu); break;  // rounds up across an exponent
      case 5: v = std::numeric_limits<float>::infinity(); break;
      case 6: v = 1e-40f; break;  // subnormal
      default: v = nd(rng);
    }
  }
  return z;
}

TEST(IndexScore, Avx512EqualsTheReferenceBitForBit) {
  if (detected_isa() != Isa::avx512) GTEST_SKIP() << "no AVX-512";
  for (int64_t heads : {1, 3, 64}) {
    for (int64_t n : {0, 1, 15, 16, 17, 33, 200}) {
      const int64_t stride = n + 5;
      const auto z = random_scores(heads, stride, uint32_t(heads * 1000 + n));
      std::vector<float> w(static_cast<size_t>(heads));
      std::mt19937 rng(static_cast<uint32_t>(n));
      std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
      for (auto& v : w) v = ud(rng);
      std::vector<float> ref(size_t(n) + 1, 7.0f), got(size_t(n) + 1, 7.0f);
      index_score_reference(z.data(), heads, n, stride, w.data(), ref.data());
      avx512::index_score(z.data(), heads, n, stride, w.data(), got.data());
      for (int64_t t = 0; t <= n; ++t)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[size_t(t)]), std::bit_cast<uint32_t>(ref[size_t(t)]))
            << "heads " << heads << " n " << n << " key " << t;
    }
  }
}

}  // namespace
}  // namespace strata::kernels
