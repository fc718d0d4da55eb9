// The commands on Qwen3.5, end to end through the binary: the ledger of the published 0.8B config
// (the source document's figures), make-model of qwen3.5-tiny, inspect, the ledger with draft
// slots for speculative decoding, generate with
// and without speculation (the same ids: one decode loop, the engine's), chat in the
// checkpoint's own chat template, and bench at long context.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "checkpoint_without.h"
#include "run_command.h"

namespace strata {
namespace {
namespace fs = std::filesystem;
using test::run_strata;
using test::shell_quote;

struct TinyQwen {
  std::string dir = (fs::temp_directory_path() / ("strata_cli_qwen35_" + std::to_string(::getpid()))).string();
  TinyQwen() {
    auto r = run_strata("make-model --preset qwen3.5-tiny --seed 2 --out " + shell_quote(dir) + " --tokenizer " +
                        shell_quote(std::string(STRATA_SHARED_DIR) + "/tokenizers/qwen3"));
    EXPECT_EQ(r.code, 0) << r.err;
  }
  ~TinyQwen() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const TinyQwen& tiny() {
  static const TinyQwen h;
  return h;
}

TEST(Qwen35Cli, InspectAndLedgerWithDraftSlots) {
  auto r = run_strata("inspect --json --model " + shell_quote(tiny().dir));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model_type"], "qwen3_5_text");
  EXPECT_EQ(j["schedule"]["linear_layers"], 3);
  EXPECT_EQ(j["checkpoint"]["ok"], true);
  r = run_strata("ledger --json --context 1024 --model " + shell_quote(tiny().dir));
  ASSERT_EQ(r.code, 0) << r.err;
  auto plain = nlohmann::json::parse(r.out);
  r = run_strata("ledger --json --context 1024 --spec-tokens 3 --model " + shell_quote(tiny().dir));
  ASSERT_EQ(r.code, 0) << r.err;
  auto spec = nlohmann::json::parse(r.out);
  // 3 delta-net layers: fp32 state 4 x 64 x 64 + bf16 conv tail 3 x 512, three more copies each
  const int64_t live = 3 * (4 * 64 * 64 * 4 + 3 * 512 * 2);
  EXPECT_EQ(plain["fixed_bytes"].get<int64_t>(), live);
  EXPECT_EQ(spec["draft_slot_bytes"].get<int64_t>(), 3 * live);
  EXPECT_EQ(spec["fixed_bytes"].get<int64_t>(), 4 * live);
  EXPECT_EQ(plain["by_kind"]["linear_state"]["specs"], 3);
}

// new-generation-models.txt's ledger for Qwen3.5-0.8B: 12.0 KB per token, 19 MB fixed per
// request (18 layers x 16 x 128 x 128 fp32 + 18 x 6144 x 3 bf16), 1.52 GB at 128K.
TEST(Qwen35Cli, LedgerOfTheSourceDocument) {
  auto r = run_strata("ledger --json --config " + shell_quote(std::string(STRATA_SHARED_DIR) + "/models/qwen3.5-0.8b/config.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["bytes_per_token"].get<double>(), 12288.0);
  EXPECT_EQ(j["fixed_bytes"].get<int64_t>(), 18 * 16 * 128 * 128 * 4 + 18 * 6144 * 3 * 2);
  EXPECT_NEAR(double(j["fixed_bytes"].get<int64_t>()) / (1 << 20), 19.0, 0.5);
  ASSERT_EQ(j["contexts"].size(), 1u);  // 1M is past max_position_embeddings (262144)
  EXPECT_NEAR(j["contexts"][0]["bytes"].get<double>() / double(1ull << 30), 1.52, 0.005);
}

TEST(Qwen35Cli, SpeculativeGenerationPrintsTheSameIds) {
  const std::string base = "generate --model " + shell_quote(tiny().dir) + " --ids 5,6,7,8,9 --max-tokens 40 --print-ids";
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

TEST(Qwen35Cli, ChatUsesTheCheckpointsTemplate) {
  const std::string in = tiny().dir + "/chat_in.txt";
  std::ofstream(in) << "hello\nand again\n/exit\n";
  auto r = run_strata("chat --model " + shell_quote(tiny().dir) + " --max-tokens 4 --temperature 0 < " + shell_quote(in));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("[4 tokens"), std::string::npos) << r.err;
  const std::string msgs = tiny().dir + "/messages.json";
  std::ofstream(msgs) << R"([{"role":"user","content":"hi"}])";
  auto render = run_strata("render --model " + shell_quote(tiny().dir) + " --messages " + shell_quote(msgs));
  ASSERT_EQ(render.code, 0) << render.err;
  EXPECT_NE(render.out.find("<|im_start|>user\nhi<|im_end|>"), std::string::npos) << render.out;
}

TEST(Qwen35Cli, BenchAtLongContext) {
  auto r = run_strata("bench --skip-probes --json --prompt-tokens 8 --decode-tokens 2 --context 256,1024 --model " +
                      shell_quote(tiny().dir));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["long_context"].size(), 2u);
  EXPECT_GT(j["long_context"][1]["cache_bytes"].get<double>(), j["long_context"][0]["cache_bytes"].get<double>());
}

// A copy of the tiny checkpoint without its mtp.* tensors, as converted and pruned checkpoints
// are published: plain decoding gives the same ids, asking for speculation is a clear error.
TEST(Qwen35Cli, CheckpointWithoutMtpDecodesAndRefusesSpeculation) {
  const std::string dir = tiny().dir + "_no_mtp";
  fs::remove_all(dir);
  ASSERT_GT(test::copy_checkpoint_without(tiny().dir, dir, "mtp."), 0);
  const std::string args = " --ids 5,6,7,8,9 --max-tokens 12 --print-ids";
  auto plain = run_strata("generate --model " + shell_quote(dir) + args);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.err.find("no mtp.* tensors"), std::string::npos) << plain.err;
  EXPECT_EQ(plain.out, run_strata("generate --model " + shell_quote(tiny().dir) + args).out);
  auto spec = run_strata("generate --model " + shell_quote(dir) + args + " --spec-tokens 2");
  EXPECT_NE(spec.code, 0);
  EXPECT_NE(spec.err.find("MTP"), std::string::npos) << spec.err;
  auto serve = run_strata("serve --port 0 --speculative --model " + shell_quote(dir));
  EXPECT_NE(serve.code, 0);
  EXPECT_NE(serve.err.find("MTP"), std::string::npos) << serve.err;
  auto inspect = run_strata("inspect --model " + shell_quote(dir));
  EXPECT_EQ(inspect.code, 0) << inspect.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata
