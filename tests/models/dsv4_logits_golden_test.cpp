// End-to-end logits against the reference (tests/goldens/deepseek_v4/logits/<case>/, written by
// reference/make_logits_goldens.py): the checkpoint is rebuilt with the golden's preset + seed
// (make-model is deterministic), then prefill of ids[0..K) and one decode step per remaining id,
// exactly `strata logits`' contract. Every row's 64-bit hash of the float32 logits bytes must
// match: bit-exact. On a mismatch the test reports the first differing row and the max |diff|
// over the stored diagnostic subset (512 fixed vocab indices + top-10).
// Measured: all rows of all cases bit-exact (max |diff| 0), at the best ISA and STRATA_ISA=scalar.
// Sanitizer builds check only the first rows after the prefill (decode is slow there; row r
// depends only on ids[0..K+r), so a prefix of the rows is a valid check).
#include "models/logits_golden.h"

namespace strata::dsv4 {
namespace {

void check_case(const std::string& name) { testing::check_logits_case("deepseek_v4", name); }

TEST(LogitsGoldenHash, MatchesReferenceDefinition) {
  const float v[2] = {1.0f, 2.0f};
  EXPECT_EQ(testing::row_hash(v, 2), 0xc707a45ed8d0b636ull);  // printed by the Python row_hash
}

TEST(Dsv4LogitsGolden, FlashTinyPrefill131ThenDecode) { check_case("flash_tiny_s1_n164_k131"); }
TEST(Dsv4LogitsGolden, ProTinyPrefill120ThenDecodeAcross128) { check_case("pro_tiny_s2_n150_k120"); }
TEST(Dsv4LogitsGolden, FlashTinyDecodeFromPosition1) { check_case("flash_tiny_s3_n40_k1"); }
TEST(Dsv4LogitsGolden, FlashTiny300TokensPrefill131) { check_case("flash_tiny_s4_n300_k131"); }
TEST(Dsv4LogitsGolden, ProTiny300TokensDecodeFromPosition1) { check_case("pro_tiny_s5_n300_k1"); }

// The fast profile (tests/goldens/deepseek_v4/logits/fast/): the same cases within a tolerance
// derived from the spread between equally valid fp32 accumulation orders of the same rounding
// points (reference/fast_spread.py; reference/README.md §Fast profile has the measurements): over
// the five cases and three other orders, max |Δlogit| 8.59 and a mean of the rows' max |Δ| of at
// most 2.60 (logits up to 16.6: the FP8 activation roundings amplify any change), both × 1.5.
// Measured with the fast kernels: every row of every case bit-identical to the golden.
constexpr testing::FastTolerance kFastTolerance{13.0, 3.9};
void check_fast(const std::string& name) { testing::check_fast_logits_case("deepseek_v4", name, kFastTolerance); }

TEST(Dsv4LogitsGoldenFast, FlashTinyPrefill131ThenDecode) { check_fast("flash_tiny_s1_n164_k131"); }
TEST(Dsv4LogitsGoldenFast, ProTinyPrefill120ThenDecodeAcross128) { check_fast("pro_tiny_s2_n150_k120"); }
TEST(Dsv4LogitsGoldenFast, FlashTinyDecodeFromPosition1) { check_fast("flash_tiny_s3_n40_k1"); }
TEST(Dsv4LogitsGoldenFast, FlashTiny300TokensPrefill131) { check_fast("flash_tiny_s4_n300_k131"); }
TEST(Dsv4LogitsGoldenFast, ProTiny300TokensDecodeFromPosition1) { check_fast("pro_tiny_s5_n300_k1"); }

}  // namespace
}  // namespace strata::dsv4
