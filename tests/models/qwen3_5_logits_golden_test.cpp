// Qwen3.5 end to end against the reference (tests/goldens/qwen3_5/logits/<case>/, written by
// reference/make_qwen3_5_logits_goldens.py from `strata make-model` checkpoints): dense and MoE,
// 150 tokens crossing the 64-token chunk and a 128-token block, prefilled from position 1, from
// the middle, or whole. Bit-exact: every row's hash of the float32 logits bytes.
#include "models/logits_golden.h"

namespace strata::qwen35 {
namespace {

void check_case(const std::string& name) { testing::check_logits_case("qwen3_5", name); }

TEST(Qwen35LogitsGolden, TinyDecodeFromPosition1) { check_case("tiny_s1_n150_k1"); }
TEST(Qwen35LogitsGolden, TinyPrefill75ThenDecodeAcross128) { check_case("tiny_s2_n150_k75"); }
TEST(Qwen35LogitsGolden, TinyPrefill150) { check_case("tiny_s3_n150_k150"); }
TEST(Qwen35LogitsGolden, MoeTinyDecodeFromPosition1) { check_case("moe_tiny_s4_n150_k1"); }
TEST(Qwen35LogitsGolden, MoeTinyPrefill75ThenDecodeAcross128) { check_case("moe_tiny_s5_n150_k75"); }
TEST(Qwen35LogitsGolden, MoeTinyPrefill150) { check_case("moe_tiny_s6_n150_k150"); }

// The fast profile (tests/goldens/qwen3_5/logits/fast/): the same cases within a tolerance derived
// from the spread between equally valid fp32 accumulation orders of the same rounding points
// (reference/fast_spread.py; reference/README.md §Fast profile has the measurements), × 1.5:
//   dense: max |Δlogit| 0.625 (bf16 logits up to 102: one ulp is 0.5), rows' max |Δ| mean <= 0.288;
//   MoE:   max |Δlogit| 0.742 (a routing flip; logits up to 5.8), rows' max |Δ| mean <= 0.0285.
// Measured with the fast kernels: every row of every case bit-identical to the golden.
constexpr testing::FastTolerance kFastDense{1.0, 0.45};
constexpr testing::FastTolerance kFastMoe{1.125, 0.045};
void check_fast(const std::string& name) {
  testing::check_fast_logits_case("qwen3_5", name, name.rfind("moe_", 0) == 0 ? kFastMoe : kFastDense);
}

TEST(Qwen35LogitsGoldenFast, TinyDecodeFromPosition1) { check_fast("tiny_s1_n150_k1"); }
TEST(Qwen35LogitsGoldenFast, TinyPrefill75ThenDecodeAcross128) { check_fast("tiny_s2_n150_k75"); }
TEST(Qwen35LogitsGoldenFast, TinyPrefill150) { check_fast("tiny_s3_n150_k150"); }
TEST(Qwen35LogitsGoldenFast, MoeTinyDecodeFromPosition1) { check_fast("moe_tiny_s4_n150_k1"); }
TEST(Qwen35LogitsGoldenFast, MoeTinyPrefill75ThenDecodeAcross128) { check_fast("moe_tiny_s5_n150_k75"); }
TEST(Qwen35LogitsGoldenFast, MoeTinyPrefill150) { check_fast("moe_tiny_s6_n150_k150"); }

}  // namespace
}  // namespace strata::qwen35
