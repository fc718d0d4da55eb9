// The indexer's q · k products (kernels/index_dot.h): every z[h][t] must be the canonical dot of
// the query row and the key's values, whether the integer route takes the pair or not, for keys
// stored as FP4 and as FP8 (the same values).
#include "kernels/index_dot.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu.h"
#include "core/numfmt.h"
#include "kernels/convert.h"
#include "kernels/dot.h"
#include "kernels/quant.h"

namespace strata::kernels {
namespace {

constexpr int64_t kDim = 128, kKeyBytes = kDim / 2 + kDim / 32, kFp8KeyBytes = kDim + kDim / 32;

struct Keys {
  std::vector<uint8_t> bytes;
  std::vector<const uint8_t*> ptrs;
  Keys(int64_t n, int scale_lo, int scale_span, std::mt19937& rng) : bytes(size_t(n * kKeyBytes)) {
    for (int64_t t = 0; t < n; ++t) {
      uint8_t* k = bytes.data() + t * kKeyBytes;
      for (int64_t i = 0; i < kDim / 2; ++i) k[i] = uint8_t(rng());
      for (int64_t b = 0; b < kDim / 32; ++b) k[kDim / 2 + b] = uint8_t(scale_lo + int(rng() % uint32_t(scale_span + 1)));
    }
    for (int64_t t = 0; t < n; ++t) ptrs.push_back(bytes.data() + t * kKeyBytes);
  }
  std::vector<float> values(int64_t t) const {
    std::vector<float> v(static_cast<size_t>(kDim));
    convert_ops().e2m1_blocks_to_f32(ptrs[size_t(t)], ptrs[size_t(t)] + kDim / 2, 32, v.data(), size_t(kDim));
    return v;
  }
};

// Queries as the indexer makes them: FP4 fake-quantized in 32s, of many magnitudes; head 1's
// second block all zero.
std::vector<float> queries(int64_t heads, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> q(static_cast<size_t>(heads * kDim));
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::ldexp(nd(rng), int(i / 32 % 7) - 3);
  for (int64_t d = 32; d < 64; ++d) q[size_t(kDim + d)] = 0.0f;
  fake_quant_fp4(q.data(), int64_t(q.size()), 32);
  return q;
}

bool route_available() { return detected_isa() == Isa::avx512 && active_isa() == Isa::avx512; }

// The same keys stored as FP8 (per 32: the e8m0 scale of the block's amax, e4m3 codes), as the
// cache's default format holds them.
struct Fp8Keys {
  std::vector<uint8_t> bytes;
  std::vector<const uint8_t*> ptrs;
  explicit Fp8Keys(const Keys& k) : bytes(k.ptrs.size() * size_t(kFp8KeyBytes)) {
    for (size_t t = 0; t < k.ptrs.size(); ++t) {
      const auto v = k.values(int64_t(t));
      uint8_t* out = bytes.data() + t * kFp8KeyBytes;
      for (int64_t b = 0; b < kDim / 32; ++b) {
        out[kDim + b] = fp8_block_scale_e8m0(v.data() + b * 32, 32);
        const float sc = e8m0_to_f32(out[kDim + b]);
        for (int64_t d = b * 32; d < (b + 1) * 32; ++d) out[d] = f32_to_e4m3(v[size_t(d)] / sc);
      }
    }
    for (size_t t = 0; t < k.ptrs.size(); ++t) ptrs.push_back(bytes.data() + t * kFp8KeyBytes);
  }
  std::vector<float> values(int64_t t) const {
    std::vector<float> v(static_cast<size_t>(kDim));
    convert_ops().e4m3_blocks_to_f32(ptrs[size_t(t)], ptrs[size_t(t)] + kDim, 32, v.data(), size_t(kDim));
    return v;
  }
};

template <class K>
void expect_canonical(const IndexQueriesFp4& qi, const std::vector<float>& q, const K& keys, int64_t nt,
                      IndexKeyCodes codes) {
  const int64_t heads = qi.heads, ldz = nt + 3;
  std::vector<float> z(static_cast<size_t>(heads * ldz), -1.0f);
  index_dots(qi, codes, keys.ptrs.data(), nt, z.data(), ldz);
  for (int64_t t = 0; t < nt; ++t) {
    const auto kv = keys.values(t);
    for (int64_t h = 0; h < heads; ++h) {
      const float ref = dot(q.data() + h * kDim, kv.data(), kDim);
      const float got = z[size_t(h * ldz + t)];
      if (std::isnan(ref)) {
        ASSERT_TRUE(std::isnan(got)) << "head " << h << " key " << t;
      } else {
        ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(ref)) << "head " << h << " key " << t;
      }
    }
  }
}

// Both storages of the same keys.
void expect_canonical(const IndexQueriesFp4& qi, const std::vector<float>& q, const Keys& keys, int64_t nt) {
  expect_canonical(qi, q, keys, nt, IndexKeyCodes::fp4);
  expect_canonical(qi, q, Fp8Keys(keys), nt, IndexKeyCodes::fp8);
}

TEST(IndexDotFp4, GivesTheCanonicalDotsForModelLikeKeys) {
  if (!route_available()) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(3);
  const auto q = queries(64, rng);
  IndexQueriesFp4 qi;
  ASSERT_TRUE(prepare_index_queries_fp4(q.data(), 64, kDim, qi));
  for (int64_t nt : {1, 15, 16, 17, 100}) expect_canonical(qi, q, Keys(nt, 115, 12, rng), nt);
}

// Keys whose block scales span far more than the route's 38 bits, where the canonical dot
// rounds, and scales whose fp32 value overflows (253, 254) or is NaN (255): those pairs take the
// canonical dot; the other keys of their group still take the route.
TEST(IndexDotFp4, KeysOutsideTheConditionGetTheCanonicalDot) {
  if (!route_available()) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(4);
  const auto q = queries(8, rng);
  IndexQueriesFp4 qi;
  ASSERT_TRUE(prepare_index_queries_fp4(q.data(), 8, kDim, qi));
  Keys keys(40, 100, 8, rng);
  uint8_t* wide = keys.bytes.data() + 5 * kKeyBytes;  // key 5: blocks at 2^60 and 2^-60
  wide[kDim / 2 + 0] = 187;
  wide[kDim / 2 + 1] = 67;
  for (int t : {9, 20, 33}) keys.bytes[size_t(t * kKeyBytes + kDim / 2 + 2)] = uint8_t(253 + t % 3);
  for (int t : {12, 13, 14})  // every block alike: no span, only the scale itself is out
    for (int64_t b = 0; b < kDim / 32; ++b) keys.bytes[size_t(t * kKeyBytes + kDim / 2 + b)] = uint8_t(241 + t);
  expect_canonical(qi, q, keys, 40);
}

// The canonical dot's lane 0 adds 2^30 (column 0) + 2^-30 (column 32), which rounds to 2^30,
// and lane 1 holds -2^30 (column 1): the dot is 0. The exact sum is 2^-30 (what block sums give:
// block 0's is 0). A key with that span must take the canonical dot.
TEST(IndexDotFp4, AKeyWhoseCanonicalDotRoundsIsNotTakenByTheRoute) {
  if (!route_available()) GTEST_SKIP() << "AVX-512 not active";
  std::vector<float> q(static_cast<size_t>(4 * kDim), 0.0f);
  for (int64_t h = 0; h < 4; ++h) q[size_t(h * kDim)] = q[size_t(h * kDim + 1)] = q[size_t(h * kDim + 32)] = 1.0f;
  IndexQueriesFp4 qi;
  ASSERT_TRUE(prepare_index_queries_fp4(q.data(), 4, kDim, qi));
  std::mt19937 rng(6);
  Keys keys(3, 127, 0, rng);
  for (int64_t t = 0; t < 3; ++t) {
    uint8_t* k = keys.bytes.data() + t * kKeyBytes;
    std::fill(k, k + kDim / 2, uint8_t(0));
    k[0] = 0xA2;   // column 0: +1, column 1: -1
    k[16] = 0x02;  // column 32: +1
    k[kDim / 2 + 0] = 127 + 30;
    k[kDim / 2 + 1] = uint8_t(t == 0 ? 127 - 30 : 127 - 5);  // key 0: the rounding; 1, 2: exact
  }
  EXPECT_EQ(dot(q.data(), keys.values(0).data(), kDim), 0.0f);  // the rounding happens
  expect_canonical(qi, q, keys, 3);
}

// FP8-stored keys whose values are not FP4 values (a block needing integers past 12), or hold
// a NaN code: the canonical dot, the group's other keys the route.
TEST(IndexDotFp4, Fp8KeysOutsideTheFp4ValuesGetTheCanonicalDot) {
  if (!route_available()) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(7);
  const auto q = queries(8, rng);
  IndexQueriesFp4 qi;
  ASSERT_TRUE(prepare_index_queries_fp4(q.data(), 8, kDim, qi));
  Fp8Keys keys(Keys(20, 110, 6, rng));
  keys.bytes[size_t(3 * kFp8KeyBytes + 5)] = 0xFE;   // -1.75 · 2^8: -14 units of the block's amax / 8
  keys.bytes[size_t(11 * kFp8KeyBytes + 70)] = 0x7F;  // NaN
  expect_canonical(qi, q, keys, 20, IndexKeyCodes::fp8);
}

TEST(IndexDotFp4, RefusesQueriesThatAreNotFp4Quantized) {
  if (!route_available()) GTEST_SKIP() << "AVX-512 not active";
  std::mt19937 rng(5);
  auto q = queries(4, rng);
  IndexQueriesFp4 qi;
  EXPECT_TRUE(prepare_index_queries_fp4(q.data(), 4, kDim, qi));
  EXPECT_FALSE(prepare_index_queries_fp4(q.data(), 4, 64, qi));  // only 128 columns
  EXPECT_FALSE(prepare_index_queries_fp4(q.data(), 3, kDim, qi));  // heads in 4s
  auto q2 = q;
  q2[7] = 0.3f;  // not e2m1 × its block's power of two
  EXPECT_FALSE(prepare_index_queries_fp4(q2.data(), 4, kDim, qi));
  q2 = q;
  q2[70] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(prepare_index_queries_fp4(q2.data(), 4, kDim, qi));
  q2 = q;
  q2[70] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(prepare_index_queries_fp4(q2.data(), 4, kDim, qi));
}

}  // namespace
}  // namespace strata::kernels
