// Philox4x32-10 against the Random123 known-answer vectors, and the request key derivation.
#include "engine/philox.h"

#include <gtest/gtest.h>

#include <set>

namespace strata {
namespace {

TEST(Philox, KnownAnswers) {
  // Random123 tests/kat_vectors, the "philox4x32 10" lines: counter, key -> output.
  using A = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (A{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (A{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (A{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, UniformIsInRangeAndUsesTheCounter) {
  double sum = 0;
  std::set<double> seen;
  for (uint64_t i = 0; i < 10000; ++i) {
    double u = philox_uniform(42, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_NEAR(sum / 10000, 0.5, 0.01);  // sd of the mean is 0.0029
  // The high counter word matters too (counts beyond 2^32 tokens must not wrap).
  EXPECT_NE(philox_uniform(42, 1), philox_uniform(42, 1 + (uint64_t(1) << 32)));
  EXPECT_EQ(philox_uniform(42, 7), philox_uniform(42, 7));
}

TEST(Philox, RequestKey) {
  // A seed fixes the stream whatever the request id; without one the id decides.
  EXPECT_EQ(request_rng_key(5, 1), request_rng_key(5, 2));
  EXPECT_NE(request_rng_key(5, 1), request_rng_key(6, 1));
  EXPECT_NE(request_rng_key(std::nullopt, 1), request_rng_key(std::nullopt, 2));
  EXPECT_EQ(request_rng_key(std::nullopt, 9), request_rng_key(std::nullopt, 9));
  EXPECT_NE(request_rng_key(std::nullopt, 5), request_rng_key(5, 5));
}

}  // namespace
}  // namespace strata
