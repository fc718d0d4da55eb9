// The DSA family end to end against the reference (tests/goldens/dsa/logits/<case>/, written by
// reference/make_dsa_logits_goldens.py from `strata make-model` checkpoints): DeepSeek-V3.2 and
// GLM-5 tiny presets, 150 and 300 tokens past index_topk = 64 (the indexer selects), prefilled
// from position 1, from the middle, or whole. Bit-exact: every row's hash of the float32 logits.
#include "models/logits_golden.h"

namespace strata::dsa {
namespace {

void check_case(const std::string& name) { testing::check_logits_case("dsa", name); }

TEST(DsaLogitsGolden, V32DecodeFromPosition1) { check_case("dsv32_tiny_s1_n150_k1"); }
TEST(DsaLogitsGolden, V32Prefill75ThenDecode) { check_case("dsv32_tiny_s2_n150_k75"); }
TEST(DsaLogitsGolden, V32Prefill150ThenDecodeTo300) { check_case("dsv32_tiny_s1_n300_k150"); }
TEST(DsaLogitsGolden, Glm5Prefill150) { check_case("glm5_tiny_s3_n150_k150"); }
TEST(DsaLogitsGolden, Glm5DecodeFromPosition1) { check_case("glm5_tiny_s4_n150_k1"); }
TEST(DsaLogitsGolden, Glm5Prefill75ThenDecodeTo300) { check_case("glm5_tiny_s3_n300_k75"); }

// The fast profile (tests/goldens/dsa/logits/fast/): the same cases within a tolerance derived
// from the spread between equally valid fp32 accumulation orders of the same rounding points
// (reference/fast_spread.py --arch dsa --rows 40: lanes8, fold_blocks, sequential), x 1.5:
//   DeepSeek-V3.2 (FP8 linears): max |Δlogit| 0.141, rows' max |Δ| mean <= 0.035;
//   GLM-5 (bf16 linears): max |Δlogit| 2.12 (a changed top-k selection or routing after an order
//   flips a bf16 rounding; logits up to 5.3), rows' max |Δ| mean <= 0.238.
// Measured with the fast kernels: every row of every case bit-identical to the golden.
constexpr testing::FastTolerance kFastV32{0.212, 0.053};
constexpr testing::FastTolerance kFastGlm5{3.2, 0.36};
void check_fast(const std::string& name) {
  testing::check_fast_logits_case("dsa", name, name.rfind("glm5_", 0) == 0 ? kFastGlm5 : kFastV32);
}

TEST(DsaLogitsGoldenFast, V32DecodeFromPosition1) { check_fast("dsv32_tiny_s1_n150_k1"); }
TEST(DsaLogitsGoldenFast, V32Prefill75ThenDecode) { check_fast("dsv32_tiny_s2_n150_k75"); }
TEST(DsaLogitsGoldenFast, V32Prefill150ThenDecodeTo300) { check_fast("dsv32_tiny_s1_n300_k150"); }
TEST(DsaLogitsGoldenFast, Glm5Prefill150) { check_fast("glm5_tiny_s3_n150_k150"); }
TEST(DsaLogitsGoldenFast, Glm5DecodeFromPosition1) { check_fast("glm5_tiny_s4_n150_k1"); }
TEST(DsaLogitsGoldenFast, Glm5Prefill75ThenDecodeTo300) { check_fast("glm5_tiny_s3_n300_k75"); }

}  // namespace
}  // namespace strata::dsa
