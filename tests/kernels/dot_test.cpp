// Every ISA's canonical dot is bit-identical to the scalar reference at every length (vector
// body, masked or scalar tail), with values of widely different magnitudes so that any change
// of summation order or a fused multiply-add would show.
#include "kernels/dot.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace strata::kernels {
namespace {

TEST(Dot, EveryIsaMatchesScalarBitwise) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::uniform_int_distribution<int> ex(-20, 20);
  std::vector<Isa> isas;
  for (Isa i : {Isa::avx2, Isa::avx512})
    if (int(i) <= int(detected_isa())) isas.push_back(i);
  if (isas.empty()) GTEST_SKIP() << "no SIMD level on this CPU";
  for (int64_t n : {0, 1, 5, 15, 16, 17, 31, 32, 33, 100, 128, 255, 256, 1000, 4096}) {
    for (int rep = 0; rep < 20; ++rep) {
      std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) a[size_t(i)] = std::ldexp(nd(rng), ex(rng)), b[size_t(i)] = std::ldexp(nd(rng), ex(rng));
      const float want = dot(a.data(), b.data(), n);
      for (Isa isa : isas) {
        const float got = dot_fn(isa)(a.data(), b.data(), n);
        ASSERT_EQ(std::memcmp(&want, &got, 4), 0) << "isa " << isa_name(isa) << " n " << n << ": " << want << " vs " << got;
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels
