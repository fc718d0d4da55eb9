// Gemma 4 end to end against the reference (tests/goldens/gemma4/logits/<case>/, written by
// reference/make_gemma4_logits_goldens.py from `strata make-model` checkpoints): K and V
// separate, K=V, PLE with KV-shared layers, MoE; 150 tokens crossing the 32-token sliding
// window and a 128-token block, prefilled from position 1, from the middle, or whole.
// Bit-exact: every row's hash of the float32 logits bytes.
#include "models/logits_golden.h"

namespace strata::gemma4 {
namespace {

void check_case(const std::string& name) { testing::check_logits_case("gemma4", name); }

TEST(Gemma4LogitsGolden, TinyDecodeFromPosition1) { check_case("tiny_s1_n150_k1"); }
TEST(Gemma4LogitsGolden, TinyPrefill75ThenDecode) { check_case("tiny_s2_n150_k75"); }
TEST(Gemma4LogitsGolden, TinyPrefill150) { check_case("tiny_s3_n150_k150"); }
TEST(Gemma4LogitsGolden, KvTinyDecodeFromPosition1) { check_case("kv_tiny_s4_n150_k1"); }
TEST(Gemma4LogitsGolden, KvTinyPrefill75ThenDecode) { check_case("kv_tiny_s5_n150_k75"); }
TEST(Gemma4LogitsGolden, KvTinyPrefill150) { check_case("kv_tiny_s6_n150_k150"); }
TEST(Gemma4LogitsGolden, ETinyDecodeFromPosition1) { check_case("e_tiny_s7_n150_k1"); }
TEST(Gemma4LogitsGolden, ETinyPrefill75ThenDecode) { check_case("e_tiny_s8_n150_k75"); }
TEST(Gemma4LogitsGolden, MoeTinyDecodeFromPosition1) { check_case("moe_tiny_s9_n150_k1"); }
TEST(Gemma4LogitsGolden, MoeTinyPrefill75ThenDecode) { check_case("moe_tiny_s10_n150_k75"); }

// The fast profile (tests/goldens/gemma4/logits/fast/): the same cases within a tolerance derived
// from the spread between equally valid fp32 accumulation orders of the same rounding points
// (reference/fast_spread.py --arch gemma4: lanes8, fold_blocks, sequential against the defined
// order; reference/README.md §Gemma 4 has the measurements), × 1.5:
//   dense (tiny, kv-tiny, e-tiny): max |Δlogit| 2.61 (logits up to 9.9), rows' max |Δ| mean <= 1.72;
//   MoE: max |Δlogit| 6.66 (routing flips; logits up to 10.2), rows' max |Δ| mean <= 1.96.
// Measured with the fast kernels: every row of every case bit-identical to the golden.
constexpr testing::FastTolerance kFastDense{3.92, 2.59};
constexpr testing::FastTolerance kFastMoe{10.0, 2.95};
void check_fast(const std::string& name) {
  testing::check_fast_logits_case("gemma4", name, name.rfind("moe_", 0) == 0 ? kFastMoe : kFastDense);
}

TEST(Gemma4LogitsGoldenFast, TinyDecodeFromPosition1) { check_fast("tiny_s1_n150_k1"); }
TEST(Gemma4LogitsGoldenFast, TinyPrefill75ThenDecode) { check_fast("tiny_s2_n150_k75"); }
TEST(Gemma4LogitsGoldenFast, TinyPrefill150) { check_fast("tiny_s3_n150_k150"); }
TEST(Gemma4LogitsGoldenFast, KvTinyDecodeFromPosition1) { check_fast("kv_tiny_s4_n150_k1"); }
TEST(Gemma4LogitsGoldenFast, KvTinyPrefill75ThenDecode) { check_fast("kv_tiny_s5_n150_k75"); }
TEST(Gemma4LogitsGoldenFast, KvTinyPrefill150) { check_fast("kv_tiny_s6_n150_k150"); }
TEST(Gemma4LogitsGoldenFast, ETinyDecodeFromPosition1) { check_fast("e_tiny_s7_n150_k1"); }
TEST(Gemma4LogitsGoldenFast, ETinyPrefill75ThenDecode) { check_fast("e_tiny_s8_n150_k75"); }
TEST(Gemma4LogitsGoldenFast, MoeTinyDecodeFromPosition1) { check_fast("moe_tiny_s9_n150_k1"); }
TEST(Gemma4LogitsGoldenFast, MoeTinyPrefill75ThenDecode) { check_fast("moe_tiny_s10_n150_k75"); }

}  // namespace
}  // namespace strata::gemma4
