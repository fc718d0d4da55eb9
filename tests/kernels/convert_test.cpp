// Every SIMD conversion agrees bit for bit with the scalar reference, on every code and
// on lengths that exercise the vector body and the scalar tail.
#include "kernels/convert.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

namespace strata::kernels {
namespace {

std::vector<Isa> isas() {
  std::vector<Isa> v;
  for (Isa i : {Isa::avx2, Isa::avx512})
    if (int(i) <= int(detected_isa())) v.push_back(i);
  return v;
}

void expect_same(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  if (!a.empty()) ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << what;  // memcmp of null is UB
}

TEST(Convert, EveryIsaMatchesScalar) {
  if (isas().empty()) GTEST_SKIP() << "CPU has no SIMD level beyond scalar";
  std::mt19937 rng(7);
  for (size_t n : {0u, 1u, 7u, 8u, 15u, 16u, 17u, 33u, 256u, 1000u, 4096u}) {
    std::vector<uint16_t> h(n);
    std::vector<uint8_t> b(n), p((n + 1) / 2);
    for (auto& x : h) x = uint16_t(rng());
    for (size_t i = 0; i < n; ++i) b[i] = uint8_t(i < 256 ? i : rng());
    for (auto& x : p) x = uint8_t(rng());
    const size_t ne = n & ~size_t(1);
    std::vector<float> ref(n), got(n);
    for (Isa isa : isas()) {
      const auto& o = convert_ops(isa);
      scalar::kConvert.bf16_to_f32(h.data(), ref.data(), n);
      o.bf16_to_f32(h.data(), got.data(), n);
      expect_same(ref, got, "bf16");
      scalar::kConvert.f16_to_f32(h.data(), ref.data(), n);
      o.f16_to_f32(h.data(), got.data(), n);
      expect_same(ref, got, "f16");
      // scales at the ends of the range too (the product rounds or leaves the normal range)
      for (float sc : {0.125f, 1.0f, 0.3f, 0x1p-126f, 0x1p-140f, 0x1p120f, 0x1p127f}) {
        scalar::kConvert.e4m3_to_f32(b.data(), sc, ref.data(), n);
        o.e4m3_to_f32(b.data(), sc, got.data(), n);
        expect_same(ref, got, "e4m3");
      }
      std::fill(ref.begin(), ref.end(), 0.f);
      std::fill(got.begin(), got.end(), 0.f);
      scalar::kConvert.e2m1_to_f32(p.data(), 4.0f, ref.data(), ne);
      o.e2m1_to_f32(p.data(), 4.0f, got.data(), ne);
      expect_same(ref, got, "e2m1");
    }
  }
}

// The block-scaled forms equal the per-block calls of the scalar reference, for every code
// under scales across the e8m0 range, at the block sizes cache entries use and one the
// AVX-512 loop does not take (24).
TEST(Convert, BlockScaledFormsMatchScalarPerBlock) {
  std::vector<Isa> all = isas();
  all.insert(all.begin(), Isa::scalar);
  std::mt19937 rng(11);
  for (size_t block : {16u, 24u, 32u, 64u}) {
    const size_t nb = 12, n = nb * block;
    std::vector<uint8_t> codes(n), packed(n / 2), scales(nb);
    for (size_t i = 0; i < n; ++i) codes[i] = uint8_t(i < 256 ? i : rng());
    for (auto& x : packed) x = uint8_t(rng());
    for (size_t b = 0; b < nb; ++b) scales[b] = uint8_t(b < 4 ? std::array<int, 4>{0, 1, 127, 254}[b] : rng() % 255);
    std::vector<float> ref(n), got(n);
    for (size_t b = 0; b < nb; ++b) {
      const float s = e8m0_to_f32(scales[b]);
      scalar::kConvert.e4m3_to_f32(codes.data() + b * block, s, ref.data() + b * block, block);
    }
    for (Isa isa : all) {
      convert_ops(isa).e4m3_blocks_to_f32(codes.data(), scales.data(), block, got.data(), n);
      expect_same(ref, got, "e4m3 blocks");
    }
    for (size_t b = 0; b < nb; ++b) {
      const float s = e8m0_to_f32(scales[b]);
      scalar::kConvert.e2m1_to_f32(packed.data() + b * block / 2, s, ref.data() + b * block, block);
    }
    for (Isa isa : all) {
      convert_ops(isa).e2m1_blocks_to_f32(packed.data(), scales.data(), block, got.data(), n);
      expect_same(ref, got, "e2m1 blocks");
    }
  }
}

TEST(Convert, ActiveIsaFollowsOverride) {
  // STRATA_ISA is honoured: the suite runs once per level in CI.
  const char* env = std::getenv("STRATA_ISA");
  if (env && *env) EXPECT_EQ(isa_name(active_isa()), std::string(env));
  else EXPECT_EQ(active_isa(), detected_isa());
}

}  // namespace
}  // namespace strata::kernels
