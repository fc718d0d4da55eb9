// `strata inspect` and `strata make-model` end to end through the binary: the seed's totals,
// JSON output, and one-line errors with a non-zero exit for bad input.
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

const std::string kShared = STRATA_SHARED_DIR;

TEST(Inspect, ConfigsReproduceTheSeedTotals) {
  struct Case {
    const char* name;
    double total, active;
  } cases[] = {{"deepseek-v4-flash", 284e9, 13.8e9}, {"deepseek-v4-pro", 1573e9, 49.7e9}};
  for (auto& c : cases) {
    auto r = run_strata("inspect --json --config " + shell_quote(kShared + "/models/" + c.name + "/config.json"));
    ASSERT_EQ(r.code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_NEAR(j["parameters"]["total"].get<double>(), c.total, c.total * 0.01) << c.name;
    EXPECT_NEAR(j["parameters"]["active_per_token"].get<double>(), c.active, c.active * 0.01) << c.name;
  }
  auto r = run_strata("inspect --config " + shell_quote(kShared + "/models/deepseek-v4-flash/config.json"));
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("284.33B total, 13.80B active per token"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("21 CSA + 20 HCA + 2 window-only"), std::string::npos) << r.out;
}

TEST(Inspect, JsonDescribesTheSchedule) {
  auto r = run_strata("inspect --json --config " + shell_quote(kShared + "/models/deepseek-v4-pro/config.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schedule"]["csa_layers"], 30);
  EXPECT_EQ(j["schedule"]["hca_layers"], 31);
  EXPECT_EQ(j["schedule"]["layers"][0]["kind"], "HCA");
  EXPECT_EQ(j["schedule"]["layers"][0]["hash_routing"], true);
  EXPECT_EQ(j["schedule"]["layers"][61]["mtp"], true);
  EXPECT_EQ(j["schedule"]["layers"][61]["yarn"], false);
  EXPECT_EQ(j["schedule"]["layers"][2]["yarn"], true);
  EXPECT_GT(j["bytes"]["by_dtype"]["I8"].get<double>(), 0);
}

TEST(Inspect, BadInputIsOneLineAndNonZero) {
  const std::string dir = (fs::temp_directory_path() / ("strata_inspect_" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  std::ofstream(dir + "/config.json") << R"({"model_type": "mamba9"})";
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"inspect --config " + shell_quote(kShared + "/models/kimi-k3/config.json"), "unknown model_type 'kimi_k3'"},
      {"inspect --model " + shell_quote(dir), "unknown model_type 'mamba9' (supported: deepseek_v4, qwen3_5"},
      {"inspect --model /nonexistent/dir", "/nonexistent/dir"},
      {"inspect", "needs --model DIR, --config FILE or --preset NAME"},
      {"make-model --preset flash-huge --out " + shell_quote(dir + "/x"), "unknown preset 'flash-huge'"},
  };
  for (auto& c : cases) {
    auto r = run_strata(c.args);
    EXPECT_NE(r.code, 0) << c.args;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << " -> " << r.err;
    EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  fs::remove_all(dir);
}

TEST(Inspect, MadeModelPassesAndACorruptShardFails) {
  const std::string dir = (fs::temp_directory_path() / ("strata_mm_cli_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  auto r = run_strata("make-model --preset pro-tiny --seed 9 --out " + shell_quote(dir));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("checkpoint check passed"), std::string::npos);
  r = run_strata("inspect --json --model " + shell_quote(dir));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // make-model's config.json holds no key strata does not read
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["checkpoint"]["ok"].get<bool>());
  EXPECT_FALSE(j["checkpoint"].contains("ranks"));  // one process
  // --ranks 3: pro-tiny's experts in contiguous shards, each rank reading the shared tensors
  r = run_strata("inspect --json --ranks 3 --model " + shell_quote(dir));
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  const auto& ranks = j["checkpoint"]["ranks"];
  ASSERT_EQ(ranks.size(), 3u);
  int64_t experts = 0, next = 0;
  for (const auto& x : ranks) {
    EXPECT_EQ(x["first_expert"].get<int64_t>(), next);
    next += x["experts"].get<int64_t>();
    experts += x["experts"].get<int64_t>();
    EXPECT_LT(x["bytes"].get<uint64_t>(), j["checkpoint"]["bytes"].get<uint64_t>());
  }
  std::ifstream cfg(dir + "/config.json");
  EXPECT_EQ(experts, nlohmann::json::parse(cfg)["n_routed_experts"].get<int64_t>());
  EXPECT_GE(ranks[0]["experts"].get<int64_t>(), ranks[2]["experts"].get<int64_t>());
  r = run_strata("inspect --ranks 3 --model " + shell_quote(dir));
  EXPECT_NE(r.out.find("rank 2: routed experts"), std::string::npos) << r.out;
  r = run_strata("inspect --ranks 0 --model " + shell_quote(dir));
  EXPECT_NE(r.code, 0);
  // truncate the last shard: opening names the file and the tensor that no longer fits
  std::string last;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors" && e.path().string() > last) last = e.path().string();
  fs::resize_file(last, fs::file_size(last) - 100);
  r = run_strata("inspect --model " + shell_quote(dir));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find(last), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  // remove a shard: the index names it
  fs::remove(last);
  r = run_strata("inspect --model " + shell_quote(dir));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// The optional key's entry in `inspect --json`'s optional_config_keys, null if not listed.
nlohmann::json optional_key(const nlohmann::json& j, const std::string& key) {
  for (const auto& k : j["optional_config_keys"])
    if (k["key"] == key) return k;
  return nullptr;
}

TEST(Inspect, ListsOptionalConfigKeysWithValueAndSource) {
  const std::string flash = shell_quote(kShared + "/models/deepseek-v4-flash/config.json");
  auto r = run_strata("inspect --json --config " + flash);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(optional_key(j, "swiglu_limit"),
            (nlohmann::json{{"key", "swiglu_limit"}, {"value", 10.0}, {"source", "file"}}));
  // Flash's config omits expert_dtype (its experts are FP4); Pro's names it.
  EXPECT_EQ(optional_key(j, "expert_dtype"),
            (nlohmann::json{{"key", "expert_dtype"}, {"value", "fp4"}, {"source", "default"}}));
  EXPECT_TRUE(optional_key(j, "hidden_size").is_null());  // required keys are not optional ones
  r = run_strata("inspect --json --config " + shell_quote(kShared + "/models/deepseek-v4-pro/config.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(optional_key(nlohmann::json::parse(r.out), "expert_dtype")["source"], "file");
  r = run_strata("inspect --config " + flash);
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t at = r.out.find("optional config keys:\n");
  ASSERT_NE(at, std::string::npos) << r.out;
  const size_t line = r.out.find("  expert_dtype ", at);
  ASSERT_NE(line, std::string::npos) << r.out;
  const std::string text = r.out.substr(line, r.out.find('\n', line) - line);
  EXPECT_NE(text.find("\"fp4\""), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 7), "default") << text;
}

TEST(Inspect, UnknownConfigKeysWarnOnStderrAndAMisspeltSettingFails) {
  const std::string dir = (fs::temp_directory_path() / ("strata_inspect_keys_" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  auto j = nlohmann::json::parse(std::ifstream(kShared + "/models/deepseek-v4-flash/config.json"));
  j["foo_bar_baz"] = 1;
  std::ofstream(dir + "/config.json") << j.dump(2);
  auto r = run_strata("inspect --json --config " + shell_quote(dir + "/config.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out).empty());  // stdout stays one JSON object
  EXPECT_EQ(r.err, "strata: warning: " + dir + "/config.json: unknown keys ignored: 'foo_bar_baz'\n");
  j.erase("foo_bar_baz");
  j["rope_scalling"] = j["rope_scaling"];
  j.erase("rope_scaling");
  std::ofstream(dir + "/config.json") << j.dump(2);
  r = run_strata("inspect --config " + shell_quote(dir + "/config.json"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("unknown key 'rope_scalling' (did you mean 'rope_scaling'?)"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST(Ledger, PrintsTheBooksFiguresAndRejectsBadInput) {
  auto r = run_strata("ledger --json --context 131072 1048576 --config " +
                      shell_quote(kShared + "/models/deepseek-v4-flash/config.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["bytes_per_token"].get<double>(), 3850.25);  // FP8 index keys by default
  EXPECT_EQ(j["fixed_bytes"].get<int64_t>(), 15420416);
  EXPECT_EQ(j["by_kind"]["indexer_keys"]["format"], "128 e4m3 + 4 e8m0");
  EXPECT_NEAR(j["contexts"][0]["bytes"].get<double>() / double(1ull << 30), 0.48, 0.005);  // the book: 0.48 GB at 128K
  EXPECT_NEAR(j["contexts"][1]["bytes"].get<double>() / double(1ull << 30), 3.77, 0.005);  // 3.77 GB at 1M
  EXPECT_NEAR(j["contexts"][1]["paper_9_2_bytes"].get<double>() / 1e9, 3.62, 0.01);   // §9.2's figure
  r = run_strata("ledger --json --indexer-cache fp4 --config " + shell_quote(kShared + "/models/deepseek-v4-flash/config.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.out)["bytes_per_token"].get<double>(), 3514.25);
  r = run_strata("ledger --context 4096 --memory 24G --config " + shell_quote(kShared + "/models/deepseek-v4-pro/config.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("fit in 24G"), std::string::npos) << r.out;
  const std::pair<std::string, std::string> bad[] = {
      {"ledger --context 99999999 --config " + shell_quote(kShared + "/models/deepseek-v4-pro/config.json"),
       "exceeds max_position_embeddings"},
      {"ledger --context 10", "--model DIR, --config FILE or --preset NAME"},
      {"ledger --preset deepseek-v9", "unknown preset 'deepseek-v9'"},
      {"ledger --memory 12Q --config " + shell_quote(kShared + "/models/deepseek-v4-pro/config.json"), "unknown unit"},
  };
  for (auto& [args, msg] : bad) {
    r = run_strata(args);
    EXPECT_NE(r.code, 0) << args;
    EXPECT_NE(r.err.find(msg), std::string::npos) << r.err;
  }
}

TEST(Ledger, DeepSeekV32RowOfTheSourceDocumentAndPresets) {
  // new-generation-models: "DeepSeek-V3.2: 46.9 KB per token, 0 MB fixed; 128K 5.87 GB; 1M not supported".
  auto r = run_strata("ledger --config " + shell_quote(kShared + "/models/deepseek-v3.2/config.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("48068.0 B per token (46.94 KB), 0.00 MB fixed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("512 e4m3 + 4 fp32 + 64 bf16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("128 e4m3 + 1 fp32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5.868 GiB per request"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("context   1048576: not supported (max_position_embeddings 163840)"), std::string::npos) << r.out;
  // The same figures from the preset; GLM-5 from its preset (78 layers).
  r = run_strata("ledger --json --preset deepseek-v3.2 --preset glm5");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j[0]["source"], "preset:deepseek-v3.2");
  EXPECT_EQ(j[0]["bytes_per_token"], 48068.0);
  EXPECT_EQ(j[0]["unsupported_contexts"][0], 1048576);
  EXPECT_EQ(j[1]["bytes_per_token"], 78 * 788.0);
  r = run_strata("inspect --preset glm5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("glm_moe_dsa"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("interleaved RoPE"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace strata
