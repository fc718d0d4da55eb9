// The commands on the synthetic hybrid architecture, end to end through the binary: make-model
// of its preset, inspect, the ledger with draft slots for speculative decoding, generate with
// and without speculation (the same ids: one decode loop, the engine's), chat in the
// checkpoint's own chat template, and bench at long context.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace strata {
namespace {
namespace fs = std::filesystem;
using test::run_strata;
using test::shell_quote;

struct Hybrid {
  std::string dir = (fs::temp_directory_path() / ("strata_cli_hybrid_" + std::to_string(::getpid()))).string();
  Hybrid() {
    auto r = run_strata("make-model --preset hybrid-tiny --seed 2 --out " + shell_quote(dir) + " --tokenizer " +
                        shell_quote(std::string(STRATA_SHARED_DIR) + "/tokenizers/qwen3"));
    EXPECT_EQ(r.code, 0) << r.err;
  }
  ~Hybrid() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const Hybrid& hybrid() {
  static const Hybrid h;
  return h;
}

TEST(HybridCli, InspectAndLedgerWithDraftSlots) {
  auto r = run_strata("inspect --json --model " + shell_quote(hybrid().dir));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model_type"], "strata_hybrid");
  EXPECT_EQ(j["schedule"]["linear_layers"], 2);
  EXPECT_EQ(j["checkpoint"]["ok"], true);
  r = run_strata("ledger --json --context 1024 --model " + shell_quote(hybrid().dir));
  ASSERT_EQ(r.code, 0) << r.err;
  auto plain = nlohmann::json::parse(r.out);
  r = run_strata("ledger --json --context 1024 --spec-tokens 3 --model " + shell_quote(hybrid().dir));
  ASSERT_EQ(r.code, 0) << r.err;
  auto spec = nlohmann::json::parse(r.out);
  // 2 delta-net layers: fp32 state 4 x 16 x 16 + bf16 conv tail 3 x 128, three more copies each
  const int64_t live = 2 * (4 * 16 * 16 * 4 + 3 * 128 * 2);
  EXPECT_EQ(plain["fixed_bytes"].get<int64_t>(), live);
  EXPECT_EQ(spec["draft_slot_bytes"].get<int64_t>(), 3 * live);
  EXPECT_EQ(spec["fixed_bytes"].get<int64_t>(), 4 * live);
  EXPECT_EQ(plain["by_kind"]["linear_state"]["specs"], 2);
}

TEST(HybridCli, SpeculativeGenerationPrintsTheSameIds) {
  const std::string base = "generate --model " + shell_quote(hybrid().dir) + " --ids 5,6,7,8,9 --max-tokens 40 --print-ids";
  auto plain = run_strata(base);
  ASSERT_EQ(plain.code, 0) << plain.err;
  auto spec = run_strata(base + " --spec-tokens 3");
  ASSERT_EQ(spec.code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_NE(spec.err.find("speculative:"), std::string::npos) << spec.err;
  // sampled, with a seed: the same again
  auto a = run_strata(base + " --temperature 0.8 --seed 4");
  auto b = run_strata(base + " --temperature 0.8 --seed 4 --spec-tokens 2");
  ASSERT_EQ(a.code, 0);
  EXPECT_EQ(a.out, b.out);
}

TEST(HybridCli, ChatUsesTheCheckpointsTemplate) {
  const std::string in = hybrid().dir + "/chat_in.txt";
  std::ofstream(in) << "hello\nand again\n/exit\n";
  auto r = run_strata("chat --model " + shell_quote(hybrid().dir) + " --max-tokens 4 --temperature 0 < " + shell_quote(in));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("[4 tokens"), std::string::npos) << r.err;
  const std::string msgs = hybrid().dir + "/messages.json";
  std::ofstream(msgs) << R"([{"role":"user","content":"hi"}])";
  auto render = run_strata("render --model " + shell_quote(hybrid().dir) + " --messages " + shell_quote(msgs));
  ASSERT_EQ(render.code, 0) << render.err;
  EXPECT_NE(render.out.find("<|im_start|>user\nhi<|im_end|>"), std::string::npos) << render.out;
}

TEST(HybridCli, BenchAtLongContext) {
  auto r = run_strata("bench --skip-probes --json --prompt-tokens 8 --decode-tokens 2 --context 256,1024 --model " +
                      shell_quote(hybrid().dir));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["long_context"].size(), 2u);
  EXPECT_GT(j["long_context"][1]["cache_bytes"].get<double>(), j["long_context"][0]["cache_bytes"].get<double>());
}

}  // namespace
}  // namespace strata
